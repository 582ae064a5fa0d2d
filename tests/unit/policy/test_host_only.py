"""Guests without a guest agent: managed from host-side signals alone."""

import dataclasses
from unittest import mock

import testtools

from tests.unit import factory
from watcher_cams.policy import cams
from watcher_cams.policy import flat_search
from watcher_cams.policy import given_back
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import host_only
from watcher_cams.policy import margin
from watcher_cams.policy import mrc
from watcher_cams.policy import report
from watcher_cams.policy import rest_hold
from watcher_cams.policy import utility
from watcher_cams.policy import wide_probes

CFG = guards.GuardConfig()


def agentless(n, actual_mb=2048, used_mb=256, read_mb_s=1.0, cache_mb=None,
              seen=(), **kw):
    """A host-only guest: its cache one inactive list, no refaults.

    ``seen``: (size MiB, disk MiB/s, age s) measurements in its state.
    """
    cache = actual_mb - used_mb - 64 if cache_mb is None else cache_mb
    g = factory.guest(n, actual_mb=actual_mb, used_mb=used_mb, active_mb=0,
                      inactive_mb=cache, read_mb_s=read_mb_s, **kw)
    now = g.sample.timestamp
    state = {utility.STATE_KEY: {'seen': [
        [size, 0.0, 64.0, now - age, disk, 3.0]
        for size, disk, age in seen]}} if seen else {}
    return dataclasses.replace(g, host_only=True, policy_state=state)


def grown_by_a_probe(n):
    """A guest grown to 3,072 MiB two minutes ago, its cache at 256."""
    grown = agentless(n, actual_mb=3072, read_mb_s=2.0, cache_mb=256)
    grown.policy_state[utility.STATE_KEY] = {
        'last_resize': [grown.sample.timestamp - 120, 1]}
    return grown


def filling_by(guest, growth_mb):
    """``guest`` with its cache ``growth_mb`` smaller a window ago."""
    before = guest.previous
    return dataclasses.replace(guest, previous=dataclasses.replace(
        before, inactive_file_kb=before.inactive_file_kb - growth_mb * 1024,
        cached_kb=before.cached_kb - growth_mb * 1024))


def deltas(*guests):
    plan = utility.plan(factory.host(guests), CFG)
    return {m.instance: m.delta_mb for m in plan.moves}, plan


class TestHostOnlyGuests(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Worth 1.7 MiB/s per GiB by its counters.
        self.taker = factory.guest(1, read_mb_s=2.0,
                                   refault_s=factory.pages_s(2.0),
                                   activate_s=factory.pages_s(1.5),
                                   read_since_boot_mb=factory.READ_FAR_MB)

    def test_a_cache_never_measured_is_not_given(self):
        donor = agentless(2)
        self.assertEqual(host_only.UNKNOWN,
                         utility.value_curve(donor, CFG).loss_at(0, 64))
        moved, _ = deltas(self.taker, donor)
        self.assertEqual({}, moved)

    def test_free_memory_is_given(self):
        # 384 MiB its cache never filled: all but the margin may go.
        donor = agentless(2, cache_mb=2048 - 256 - 384, read_mb_s=0.0)
        moved, _ = deltas(self.taker, donor)
        self.assertEqual(-(384 - CFG.floor_margin_mb), moved[donor.uuid])

    def test_an_idle_guest_gives_all_but_what_it_uses(self):
        # It read 1 MiB/s at this size and now reads nothing.
        donor = agentless(2, read_mb_s=0.0, seen=[(2048, 1.0, 120)])
        moved, _ = deltas(self.taker, donor)
        # Its cache goes, as far as the taker's active list is worth it.
        active = self.taker.sample.active_file_mb
        self.assertEqual(-active, moved[donor.uuid])
        self.assertLess(2048 - active, 2048 - 256 - CFG.floor_margin_mb)

    def test_a_reader_never_measured_larger_is_probed_one_granule(self):
        # Both read with full caches: nothing is known of either curve.
        a, b = agentless(1, read_mb_s=3.0), agentless(2, read_mb_s=1.0)
        moved, plan = deltas(a, b)
        self.assertEqual({a.uuid: 64, b.uuid: -64}, moved)
        reason = plan.moves[0].reason
        self.assertIn('utility (probe)', reason)
        self.assertIn('costs an estimated', reason)
        # A guest that reads (next to) nothing is not explored, nor given
        # from: its data may fit, a scan's too, which one step below its
        # cache reads all it scans again.
        fits = agentless(1, read_mb_s=0.05)
        self.assertEqual(host_only.UNKNOWN, utility.value_curve(
            fits, CFG).probe_loss_at(0, 64))
        moved, _ = deltas(fits, b)
        self.assertEqual({}, moved)
        # Unless its CPUs idle too: it reads nothing of its cache either,
        # and gives (a step of its cache, at no loss: donation.step_mb).
        idle = dataclasses.replace(agentless(1, read_mb_s=0.0), host_io=(
            host_io.HostIo(window_s=60.0, start_mb=2048, end_mb=2048,
                           read_mb_s=0.0, read_req_s=0.0, cpu_s=0.001)))
        moved, _ = deltas(idle, b)
        self.assertGreaterEqual(moved[b.uuid], 64)
        self.assertEqual({idle.uuid: -moved[b.uuid]}, {
            u: mb for u, mb in moved.items() if u != b.uuid})

    def test_a_probe_that_did_not_pay_is_taken_back(self):
        # A was probed 64 MiB smaller and reads 0.5 MiB/s more; B, 64 MiB
        # larger, reads no less.
        a = agentless(1, actual_mb=1984, read_mb_s=1.5,
                      seen=[(2048, 1.0, 120)])
        b = agentless(2, actual_mb=2112, read_mb_s=3.0,
                      seen=[(2048, 3.0, 120)])
        moved, plan = deltas(a, b)
        self.assertEqual({a.uuid: 64, b.uuid: -64}, moved)
        self.assertIn('host-measured', plan.moves[0].reason)

    def test_probes_grow_while_the_reads_keep_falling(self):
        # A's last 64 MiB saved 0.5 MiB/s; B lost 0.02 MiB/s for its 64.
        a = agentless(1, actual_mb=2112, read_mb_s=1.5,
                      seen=[(2048, 2.0, 120)])
        b = agentless(2, actual_mb=1984, read_mb_s=0.52,
                      seen=[(2048, 0.5, 120)])
        moved, plan = deltas(a, b)
        self.assertEqual({a.uuid: 128, b.uuid: -128}, moved)
        self.assertIn('utility (probe)', plan.moves[0].reason)

    def test_memory_nobody_uses_goes_to_a_reader_whose_probe_was_flat(self):
        # A's 64 MiB probe saved nothing it could measure: a reader over
        # far more data than it caches, or a scan whose cliff lies further.
        flat = agentless(1, read_mb_s=3.0, seen=[(1984, 3.0, 120)])
        # B's cache never filled 1,536 MiB, and C read as much 1,024 MiB
        # smaller: the search goes past A's largest size first, as far
        # again as the span it read flat over (at least WIDE_GRANULES).
        empty = agentless(2, read_mb_s=0.0, cache_mb=256)
        wide = agentless(2, read_mb_s=2.0, seen=[(1024, 2.0, 300)])
        for donor in (empty, wide):
            moved, plan = deltas(flat, donor)
            self.assertEqual({flat.uuid: 256, donor.uuid: -256}, moved)
            self.assertIn('past every size', plan.moves[0].reason)
        # A neighbour with a guest agent gives as its counters price it (a
        # host may run guests with and without one side by side).
        with_agent = factory.guest(2, read_mb_s=0.5,
                                   refault_s=factory.pages_s(0.1),
                                   activate_s=factory.pages_s(0.05))
        moved, plan = deltas(flat, with_agent)
        self.assertGreater(moved.get(flat.uuid, 0), 0)
        # Where no search step finds memory a curve prices (D was grown
        # and still fills what it was given), the wide probe: all that
        # nobody was seen to use, in one step, as far as the cliff may lie.
        grown = grown_by_a_probe(2)
        moved, plan = deltas(flat, grown)
        # (As far as A may grow: 2,048 MiB of D's 2,432.)
        given = flat.max_mb - flat.actual_mb
        self.assertLess(given, 3072 - 256 - 256 - CFG.floor_margin_mb)
        self.assertEqual({flat.uuid: given, grown.uuid: -given}, moved)
        self.assertIn('nobody was seen to use', plan.moves[0].reason)

    def test_no_wide_probe_from_memory_someone_may_use(self):
        flat = agentless(1, read_mb_s=3.0, seen=[(1984, 3.0, 120)])
        donors = (
            # Never measured smaller: unknown.
            agentless(2, read_mb_s=1.0),
            # It read less when smaller: another workload then.
            agentless(2, read_mb_s=2.0, seen=[(1024, 1.5, 300)]))
        for donor in donors:
            moved, plan = deltas(flat, donor)
            self.assertLessEqual(moved.get(flat.uuid, 0), 64)
            self.assertNotIn('nobody', str(plan.moves))
        # Nor toward a guest measured larger (it was there), or one whose
        # reads fell by the probe's step (probes follow that).
        empty = agentless(2, read_mb_s=0.0, cache_mb=256)
        for taker in (agentless(1, read_mb_s=3.0, seen=[(1984, 3.0, 120),
                                                        (2560, 3.0, 300)]),
                      agentless(1, read_mb_s=3.0, seen=[(1984, 3.5, 120)])):
            moved, plan = deltas(taker, empty)
            self.assertNotIn('nobody', str(plan.moves))

    def test_an_idle_guests_cache_goes_to_a_search_not_a_wide_probe(self):
        # B read 1 MiB/s at its size and stopped (never seen back from a
        # rest: its cache costs nothing now). A's search takes a step of
        # it, measured before the next; a wide probe would have taken all
        # of it at once (it keeps it for B's return).
        flat = agentless(1, read_mb_s=3.0, seen=[(1984, 3.0, 120)])
        idle = agentless(2, read_mb_s=0.0, seen=[(2048, 1.0, 120)])
        self.assertIsNotNone(utility.value_curve(idle, CFG).idle_since)
        moved, plan = deltas(flat, idle)
        step = wide_probes.WIDE_GRANULES * 64
        self.assertEqual({flat.uuid: step, idle.uuid: -step}, moved)
        self.assertIn('past every size', plan.moves[0].reason)
        with mock.patch.object(flat_search, 'search', return_value=None):
            moved, plan = deltas(flat, idle)
        self.assertNotIn('nobody', str(plan.moves))

    def test_a_donor_that_gave_flat_gives_as_much_again(self):
        flat = agentless(1, read_mb_s=3.0, seen=[(1984, 3.0, 120)])
        # It gave 256 MiB and reads as much as it did then (within the
        # noise): 256 MiB more, in one step, doubling its flat span.
        donor = agentless(2, actual_mb=1792, read_mb_s=1.02,
                          seen=[(2048, 1.0, 300)])
        moved, plan = deltas(flat, donor)
        self.assertEqual({flat.uuid: 256, donor.uuid: -256}, moved)
        self.assertIn('gave as much of without reading more',
                      plan.moves[0].reason)

    def test_no_doubling_from_one_granule_or_a_rise(self):
        flat = agentless(1, read_mb_s=3.0, seen=[(1984, 3.0, 120)])
        # Four guests that each gave one granule: what it changes hides
        # in the noise of their reads.
        granules = [agentless(n, actual_mb=1984, read_mb_s=1.0,
                              seen=[(2048, 1.0, 300)]) for n in range(2, 6)]
        # One that reads more since it gave 256 MiB.
        rose = [agentless(2, actual_mb=1792, read_mb_s=1.5,
                          seen=[(2048, 1.0, 300)])]
        for donors in (granules, rose):
            moved, plan = deltas(flat, *donors)
            self.assertLessEqual(moved.get(flat.uuid, 0), 64)
            self.assertNotIn('gave as much', str(plan.moves))

    def test_a_search_goes_past_every_size_measured_flat(self):
        # Measured reading as much from 1,536 to 2,304 MiB: a stream, or a
        # scan whose cliff lies past 2,304. The step goes as far past it
        # again (768 MiB), from memory nobody uses; where its donor has
        # less (384 MiB), that: a step short of the target still measures
        # the sizes it reaches (a scan a granule or two short fits).
        flat = agentless(1, read_mb_s=3.0, seen=[(1536, 3.0, 300),
                                                 (2304, 3.0, 120)])
        for size_mb, given in ((3072, 1024), (1024, 384)):
            donor = agentless(2, actual_mb=size_mb, read_mb_s=0.0,
                              cache_mb=256)
            moved, plan = deltas(flat, donor)
            self.assertEqual({flat.uuid: given, donor.uuid: -given}, moved)
            self.assertIn('past every size', plan.moves[0].reason)
        # Not from a guest grown by a probe that still fills what it was
        # given: no window measured that step yet.
        grown = grown_by_a_probe(2)
        moved, plan = deltas(flat, grown)
        self.assertNotIn('past every size', str(plan.moves))

    def test_a_search_goes_before_a_probe_takes_its_span(self):
        # A read as much from 1,536 to 2,304 MiB; B's last 64 MiB saved
        # 0.5 MiB/s. A probe toward B would take A's span, priced at
        # nothing, before A's search went on; C has memory nobody uses.
        a = agentless(1, actual_mb=2304, read_mb_s=6.0,
                      seen=[(1536, 6.0, 300)])
        b = agentless(2, read_mb_s=2.0, seen=[(1984, 2.5, 120)])
        c = agentless(3, actual_mb=1536, read_mb_s=0.0, cache_mb=256)
        moved, plan = deltas(a, b, c)
        self.assertEqual({a.uuid: 768, c.uuid: -768}, moved)
        self.assertIn('past every size', plan.moves[0].reason)
        # Without C, the probe.
        moved, plan = deltas(a, b)
        self.assertEqual({b.uuid: 128, a.uuid: -128}, moved)

    def test_an_idle_guests_unused_memory_goes_to_a_probe(self):
        # B never read: its cache did not grow over the window, and what
        # it left unused no read needs (random host 370 without agents:
        # 1.4 GiB of it sat beside a 2.6 GiB scan for two hours).
        a = agentless(1, read_mb_s=3.0)
        idle = agentless(2, read_mb_s=0.0, cache_mb=256)
        curve = utility.value_curve(idle, CFG)
        self.assertTrue(curve.filling)
        self.assertEqual(curve.free_mb, curve.unused_mb)
        self.assert_unused_goes_to_a_probe(a, idle, curve)

    def assert_unused_goes_to_a_probe(self, taker, donor, curve):
        moved, plan = deltas(taker, donor)
        self.assertEqual({taker.uuid: curve.unused_mb,
                          donor.uuid: -curve.unused_mb}, moved)
        self.assertIn('utility (probe)', plan.moves[0].reason)

    def test_what_a_slow_fill_will_not_reach_soon_goes_to_a_probe(self):
        # B's cache grew 12 MiB over the window (0.2 MiB/s read) with 704
        # MiB free past the margin: ten more such windows fill 120 of it,
        # and the rest, in whole granules, no read needs for now (wide
        # host 89 without agents: 1.1 GiB sat beside a scan that fits).
        a = agentless(1, read_mb_s=3.0)
        slow = filling_by(agentless(2, read_mb_s=0.2, cache_mb=1024), 12)
        curve = utility.value_curve(slow, CFG)
        self.assertTrue(curve.filling)
        spare = 2048 - 256 - 1024 - CFG.floor_margin_mb
        unused = spare - host_only.UNUSED_HORIZON_WINDOWS * 12
        self.assertEqual(unused - unused % 64, curve.unused_mb)
        self.assertGreater(curve.unused_mb, 0)
        self.assert_unused_goes_to_a_probe(a, slow, curve)

    def test_a_cache_that_fills_its_free_memory_soon_lends_none(self):
        # 100 MiB a window: ten windows fill more than it has free.
        a = agentless(1, read_mb_s=3.0)
        fast = filling_by(agentless(2, read_mb_s=2.0, cache_mb=1024), 100)
        self.assertEqual(0.0, utility.value_curve(fast, CFG).unused_mb)
        moved, _ = deltas(a, fast)
        self.assertEqual({}, moved)

    def test_a_search_takes_only_cheap_measured_memory(self):
        flat = agentless(1, read_mb_s=6.0, seen=[(1536, 6.0, 300),
                                                 (2304, 6.0, 120)])
        # Measured 1,024 MiB smaller reading 0.2 MiB/s more: 1,024 MiB
        # of it cost 0.2 MiB/s, within a twentieth of the 6 MiB/s the
        # search may save. 0.5 MiB/s more is not: the step stops short of
        # what that measurement prices (mrc.EMPIRICAL_REACH_MB above it).
        reach = 1024 - mrc.EMPIRICAL_REACH_MB
        for extra, given in ((0.2, 1024), (0.5, reach - 64)):
            priced = agentless(2, actual_mb=3072, read_mb_s=1.0,
                               seen=[(2048, 1.0 + extra, 300)])
            with_max = dataclasses.replace(priced, max_mb=3072)
            moved, _ = deltas(flat, with_max)
            self.assertEqual(given, moved.get(flat.uuid, 0))
        # Nor what only an estimate prices (a guest never measured
        # smaller), nor what a size that read less prices at nothing (a
        # workload since changed).
        for seen in ((), [(2048, 0.5, 300)]):
            donor = dataclasses.replace(
                agentless(2, actual_mb=3072, read_mb_s=1.0, seen=seen),
                max_mb=3072)
            moved, plan = deltas(flat, donor)
            self.assertNotIn('past every size', str(plan.moves))

    def test_the_policies_that_need_counters_leave_them_alone(self):
        donor = agentless(2, read_mb_s=0.0, cache_mb=100)
        host = factory.host([self.taker, donor])
        for plan in (cams.plan(host, CFG), margin.plan(host, CFG)):
            self.assertNotIn(donor.uuid, [m.instance for m in plan.moves])


class TestGivenUnderAnotherWorkload(testtools.TestCase):
    """Memory a guest gave under a workload since replaced comes back."""

    # Shrunk from 1,024 MiB by steps that measured nothing (a reader of
    # far more data than it caches), it now reads six times as much.
    OLD = [(1024, 0.8, 900), (832, 0.8, 600), (640, 0.8, 300)]

    def shrunk(self, read_mb_s=5.0, **kw):
        return agentless(1, actual_mb=640, read_mb_s=read_mb_s,
                         seen=self.OLD, **kw)

    def test_in_one_step(self):
        # The donor read as much 512 MiB smaller: its memory is measured
        # to cost nothing, but is not free memory (no wider step).
        donor = agentless(2, read_mb_s=1.0, seen=[(1536, 1.0, 300)])
        moved, plan = deltas(self.shrunk(), donor)
        self.assertEqual({self.shrunk().uuid: 384, donor.uuid: -384}, moved)
        self.assertIn('utility (probe)', plan.moves[0].reason)
        state = plan.policy_state[self.shrunk().uuid][utility.STATE_KEY]
        self.assertEqual([1024, 640], state[given_back.RESTORE_KEY])

    def test_when_it_reads_less_than_before_too(self):
        # A stream gave its memory; a hot/cold reader took its place and
        # reads less, but needs its hot set back (phase-change without
        # agents: probes of 64-512 MiB took 40 minutes).
        old = [(1024, 5.0, 900), (832, 5.0, 600)]
        guest = agentless(1, actual_mb=640, read_mb_s=2.0, seen=old)
        self.assertEqual(1024, utility.value_curve(guest, CFG).restore_mb)
        # Within the noise of what it read: the same workload.
        guest = agentless(1, actual_mb=640, read_mb_s=4.8, seen=old)
        self.assertIsNone(utility.value_curve(guest, CFG).restore_mb)

    def test_not_while_it_reads_as_before_nor_once_idle(self):
        for read_mb_s in (0.8, 1.0, 0.0):
            curve = utility.value_curve(self.shrunk(read_mb_s), CFG)
            self.assertIsNone(curve.restore_mb, read_mb_s)
        # Never above what it is entitled to.
        curve = utility.value_curve(self.shrunk(base_mb=896), CFG)
        self.assertEqual(896, curve.restore_mb)

    def test_remembered_at_the_size_it_was_found_at(self):
        guest = self.shrunk()
        now = guest.sample.timestamp
        state = {'seen': [[640, 0.0, 64.0, now - 60, 5.0, 1.0]]}

        def restore(value, size_mb=640):
            kept = dict(state, **{given_back.RESTORE_KEY: value})
            g = dataclasses.replace(guest, actual_mb=size_mb, policy_state={
                utility.STATE_KEY: kept})
            return utility.value_curve(g, CFG).restore_mb

        self.assertEqual(1024, restore([1024, 640]))
        # Any resize since ends it: the step was taken, or another move.
        self.assertIsNone(restore([1024, 640], size_mb=704))
        for junk in ('x', [1024], [True, 640], [1024.0, 640], None, {}):
            self.assertIsNone(restore(junk), junk)


class TestOfThisPhase(testtools.TestCase):
    """More memory never made a guest read more, beyond chance."""

    # 64 MiB below its scan's cliff it read all it scanned, 6 MiB/s; a
    # hot/cold reader since, 256 MiB smaller, reads 5 MiB/s: 17% less, far
    # within PHASE_SHARE, but 2,400 read requests a window make that
    # difference no chance.
    LARGER = mrc.Seen(661, 0.0, 64.0, 1000.0, 6.0, count=10.0)

    def kept(self, window_reads, disk_mb_s=5.0):
        return mrc.of_this_phase((self.LARGER,), 405, disk_mb_s,
                                 utility.UtilityParams(), window_reads)

    def test_a_larger_size_that_read_more_is_of_another_workload(self):
        self.assertEqual((), self.kept(2400.0))

    def test_within_chance_or_without_a_count_it_is_kept(self):
        self.assertEqual((self.LARGER,), self.kept(None))
        self.assertEqual((self.LARGER,), self.kept(30.0))
        # Reading as much, or more, with less memory: the same workload.
        self.assertEqual((self.LARGER,), self.kept(2400.0, disk_mb_s=6.0))

    def test_the_windows_measured_at_this_size_count(self):
        # 300 requests a window: one window at 405 MiB is too few to tell
        # 5 MiB/s from 6, ten are enough.
        here = mrc.Seen(405, 0.0, 64.0, 1100.0, 5.0, count=9.0)
        params = utility.UtilityParams()
        self.assertEqual((self.LARGER,), mrc.of_this_phase(
            (self.LARGER,), 405, 5.0, params, 300.0))
        self.assertEqual((here,), mrc.of_this_phase(
            (here, self.LARGER), 405, 5.0, params, 300.0))

    def test_one_window_that_left_its_size_begins_a_phase(self):
        # Random host 19: ten windows of a scan read 2.0 MiB/s at 2,048
        # MiB, each as much as the last; a uniform reader since reads 3.07
        # there, less than PHASE_SHARE away, in 184 requests a window.
        steady = mrc.Seen(2048, 0.0, 64.0, 2400.0, 2.0, count=10.0,
                          square=4.0)
        params = utility.UtilityParams()

        def kept(here, window_reads, disk_mb_s=3.07):
            return mrc.of_this_phase((here,), 2048, disk_mb_s, params,
                                     window_reads)
        self.assertEqual((), kept(steady, 184.0))
        # Without the host's count, or as few requests as chance moves
        # that much, or windows that spread as far: the same workload.
        self.assertEqual((steady,), kept(steady, None))
        self.assertEqual((steady,), kept(steady, 40.0))
        spread = dataclasses.replace(steady, square=4.0 + 0.3 ** 2 * 0.9)
        self.assertEqual((spread,), kept(spread, 184.0))
        self.assertEqual((), kept(spread, 184.0, disk_mb_s=3.5))
        # One window at that size before: no spread known, kept.
        once = dataclasses.replace(steady, count=1.0, square=None)
        self.assertEqual((once,), kept(once, 184.0))

    def test_the_host_only_curve_drops_it(self):
        # The window's 2,400 requests over 60 s read 40 MiB/s of 1 MiB.
        guest = agentless(1, actual_mb=405, used_mb=256, read_mb_s=5.0,
                          seen=[(661, 6.0, 600)])
        io = host_io.HostIo(window_s=60.0, start_mb=405, end_mb=405,
                            read_mb_s=5.0, read_req_s=40.0)
        curve = utility.value_curve(
            dataclasses.replace(guest, host_io=io), CFG)
        self.assertEqual([405], [x.size_mb for x in curve.seen])
        # The same reads without the host's count of requests: kept.
        curve = utility.value_curve(guest, CFG)
        self.assertEqual([405, 661], [x.size_mb for x in curve.seen])


class TestSignificantSlope(testtools.TestCase):
    """A step between two measurements is weighed by each one's reads."""

    @staticmethod
    def seen(size_mb, disk_mb_s, count):
        return mrc.Seen(size_mb, 0.0, 64.0, 1000.0, disk_mb_s, count)

    def test_each_measurement_is_as_noisy_as_its_own_reads(self):
        # Fitted at 2,048 MiB it reads 0.017 MiB/s now: one 1 MiB request
        # a minute. At 1,536 it read 0.6 over three windows, 108 requests:
        # their difference is ten standard deviations of chance (0.06).
        # Weighed by this window's one request, it was all chance, and
        # the 512 MiB between priced nothing.
        fitted = self.seen(2048, 0.017, 1.0)
        smaller = self.seen(1536, 0.6, 3.0)
        self.assertAlmostEqual(
            (0.6 - 0.017) / 512,
            host_only.significant_slope(fitted, smaller, 1.0, 60.0))
        # Two readers of 360 requests a window, 0.14 MiB/s apart over 11
        # and 4 windows: within one standard deviation (0.19).
        self.assertEqual(0.0, host_only.significant_slope(
            self.seen(2304, 5.993, 11.0), self.seen(2240, 6.133, 4.0),
            1.0, 60.0))
        # Without the host's count of requests, a tenth of the reads.
        self.assertEqual(0.0, host_only.significant_slope(
            fitted, self.seen(1536, 0.018, 3.0), None, 60.0))
        self.assertGreater(host_only.significant_slope(
            fitted, smaller, None, 60.0), 0.0)


class TestLentWhileIdle(testtools.TestCase):
    """Memory a guest gave while it read nothing comes back when it reads.

    Random host 541 without agents: a guest idle from boot gave 512 of its
    1,024 MiB to a wide probe; an hour later it woke to scan 512 MiB,
    which fits only in what it gave, and read 8 MiB/s for 80 minutes
    (1.75x static for the host) while probes of one granule measured
    nothing.
    """

    def woken(self, read_mb_s=8.0, lent=1024, **kw):
        g = agentless(1, actual_mb=512, read_mb_s=read_mb_s, **kw)
        state = {given_back.LENT_KEY: lent} if lent is not None else {}
        return dataclasses.replace(g, policy_state={utility.STATE_KEY: state})

    def test_the_size_held_while_idle_is_remembered(self):
        idle = agentless(1, actual_mb=1024, read_mb_s=0.0)
        curve = utility.value_curve(idle, CFG)
        self.assertEqual(1024, curve.lent_mb)
        self.assertIsNone(curve.restore_mb)
        # Shrunk since: the largest size is kept, not the smaller one.
        curve = utility.value_curve(self.woken(read_mb_s=0.0), CFG)
        self.assertEqual(1024, curve.lent_mb)
        self.assertIsNone(curve.restore_mb)

    def test_given_back_in_one_step_when_it_reads(self):
        donor = agentless(2, read_mb_s=1.0, seen=[(1536, 1.0, 300)])
        moved, plan = deltas(self.woken(), donor)
        self.assertEqual({self.woken().uuid: 512, donor.uuid: -512}, moved)
        state = plan.policy_state[self.woken().uuid][utility.STATE_KEY]
        # The step is kept until a resize; the idle size is forgotten.
        self.assertEqual([1024, 512], state[given_back.RESTORE_KEY])
        self.assertNotIn(given_back.LENT_KEY, state)

    def test_junk_or_nothing_remembered_gives_nothing_back(self):
        for lent in (None, 'x', True, 1024.0, -5, 1 << 40):
            curve = utility.value_curve(self.woken(lent=lent), CFG)
            self.assertIsNone(curve.restore_mb, lent)
        # Never above what it is entitled to.
        curve = utility.value_curve(self.woken(base_mb=896), CFG)
        self.assertEqual(896, curve.restore_mb)


class TestRestingWithoutAgent(testtools.TestCase):
    """A guest without an agent that rests, its data all in its cache."""

    def resting(self, returned_s=None):
        """It read 1 MiB/s, now nothing, its CPUs idle, since 120 s.

        ``returned_s``: it came back from a rest that long ago (None:
        never seen back).
        """
        idle = agentless(2, read_mb_s=0.0, seen=[(2048, 1.0, 120)])
        now = idle.sample.timestamp
        idle = dataclasses.replace(idle, host_io=host_io.HostIo(
            window_s=60.0, start_mb=2048, end_mb=2048, read_mb_s=0.0,
            read_req_s=0.0, cpu_s=0.005))
        if returned_s is not None:
            idle.policy_state[utility.STATE_KEY].update({
                rest_hold.STATE_KEY: now - 120,
                rest_hold.RETURNED_KEY: now - returned_s})
        return idle

    def test_its_return_re_reads_its_whole_cache(self):
        # No active list without an agent: its cache is what its return
        # may read again, priced by the ski rental as with an agent.
        curve = utility.value_curve(self.resting(returned_s=1320), CFG)
        self.assertEqual(2048 - 256 - 64, curve.reread_mb)
        self.assertEqual(64, curve.held_from_mb)
        self.assertEqual(0.0, curve.loss_at(0, 64))
        self.assertAlmostEqual(1 / 120, curve.loss_at(64, 64))
        self.assertAlmostEqual(1 / 120, curve.probe_loss_at(64, 64))

    def test_it_keeps_its_cache_from_a_taker_it_saves_little(self):
        taker = factory.guest(1, read_mb_s=2.0,
                              refault_s=factory.pages_s(2.0),
                              activate_s=factory.pages_s(0.2),
                              read_since_boot_mb=factory.READ_FAR_MB)
        held = self.resting(returned_s=1320)
        moved, _ = deltas(taker, held)
        self.assertEqual(-64, moved[held.uuid])
        # Never seen back from a rest, all but what it uses may go.
        moved, _ = deltas(taker, self.resting())
        self.assertLess(moved[held.uuid], -64)


class TestBalloonSample(testtools.TestCase):

    BALLOON = {'actual': 1048576, 'available': 1000000, 'usable': 600000,
               'disk_caches': 300000, 'major_fault': 7}

    def entry(self, agent, balloon=None):
        sample = report.balloon_sample(1000.0, balloon or self.BALLOON,
                                       5 << 20)
        return report.guest_entry(factory.uid(1), 'g', 1024, 1024,
                                  sample=sample, previous=sample,
                                  agent=agent, error='no agent')

    def test_only_a_guest_without_agent_is_managed_from_its_balloon(self):
        view = report.parse_guest(self.entry(report.MISSING_AGENT))
        self.assertTrue(view.host_only)
        self.assertIsNone(view.problem)
        self.assertEqual(5 * 1024, view.sample.pgpgin_kb)
        self.assertEqual(400000, view.sample.committed_as_kb)
        # An agent that times out or sends nonsense is not stood in for.
        view = report.parse_guest(self.entry('timeout'))
        self.assertFalse(view.host_only)
        self.assertFalse(view.has_data)

    def test_a_balloon_without_its_levels_gives_no_sample(self):
        self.assertIsNone(report.balloon_sample(
            0.0, {'actual': 1048576, 'usable': 5}, 0))
        # Levels beyond what it has are cut to its size.
        sample = report.balloon_sample(0.0, dict(
            self.BALLOON, usable=2000000, disk_caches=3000000), 0)
        self.assertEqual((1000000, 1000000, 0), (
            sample['meminfo']['MemAvailable'], sample['meminfo']['Cached'],
            sample['meminfo']['Committed_AS']))
