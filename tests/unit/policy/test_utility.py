import dataclasses
from unittest import mock

import testtools

from tests.unit import factory
from watcher_cams.lab import example
from watcher_cams.policy import cams
from watcher_cams.policy import flat_search
from watcher_cams.policy import given_back
from watcher_cams.policy import grow_check
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import probe_memory
from watcher_cams.policy import probes
from watcher_cams.policy import report
from watcher_cams.policy import scan_cliffs
from watcher_cams.policy import stale_active
from watcher_cams.policy import utility

CFG = guards.GuardConfig()


def run_cycles(mode, cycles=30):
    """Audit cycles on the paper example; returns cycles until no moves."""
    ex = example.PaperExample()
    for cycle in range(cycles):
        h = report.parse_host(ex.report())
        plan = (cams.plan(h, CFG) if mode == 'paper'
                else utility.plan(h, CFG))
        if not plan.moves:
            return cycle, ex
        ex.apply({m.instance: m.target_mb for m in plan.moves})
    return cycles, ex


def grown_cache(guest, promoted_mb, grew_mb=200):
    """``guest`` whose cache grew by ``grew_mb`` MiB over the rate window.

    Same counters, but ``grew_mb`` MiB less cache one window ago, of which
    ``promoted_mb`` were re-read since (active list growth).
    """
    earlier = dataclasses.replace(
        guest.previous,
        active_file_kb=guest.previous.active_file_kb - promoted_mb * 1024,
        inactive_file_kb=guest.previous.inactive_file_kb
        - (grew_mb - promoted_mb) * 1024,
        cached_kb=guest.previous.cached_kb - grew_mb * 1024)
    return dataclasses.replace(guest, previous=earlier)


def far_reader():
    """A full cache whose refaults say its memory is worth little.

    A uniform reader over far more data than it caches: some of what it
    cached is re-read by chance.
    """
    return factory.guest(1, active_mb=800, inactive_mb=992, read_mb_s=8.0,
                         refault_s=factory.pages_s(2.0),
                         activate_s=factory.pages_s(0.3),
                         read_since_boot_mb=20000)


def shrunk_by(guest, mb):
    """``guest`` whose balloon took ``mb`` MiB within the rate window."""
    before = dataclasses.replace(
        guest.previous,
        mem_total_kb=guest.previous.mem_total_kb + mb * 1024,
        mem_available_kb=guest.previous.mem_available_kb + mb * 1024)
    return dataclasses.replace(guest, previous=before)


class TestValueCurve(testtools.TestCase):
    def test_no_rates_without_previous_sample(self):
        g = model.GuestView(uuid='a', name='a', max_mb=1024, actual_mb=1024,
                            sample=factory.sample())
        self.assertIsNone(utility.value_curve(g, CFG))

    def test_counter_reset_gives_no_rates(self):
        g = factory.guest(1, refault_s=100)
        g = model.GuestView(**dict(g.__dict__, previous=g.sample,
                                   sample=g.previous))
        self.assertIsNone(model.rates(g))

    def test_curve_is_concave_and_capped_by_disk_reads(self):
        g = factory.guest(1, read_mb_s=1.0, refault_s=factory.pages_s(5.0),
                          activate_s=factory.pages_s(4.0))
        curve = utility.value_curve(g, CFG)
        slopes = [s for _, s in curve.segments]
        self.assertEqual(sorted(slopes, reverse=True), slopes)
        self.assertLessEqual(curve.gain(10 ** 9), 1.0 + 1e-9)

    def test_stalled_guest_never_donates(self):
        g = factory.guest(1, psi=25.0)
        self.assertEqual(0, utility.value_curve(g, CFG).donate_mb)

    def test_active_list_protected(self):
        g = factory.guest(1, actual_mb=2048, used_mb=256, active_mb=1500,
                          inactive_mb=292)
        # floor margin 128: 2048 - (256 + 1500 + 128)
        self.assertEqual(164, utility.value_curve(g, CFG).donate_mb)

    def test_free_memory_goes_less_what_the_reads_will_fill(self):
        # 2048 MiB, 256 used, 512 cached: 1280 MiB free.
        idle = factory.guest(1, active_mb=256, inactive_mb=256)
        self.assertEqual(1280 - 128,
                         utility.value_curve(idle, CFG).donate_mb)
        # Reading 0.1 MiB/s in: 360 MiB of it fills within the hour.
        filling = factory.guest(1, active_mb=256, inactive_mb=256,
                                read_mb_s=0.1)
        self.assertEqual(1280 - 128 - 360,
                         utility.value_curve(filling, CFG).donate_mb)
        fast = factory.guest(1, active_mb=256, inactive_mb=256,
                             read_mb_s=1.0)
        self.assertEqual(0, utility.value_curve(fast, CFG).donate_mb)
        self.assertRaises(ValueError, utility.UtilityParams,
                          fill_horizon_s=-1)

    def test_free_memory_of_a_cache_that_showed_its_reuse_is_priced(self):
        # Filling at 0.3 MiB/s (1080 MiB within the hour, more than its
        # 1280 MiB free less the margin): nothing may go on its own...
        blind = factory.guest(1, active_mb=256, inactive_mb=256,
                              read_mb_s=0.3, read_since_boot_mb=4096)
        self.assertEqual(1280 - 128 - 1080,
                         utility.value_curve(blind, CFG).donate_mb)
        # ...but pages hit again on its inactive list price what more of
        # them is worth: its free memory may go at that price (its cache
        # grows by what it reads: that memory is being filled).
        hits = grown_cache(self._with_pgactivate(blind, 0.02), 0, 18)
        curve = utility.value_curve(hits, CFG)
        self.assertTrue(curve.filling)
        self.assertEqual(1280 - 128, curve.donate_mb)
        self.assertAlmostEqual(0.02 / 256, curve.loss_at(0, 64), delta=1e-6)
        # A first pass (read less than three caches, nothing re-read yet)
        # keeps the hour's reads: its reuse may not have come round.
        young = factory.guest(1, active_mb=256, inactive_mb=256,
                              read_mb_s=0.3)
        self.assertTrue(utility.value_curve(young, CFG).first_pass)
        self.assertEqual(1280 - 128 - 1080,
                         utility.value_curve(young, CFG).donate_mb)

    def test_a_filling_cache_whose_reuse_is_cheap_feeds_a_hot_guest(self):
        # A hot/cold reader whose cold misses fill its cache slowly (more
        # than its free memory within the hour), and a neighbour
        # refaulting a hot set larger than its cache.
        slow = self._with_pgactivate(factory.guest(
            1, active_mb=512, inactive_mb=256, read_mb_s=0.3,
            read_since_boot_mb=8192), 0.01)
        hot = factory.guest(2, active_mb=896, inactive_mb=896, used_mb=256,
                            read_mb_s=2.0, refault_s=factory.pages_s(1.5),
                            activate_s=factory.pages_s(1.2))
        plan = utility.plan(factory.host([slow, hot]), CFG)
        by = {m.instance: m.delta_mb for m in plan.moves}
        self.assertGreater(by.get(hot.uuid, 0), 0)
        self.assertEqual(-by[hot.uuid], by[slow.uuid])
        # What it gives is free memory only: its cache stays.
        self.assertLessEqual(-by[slow.uuid], 2048 - 256 - 768 - 128)

    @staticmethod
    def _with_pgactivate(guest, mb_s):
        return dataclasses.replace(guest, sample=dataclasses.replace(
            guest.sample, pgactivate=guest.previous.pgactivate
            + int(factory.pages_s(mb_s) * 60)))


class TestUtilityPlan(testtools.TestCase):
    def test_memory_goes_to_the_guest_whose_refaults_show_value(self):
        busy = factory.guest(1, read_mb_s=2.0,
                             refault_s=factory.pages_s(1.5),
                             activate_s=factory.pages_s(1.0))
        idle = factory.guest(2, active_mb=20, read_mb_s=8.0)
        plan = utility.plan(factory.host([busy, idle], ram_mb=4096), CFG)
        by = {m.instance: m.delta_mb for m in plan.moves}
        self.assertGreater(by[busy.uuid], 0)
        self.assertEqual(0, sum(by.values()))
        self.assertGreater(plan.predicted_reads_avoided_mb_s, 0)
        # Its counters decided it: nothing was measured at another size.
        for m in plan.moves:
            self.assertTrue(m.reason.startswith('utility (guest-reported)'))

    def test_nothing_to_a_guest_that_has_not_filled_what_it_has(self):
        def given(inactive_mb):
            return taken_beside_a_stream(factory.guest(
                1, active_mb=256, inactive_mb=inactive_mb, read_mb_s=2.0,
                refault_s=factory.pages_s(1.5),
                activate_s=factory.pages_s(1.0),
                read_since_boot_mb=factory.READ_FAR_MB))
        # Its cache full (2048 - 256 used - 256 active), it gets memory;
        # with a granule and more free beyond the floor margin, nothing:
        # nothing says what more would save until its cache filled it.
        self.assertGreater(given(1536), 0)
        self.assertEqual(0, given(1536 - 128 - 64))
        self.assertGreater(given(1536 - 128 - 63), 0)

    def test_nothing_moves_without_value(self):
        a = factory.guest(1, read_mb_s=1.0)
        b = factory.guest(2, read_mb_s=1.0)
        self.assertEqual([], utility.plan(factory.host([a, b]), CFG).moves)

    def test_a_tie_is_broken_by_cache_utilization(self):
        # No refaults anywhere: the counters cannot tell the guests apart,
        # but one re-reads most of its cache and the other almost none.
        rereads = factory.guest(1, active_mb=1500, inactive_mb=292,
                                read_mb_s=1.0)
        streams = factory.guest(2, active_mb=100, inactive_mb=1692,
                                read_since_boot_mb=20000)
        plan = utility.plan(factory.host([rereads, streams]), CFG)
        deltas = {m.instance: m.delta_mb for m in plan.moves}
        self.assertGreater(deltas[rereads.uuid], 0)
        self.assertEqual(-deltas[rereads.uuid], deltas[streams.uuid])
        self.assertIn('(guest-reported), a tie', plan.moves[0].reason)
        # Unless it reads nothing from disk (its data fits): memory it
        # gets could not save a read.
        fits = factory.guest(1, active_mb=1500, inactive_mb=292)
        self.assertEqual([], utility.plan(factory.host([fits, streams]),
                                          CFG).moves)

    def test_no_tie_toward_a_size_measured_to_read_as_much(self):
        # Its counters say it re-reads its cache; the host measured it
        # reading 1 MiB/s at this size and 512 MiB larger alike (three
        # windows each): the step it would take (512 MiB) saves nothing.
        streams = factory.guest(2, active_mb=100, inactive_mb=1692,
                                read_since_boot_mb=20000)
        rereads = factory.guest(1, active_mb=1500, inactive_mb=292,
                                read_mb_s=1.0)
        now = rereads.sample.timestamp

        def measured_larger(disk_mb_s, *further):
            return remembering(
                rereads, (2048, 0.0, 256, now - 120, 1.0, 3, None, 1.01),
                (2560, 0.0, 256, now - 600, disk_mb_s, 3, None,
                 disk_mb_s ** 2 + 0.01), *further)
        self.assertEqual([], utility.plan(factory.host(
            [measured_larger(1.0), streams]), CFG).moves)
        # Where it read clearly less there, the tie is broken as before;
        # or further up (then the step may save what lies between).
        self.assertTrue(utility.plan(factory.host(
            [measured_larger(0.5), streams]), CFG).moves)
        further = (3072, 0.0, 256, now - 900, 0.5, 3, None, 0.26)
        self.assertTrue(utility.plan(factory.host(
            [measured_larger(1.0, further), streams]), CFG).moves)
        # One window says nothing of it: a scan's reads part of its period.
        once = (2560, 0.0, 256, now - 600, 1.0, 1)
        self.assertTrue(utility.plan(factory.host([remembering(
            rereads, (2048, 0.0, 256, now - 120, 1.0, 3, None, 1.01), once),
            streams]), CFG).moves)

    def test_no_tie_takes_a_donor_where_the_host_measured_more_reads(self):
        # The tie of test_a_tie_is_broken_by_cache_utilization, the donor
        # shrunk within its rate window (no clean measurement of it). It
        # reads nothing now, but the host measured it reading 1 MiB/s
        # where the step takes it (three windows): its cache saves that.
        rereads = factory.guest(1, active_mb=1500, inactive_mb=292,
                                read_mb_s=1.0)
        streams = shrunk_by(factory.guest(
            2, active_mb=100, inactive_mb=1692, read_since_boot_mb=20000),
            256)
        now = streams.sample.timestamp
        step = -{m.instance: m.delta_mb for m in utility.plan(factory.host(
            [rereads, streams]), CFG).moves}[streams.uuid]

        def measured(size_mb, disk_mb_s):
            return utility.plan(factory.host([rereads, remembering(
                streams, (size_mb, 0.0, 256, now - 600, disk_mb_s, 3))]),
                CFG).moves
        bottom = streams.actual_mb - step
        self.assertEqual([], measured(bottom, 1.0))
        self.assertEqual([], measured(
            bottom - utility.mrc.EMPIRICAL_REACH_MB, 1.0))
        # Reading as much there (within the noise), it gives as before.
        self.assertTrue(measured(bottom, 0.05))

    def test_a_first_pass_keeps_its_memory_in_a_tie(self):
        # It has read 3 GiB since it booted, re-read none of it and hits
        # nothing in its cache: a scan whose reuse has not come round yet
        # looks just like that, until it read three times its file LRU.
        rereads = factory.guest(1, active_mb=1500, inactive_mb=292,
                                read_mb_s=1.0)
        first = factory.guest(2, active_mb=100, inactive_mb=1692,
                              read_mb_s=10.0, read_since_boot_mb=2400)
        self.assertTrue(utility.value_curve(first, CFG).first_pass)
        self.assertEqual([], utility.plan(factory.host([rereads, first]),
                                          CFG).moves)
        # Having read further than that without a refault, it streams.
        stream = factory.guest(2, active_mb=100, inactive_mb=1692,
                               read_mb_s=10.0, read_since_boot_mb=15000)
        self.assertFalse(utility.value_curve(stream, CFG).first_pass)
        self.assertTrue(utility.plan(factory.host([rereads, stream]),
                                     CFG).moves)

    def test_a_first_pass_gives_a_step_at_a_time(self):
        # Reading 10 MiB/s, a refault seen of none of it: its curve values
        # its cache at nothing, but a scan whose reuse has not come round
        # looks just like that. A step goes: a quarter of its cache (448
        # MiB), but no more than leaves its file LRU half the 3,000 MiB
        # it read in its pass (a scan of that would save 3.5 MiB/s per
        # GiB, more than the taker's next MiB): its shadow entries still
        # reach its reuse when it comes round.
        taker = factory.guest(1, read_mb_s=4.0,
                              refault_s=factory.pages_s(4.0),
                              activate_s=factory.pages_s(3.0),
                              read_since_boot_mb=factory.READ_FAR_MB)
        first = factory.guest(2, active_mb=100, inactive_mb=1692,
                              read_mb_s=10.0, read_since_boot_mb=2400)
        self.assertEqual(2048 - 256 - 100 - 128,
                         utility.value_curve(first, CFG).donate_mb)
        moves = {m.instance: m.delta_mb for m in utility.plan(
            factory.host([taker, first]), CFG).moves}
        self.assertEqual(-256, moves[first.uuid])
        # A reader of random blocks refaults a few: it is no scan's first
        # pass, and gives what its curve says.
        random = factory.guest(2, active_mb=100, inactive_mb=1692,
                               read_mb_s=10.0, read_since_boot_mb=2400,
                               refault_s=factory.pages_s(0.05))
        moves = {m.instance: m.delta_mb for m in utility.plan(
            factory.host([taker, random]), CFG).moves}
        self.assertLess(moves[random.uuid], -1792 // 4)

    def test_a_first_pass_shrunk_is_one_until_it_read_its_maximum(self):
        # Shrunk to 1 GiB while in its first pass, it has read 3,000 MiB
        # since the pass began: more than three times its file LRU (768
        # MiB), less than it could ever cache (4,096 MiB less 256 used).
        # A scan of that much fits it: it is still in its first pass.
        def shrunk(fresh_mb):
            guest = factory.guest(2, actual_mb=1024, active_mb=0,
                                  inactive_mb=768, read_mb_s=10.0,
                                  read_since_boot_mb=20000)
            return dataclasses.replace(guest, policy_state={
                utility.STATE_KEY: {'fresh_mb': fresh_mb}})
        self.assertTrue(utility.value_curve(shrunk(2400), CFG).first_pass)
        # Having read more than 3,840 MiB without a re-read, it streams.
        self.assertFalse(utility.value_curve(shrunk(3300), CFG).first_pass)
        # So does one whose window read less than a pass counts: what it
        # read in its pass was long ago.
        slow = dataclasses.replace(shrunk(2400), sample=dataclasses.replace(
            shrunk(2400).sample, pgpgin_kb=shrunk(2400).previous.pgpgin_kb
            + 30 * 1024))
        self.assertFalse(utility.value_curve(slow, CFG).first_pass)

    def test_a_scan_larger_than_its_cache_keeps_its_memory_in_a_tie(self):
        # Every read a refault, none activated, never measured larger: its
        # reuse lies beyond its cache, within the shadow entries' reach.
        # The refault model spreads that thin, paper mode sees a cache
        # nothing re-reads; but shrinking it moves the cliff further off.
        rereads = factory.guest(1, active_mb=1500, inactive_mb=292,
                                read_mb_s=1.0,
                                refault_s=factory.pages_s(0.05),
                                activate_s=factory.pages_s(0.04))
        scan = factory.guest(2, max_mb=2048, active_mb=100,
                             inactive_mb=1692, read_mb_s=2.0,
                             refault_s=factory.pages_s(2.0),
                             read_since_boot_mb=20000)
        self.assertEqual([], utility.plan(factory.host([rereads, scan]),
                                          CFG).moves)
        self.assertTrue(probes.cliff_unplaced(
            utility.value_curve(scan, CFG)))
        # Measured larger reading less, its curve places the cliff (see
        # test_a_flat_step_before_refaulting_reads_is_a_cliff); reading
        # as much, the cliff lies beyond that size too.

        def measured_at_2560(reads_mb_s):
            return utility.value_curve(remembering(scan, (
                2560, 0.0, 64, scan.sample.timestamp - 300, reads_mb_s,
                3)), CFG)
        self.assertFalse(probes.cliff_unplaced(measured_at_2560(1.0)))
        self.assertTrue(probes.cliff_unplaced(measured_at_2560(2.0)))

    def test_an_unplaced_cliff_is_priced_only_while_the_host_could_pay(self):
        # Its reads all refaults, none activated: what it gives is priced
        # at its refaults over the probe's step (a quarter of its 1792
        # MiB cache), while the host could give it that step. Where the
        # other guest's floor leaves it less than 2048 + 448 MiB, the
        # step could never be taken: what it holds is priced as its
        # curve says.
        def priced(other_used_mb):
            other = factory.guest(1, used_mb=other_used_mb, read_mb_s=1.0,
                                  refault_s=factory.pages_s(0.05),
                                  activate_s=factory.pages_s(0.04))
            scan = factory.guest(2, read_mb_s=2.0,
                                 refault_s=factory.pages_s(2.0),
                                 read_since_boot_mb=20000)
            host = factory.host([other, scan])
            curves = {g.uuid: utility.value_curve(g, CFG)
                      for g in host.guests}
            out = scan_cliffs.priced(host, CFG, utility.UtilityParams(),
                                     curves)
            return curves[scan.uuid].loss_density, out[
                scan.uuid].loss_density
        before, after = priced(256)
        self.assertAlmostEqual(2.0 / 448, after)
        self.assertLess(before, after)
        before, after = priced(1536)
        self.assertEqual(before, after)

    def test_an_idle_guest_with_free_memory_breaks_no_tie(self):
        # Its empty cache says nothing about what it will need when it
        # starts reading again.
        reading = factory.guest(1, active_mb=1000, inactive_mb=792,
                                read_mb_s=30.0)
        idle = factory.guest(2, active_mb=0, inactive_mb=100)
        self.assertTrue(utility.value_curve(idle, CFG).filling)
        self.assertEqual([], utility.plan(factory.host([reading, idle]),
                                          CFG).moves)

    def _growing(self, promoted_mb, read_mb_s=5.0):
        growing = factory.guest(2, active_mb=100, inactive_mb=1692,
                                read_mb_s=read_mb_s)
        return growing, grown_cache(growing, promoted_mb)

    def test_a_cache_still_growing_without_refaults_keeps_its_memory(self):
        valued = factory.guest(1, read_mb_s=2.0,
                               refault_s=factory.pages_s(2.0),
                               activate_s=factory.pages_s(1.5))
        grown, still = self._growing(promoted_mb=50)
        self.assertTrue(utility.plan(factory.host([valued, grown]),
                                     CFG).moves)
        curve = utility.value_curve(still, CFG)
        self.assertTrue(curve.filling)
        # 50 MiB re-read in a minute from 1792 MiB of cache.
        self.assertAlmostEqual(50 / 60 / 1792, curve.fill_density)
        self.assertEqual([], utility.plan(factory.host([valued, still]),
                                          CFG).moves)

    def test_a_growing_cache_that_served_nothing_breaks_a_tie(self):
        # It read 2400 MiB in the window, more than it can cache (1792),
        # and re-read none of it while cached: a reader over far more data
        # than it can cache. Its free memory goes, as paper mode would
        # move it, without waiting for the cache to fill.
        valued = factory.guest(1, read_mb_s=2.0,
                               refault_s=factory.pages_s(2.0),
                               activate_s=factory.pages_s(1.5))
        _, streaming = self._growing(promoted_mb=0, read_mb_s=40.0)
        # Past a first pass: it has read more than three times its file
        # LRU since it booted (test_a_first_pass_keeps...).
        streaming = dataclasses.replace(streaming, **{
            which: dataclasses.replace(
                getattr(streaming, which),
                pgpgin_kb=getattr(streaming, which).pgpgin_kb + 20000 * 1024)
            for which in ('sample', 'previous')})
        self.assertEqual(0.0, utility.value_curve(streaming, CFG)
                         .fill_density)
        plan = utility.plan(factory.host([valued, streaming]), CFG)
        deltas = {m.instance: m.delta_mb for m in plan.moves}
        self.assertLess(deltas[streaming.uuid], 0)
        self.assertIn('tie', plan.moves[0].reason)
        # Unless the taker's value is no better.
        flat = factory.guest(1, active_mb=100, inactive_mb=1692,
                             read_mb_s=2.0)
        self.assertEqual([], utility.plan(factory.host([flat, streaming]),
                                          CFG).moves)

    def test_a_filling_hot_set_takes_a_tie_from_a_full_cache(self):
        # Its hot set outgrew its active list: no refault is activated, so
        # its counters value the next MiB at nothing, but while its cache
        # fills what it was given five minutes ago it re-reads 150 MiB a
        # minute of what it cached. The donor: far_reader().
        donor = far_reader()
        taker = factory.guest(2, active_mb=1400, inactive_mb=392,
                              read_mb_s=5.0)

        def filling(promoted_mb):
            return dataclasses.replace(
                grown_cache(taker, promoted_mb), policy_state={
                    utility.STATE_KEY: {'size_mb': 1536,
                                        'at': taker.sample.timestamp - 300}})
        curves = {g.uuid: utility.value_curve(g, CFG)
                  for g in (donor, filling(150))}
        self.assertTrue(curves[taker.uuid].filling)
        self.assertEqual(0.0, curves[taker.uuid].density_at(0)[0])
        self.assertFalse(curves[donor.uuid].filling)
        plan = utility.plan(factory.host([donor, filling(150)]), CFG)
        deltas = {m.instance: m.delta_mb for m in plan.moves}
        self.assertGreater(deltas[taker.uuid], 0)
        self.assertIn('tie', plan.moves[0].reason)
        # Re-reading none of it, it waits until it filled; so does a guest
        # never grown, whose first clean window is still to come.
        self.assertEqual([], utility.plan(
            factory.host([donor, filling(0)]), CFG).moves)
        never_grown = dataclasses.replace(filling(150), policy_state={})
        self.assertEqual([], utility.plan(
            factory.host([donor, never_grown]), CFG).moves)

    def test_free_memory_that_outlasts_memory_s_takes_no_tie(self):
        # The donor: far_reader(). The taker re-reads what it cached but
        # has 1,272 MiB free. At 1 MiB/s of reads it fills that in 21
        # minutes and takes the tie; at 0.6 (a hot/cold reader whose cold
        # blocks trickle in) it would take 35, more than memory_s, and the
        # donor keeps its memory.
        donor = far_reader()

        def taker(read_mb_s):
            guest = grown_cache(factory.guest(
                2, active_mb=300, inactive_mb=92, read_mb_s=read_mb_s,
                interval=300.0), 150)
            return dataclasses.replace(guest, policy_state={
                utility.STATE_KEY: {'size_mb': 1536,
                                    'at': guest.sample.timestamp - 300}})
        self.assertEqual(1272, round(utility.value_curve(
            taker(0.6), CFG).free_mb))
        faster = utility.plan(factory.host([donor, taker(1.0)]), CFG)
        self.assertIn('tie', faster.moves[0].reason)
        self.assertEqual([], utility.plan(
            factory.host([donor, taker(0.6)]), CFG).moves)

    def test_a_cache_that_read_less_than_it_holds_breaks_no_tie(self):
        # It re-read nothing of the 300 MiB it read, but it can cache
        # 1792: a scan's first pass looks the same until it has read more
        # than it can cache, so it keeps its memory.
        valued = factory.guest(1, read_mb_s=2.0,
                               refault_s=factory.pages_s(2.0),
                               activate_s=factory.pages_s(1.5))
        young = factory.guest(2, active_mb=100, inactive_mb=1092,
                              read_mb_s=5.0)
        earlier = dataclasses.replace(
            young.previous,
            inactive_file_kb=young.previous.inactive_file_kb - 200 * 1024,
            cached_kb=young.previous.cached_kb - 200 * 1024)
        young = dataclasses.replace(young, previous=earlier)
        curve = utility.value_curve(young, CFG)
        self.assertEqual(0.0, curve.fill_density)
        self.assertEqual(1792, round(curve.capacity_mb))
        self.assertEqual([], utility.plan(factory.host([valued, young]),
                                          CFG).moves)

    def test_a_cache_that_keeps_what_it_reads_is_filling(self):
        # 31 MiB more cache after reading 60 MiB, and a few refaults: it
        # has evicted too little for refaults to show what it is worth.
        g = factory.guest(2, read_mb_s=1.0, refault_s=factory.pages_s(0.01))
        earlier = dataclasses.replace(
            g.previous,
            inactive_file_kb=g.previous.inactive_file_kb - 31 * 1024,
            cached_kb=g.previous.cached_kb - 31 * 1024)
        self.assertFalse(utility.value_curve(g, CFG).filling)
        self.assertTrue(utility.value_curve(
            dataclasses.replace(g, previous=earlier), CFG).filling)

    def test_a_full_cache_that_rose_a_little_is_not_filling(self):
        # 120 MiB read, none of it re-read, and 10 MiB more cache: the
        # kernel reclaimed it down to a watermark before the window and
        # it refilled; a reader whose misses are cold blocks never
        # refaults. Not filling: measured, and valued by its reads.
        g = factory.guest(2, read_mb_s=2.0)
        earlier = dataclasses.replace(
            g.previous,
            inactive_file_kb=g.previous.inactive_file_kb - 10 * 1024,
            cached_kb=g.previous.cached_kb - 10 * 1024)
        curve = utility.value_curve(
            dataclasses.replace(g, previous=earlier), CFG)
        self.assertFalse(curve.filling)
        self.assertEqual([2048], [x.size_mb for x in curve.seen])

    def test_no_tie_break_against_measured_value(self):
        # The low-utilization guest's refaults show its cache is worth
        # more than the other's: utilization does not overrule that.
        rereads = factory.guest(1, active_mb=1500, inactive_mb=292)
        valued = factory.guest(2, max_mb=2048, active_mb=100,
                               inactive_mb=1692, read_mb_s=2.0,
                               refault_s=factory.pages_s(2.0),
                               activate_s=factory.pages_s(1.0))
        plan = utility.plan(factory.host([rereads, valued]), CFG)
        self.assertEqual([], plan.moves)

    def test_a_fill_that_saved_more_than_the_donor_loses_breaks_a_tie(self):
        # The taker's counters value its next MiB at nothing, below what
        # the donor's refaults price 512 MiB at (2 MiB/s per GiB): no tie.
        # Its reads fell 4 MiB/s per GiB as its cache last filled, at a
        # size no smaller one was measured at: the tie goes. A fill that
        # saved 1 per GiB does not outbid the donor.
        taker = factory.guest(1, active_mb=1500, inactive_mb=292,
                              read_mb_s=1.0)
        donor = factory.guest(2, max_mb=2048, active_mb=100,
                              inactive_mb=1692, read_mb_s=2.0,
                              refault_s=factory.pages_s(0.5),
                              activate_s=factory.pages_s(0.2))

        def filled(saved_per_gib, **state):
            return dataclasses.replace(taker, policy_state={
                utility.STATE_KEY: dict(state,
                                        fill_slope=saved_per_gib / 1024)})

        def deltas(taker):
            plan = utility.plan(factory.host([taker, donor]), CFG)
            return {m.instance: m.delta_mb for m in plan.moves}

        self.assertEqual({}, deltas(taker))
        self.assertEqual({}, deltas(filled(1.0)))
        self.assertEqual({taker.uuid: 512, donor.uuid: -512},
                         deltas(filled(4.0)))
        # Measured 256 MiB smaller, reading as much: that decides.
        now = taker.sample.timestamp
        self.assertEqual({}, deltas(filled(4.0, seen=[
            [1792, 0.0, 64, now - 300, 1.0, 3]])))

    def test_a_resize_is_not_reversed_while_it_echoes(self):
        # The donor of last cycle refaults what it gave; it looks valuable
        # but does not get the memory straight back.
        echo = factory.guest(1, read_mb_s=2.0,
                             refault_s=factory.pages_s(2.0),
                             activate_s=factory.pages_s(1.5))
        idle = factory.guest(2, active_mb=100, inactive_mb=1692)
        self.assertTrue(utility.plan(factory.host([echo, idle]), CFG).moves)
        self.assertEqual([], utility.plan(factory.host(
            [shrunk_by(echo, 256), idle]), CFG).moves)
        # A guest shrunk last cycle may still give more.
        plan = utility.plan(factory.host([echo, shrunk_by(idle, 256)]), CFG)
        self.assertLess({m.instance: m.delta_mb
                         for m in plan.moves}[idle.uuid], 0)

    def test_paper_example_moves_memory_to_vm1(self):
        vm1, vm2 = factory.example_deltas(lambda h: utility.plan(h, CFG))
        self.assertGreater(vm1, 0)
        self.assertEqual(-vm1, vm2)

    def test_converges_in_three_cycles_where_paper_mode_needs_many(self):
        utility_cycles, u_ex = run_cycles('utility')
        paper_cycles, p_ex = run_cycles('paper')
        self.assertLessEqual(utility_cycles, 3)
        self.assertGreater(paper_cycles, 2 * utility_cycles)
        # Both end with VM1 reading less from disk than at the start.
        start = example.PaperExample().disk_read_mb_s()[example.
                                                        PaperExample.VM1]
        self.assertLess(u_ex.disk_read_mb_s()[u_ex.VM1], start)
        self.assertLess(p_ex.disk_read_mb_s()[p_ex.VM1], start)


def taken_beside_a_stream(taker):
    """MiB ``taker`` gets beside a stream, whose cache is worth nothing."""
    stream = factory.guest(2, active_mb=20, read_mb_s=8.0)
    plan = utility.plan(factory.host([taker, stream]), CFG)
    return sum(m.delta_mb for m in plan.moves if m.instance == taker.uuid)


def remembering(g, *entries):
    """``g`` with ``entries`` as its utility measurements."""
    return dataclasses.replace(g, policy_state={
        utility.STATE_KEY: {'seen': [list(e) for e in entries]}})


def probes_of(plan):
    """The moves of ``plan`` a probe decided."""
    return [m for m in plan.moves if '(%s)' % utility.PROBE in m.reason]


def host_counted(g, reads, entries):
    """``g`` with the host's reads at its size and ``entries`` measured.

    ``reads``: (MiB/s, requests/s) the host counted in the last window,
    which bore ``entries`` out.
    """
    read_mb_s, read_req_s = reads
    return dataclasses.replace(
        g, host_io=host_io.HostIo(
            window_s=60.0, start_mb=g.actual_mb, end_mb=g.actual_mb,
            read_mb_s=read_mb_s, read_req_s=read_req_s),
        policy_state={utility.STATE_KEY: {
            'seen': entries, 'confirmed_at': g.sample.timestamp - 60}})


def thrashing_scan():
    """A scan a little larger than its cache, reading 8 MiB/s.

    Every read a refault, every refault activated: its counters value its
    memory at 8 MiB/s per GiB of its active list.
    """
    return factory.guest(1, read_mb_s=8.0, refault_s=factory.pages_s(8.0),
                         activate_s=factory.pages_s(8.0))


class TestMeasurementMemory(testtools.TestCase):
    """Measurements kept per size in the guests' policy state."""

    def setUp(self):
        super().setUp()
        # 1.7 MiB/s per GiB against 0.11: memory moves to the taker.
        self.taker = factory.guest(1, read_mb_s=2.0,
                                   refault_s=factory.pages_s(2.0),
                                   activate_s=factory.pages_s(1.5),
                                   read_since_boot_mb=factory.READ_FAR_MB)
        self.donor = factory.guest(2, read_mb_s=0.5,
                                   refault_s=factory.pages_s(0.3),
                                   activate_s=factory.pages_s(0.1))
        self.now = self.donor.sample.timestamp

    def seen(self, size, per_gib, length, age=60, disk=0.5, count=3):
        """A stored measurement, as the policy state holds it.

        By default it read what the donor reads now (0.5 MiB/s): of the
        same workload (mrc.of_this_phase).
        """
        return (size, per_gib, length, self.now - age, disk, count)

    def deltas(self, donor, taker=None):
        plan = utility.plan(factory.host([taker or self.taker, donor]), CFG)
        return {m.instance: m.delta_mb for m in plan.moves}

    def test_memory_seen_worth_more_below_is_not_given_back(self):
        self.assertLess(self.deltas(self.donor)[self.donor.uuid], 0)
        # At 1920 MiB the next 400 MiB were worth 4 MiB/s per GiB: the
        # donor's last 128 MiB are worth that, not today's 0.11.
        knee = remembering(self.donor, self.seen(1920, 4.0, 400))
        self.assertEqual({}, self.deltas(knee))
        # A measurement whose range ends below what would be given says
        # nothing about it.
        below = remembering(self.donor, self.seen(1024, 4.0, 400))
        self.assertLess(self.deltas(below)[self.donor.uuid], 0)

    def test_a_move_stops_where_remembered_value_begins(self):
        # Memory down to 1792 MiB is cheap; below it was seen worth more.
        knee = remembering(self.donor, self.seen(1600, 4.0, 192, disk=0.9))
        self.assertEqual(-256, self.deltas(knee)[self.donor.uuid])

    def test_disk_reads_measured_smaller_price_the_memory_given(self):
        # At 1792 MiB the donor read 1.0 MiB/s more than now (0.5): the
        # 256 MiB in between saved 4 MiB/s per GiB.
        smaller = remembering(self.donor, self.seen(1792, 0.0, 64, disk=1.5))
        self.assertGreaterEqual(
            self.deltas(smaller).get(self.donor.uuid, 0), 0)
        # Measured as cheap there, the memory goes.
        cheap = remembering(self.donor, self.seen(1792, 0.0, 64, disk=0.52))
        self.assertLess(self.deltas(cheap)[self.donor.uuid], 0)
        # Measured dearer than its counters say, but below the taker's
        # value: the host's figure priced the move.
        dearer = remembering(self.donor, self.seen(1792, 0.0, 64, disk=0.6))
        plan = utility.plan(factory.host([self.taker, dearer]), CFG)
        self.assertIn('(host-measured)', plan.moves[0].reason)

    def test_reads_within_their_windows_spread_price_nothing(self):
        # One window at 1792 MiB read 1.1 MiB/s, 0.6 more than now: 2.4
        # MiB/s per GiB between, more than the taker's 1.7: it gives
        # nothing.
        def measured(square):
            return remembering(
                self.donor, self.seen(1792, 0.0, 64, disk=1.1, count=1),
                self.seen(2048, 0.0, 64, count=3) + (None, square))
        steady = measured(0.25)
        self.assertGreaterEqual(
            self.deltas(steady).get(self.donor.uuid, 0), 0)
        # But its windows at 2048 MiB read 0.5 MiB/s on average with a
        # standard deviation of 1.0 (a mean square of 1.25): a difference
        # of 0.6 is within one standard error of that (1.0 x (1/1 +
        # 1/4)^0.5), no evidence of a slope, and the memory goes.
        spread = measured(1.25)
        self.assertLess(self.deltas(spread)[self.donor.uuid], 0)
        here, below = utility.value_curve(spread, CFG).seen[:2]
        self.assertAlmostEqual(1.0, here.window_sd())
        self.assertTrue(mrc.within_spread(here, below))
        self.assertGreater(below.slope_to(here), 0.0)

    def scan_seen(self, below_mb, below_per_gib):
        """A thrashing scan's measurements: here, and ``below_mb``.

        8.0 MiB/s at both, over three windows each; here its counters
        valued the memory above at 8 MiB/s per GiB, there at
        ``below_per_gib``.
        """
        return [[2048, 8.0, 1024, self.now - 60, 8.0, 3, None, 64.0],
                [below_mb, below_per_gib, 1024, self.now - 400, 8.0, 3,
                 None, 64.0]]

    def test_counters_a_near_step_belied_where_the_host_counted(self):
        # 192 MiB smaller it read as much, 8.0 MiB/s in each of three
        # windows.
        scan = thrashing_scan()
        entries = self.scan_seen(1856, 8.0)
        curve = utility.value_curve(host_counted(scan, (8.0, 0.0), entries),
                                    CFG)
        self.assertGreater(curve.loss_density * 1024, 7.0)
        # A step that near is noise, unless the host counted the window's
        # requests: 120,000 of them, whose chance could not hide the 0.75
        # MiB/s (half of what the counters promised) the step did not
        # save. What the host measured prices the memory.
        curve = utility.value_curve(host_counted(
            scan, (8.0, 2000.0), entries), CFG)
        self.assertEqual(0.0, curve.loss_density)
        # 1,200 would have hidden it: five standard deviations of their
        # chance are 0.88 MiB/s.
        curve = utility.value_curve(host_counted(scan, (8.0, 20.0), entries),
                                    CFG)
        self.assertGreater(curve.loss_density * 1024, 7.0)
        # So would windows that read 2 MiB/s apart (a standard error of
        # 1.5 MiB/s for the difference of the two means).
        entries[0][7] = 68.0
        curve = utility.value_curve(host_counted(
            scan, (8.0, 2000.0), entries), CFG)
        self.assertGreater(curve.loss_density * 1024, 7.0)

    def test_counters_now_belied_by_a_step_below(self):
        # 256 MiB smaller it read as much, in windows whose counters
        # priced nothing above it (a scan wrapping through what its active
        # list kept): they promised nothing the host could belie, but what
        # the counters promise now for the same step, 2 MiB/s, it did not
        # save. What the host measured prices the memory.
        scan = thrashing_scan()
        entries = self.scan_seen(1792, 0.0)
        curve = utility.value_curve(host_counted(scan, (8.0, 0.0), entries),
                                    CFG)
        self.assertEqual(0.0, curve.loss_density)
        # It read 1.6 MiB/s more there: the step saved what the counters
        # say, and they price the memory.
        entries[1][4] = 9.6
        curve = utility.value_curve(host_counted(scan, (8.0, 0.0), entries),
                                    CFG)
        self.assertGreater(curve.loss_density * 1024, 7.0)

    def test_growth_on_activations_a_step_below_belied(self):
        # Every read activated within its active list: the counters say
        # its next active list's worth saves all 8 MiB/s. 256 MiB smaller
        # it read as much: growing saves no more than that step did, so
        # its curve prices the next MiB at the step's slope (nothing). A
        # tenant that forges its counters so gets nothing by them. Its
        # refaults beyond the active list (none here) keep their price.
        scan = thrashing_scan()
        fresh = utility.value_curve(
            host_counted(scan, (8.0, 0.0), self.scan_seen(1792, 0.0)[:1]),
            CFG)
        self.assertGreater(fresh.gain(256), 1.0)
        belied = utility.value_curve(
            host_counted(scan, (8.0, 0.0), self.scan_seen(1792, 0.0)), CFG)
        self.assertEqual(0.0, belied.gain(256))
        # Where the step below saved what the activations promise over
        # it, they stand.
        entries = self.scan_seen(1792, 0.0)
        entries[1][4] = 9.6
        stands = utility.value_curve(
            host_counted(scan, (8.0, 0.0), entries), CFG)
        self.assertEqual(fresh.gain(256), stands.gain(256))

    def test_a_taker_nobody_serves_gives_what_the_host_belied(self):
        # The scan's counters make it the best taker (8 MiB/s per GiB),
        # but its neighbour is at its floor and cannot give: before, the
        # water-filling stopped there. The host measured the scan reading
        # as much 256 MiB smaller, so it gives to the next taker.
        entries = self.scan_seen(1792, 0.0)
        scan = thrashing_scan()
        # 1.6 MiB/s per GiB.
        taker = factory.guest(2, actual_mb=384, used_mb=256, read_mb_s=2.0,
                              refault_s=factory.pages_s(0.5),
                              activate_s=factory.pages_s(0.1))

        def plan(ram_mb=2432):
            return utility.plan(factory.host(
                [host_counted(scan, (8.0, 100.0), entries), taker],
                ram_mb=ram_mb), CFG)

        def deltas(ram_mb=2432):
            return {m.instance: m.delta_mb for m in plan(ram_mb).moves}
        moved = deltas()
        self.assertGreater(moved[taker.uuid], 0)
        self.assertEqual(-moved[taker.uuid], moved[scan.uuid])
        # The host's reads priced what the scan gave, and the reason says so.
        self.assertIn('(host-measured)', plan().moves[0].reason)
        # But 64 MiB larger it read nothing (random host 756): on a host
        # that could give it those 64 MiB, what it holds is its way there,
        # worth 8 MiB/s over all it holds above its floor (4.7 MiB/s per
        # GiB), more than the taker's 1.6. It keeps it, and takes the 64
        # MiB nobody holds.
        entries.append([2112, 0.0, 64, self.now - 200, 0.0, 3, None, 0.0])
        self.assertEqual({scan.uuid: 64}, deltas(ram_mb=2496))
        curve = utility.value_curve(host_counted(scan, (8.0, 100.0),
                                                 entries), CFG)
        self.assertTrue(curve.loss_belied)
        host = factory.host([host_counted(scan, (8.0, 100.0), entries),
                             taker], ram_mb=2496)
        priced = utility._on_the_way(host, CFG, {scan.uuid: curve})
        self.assertAlmostEqual(8.0 / (2112 - 384),
                               priced[scan.uuid].loss_density)
        # Where nothing more could ever come to it, it gives.
        self.assertGreater(deltas()[taker.uuid], 0)
        # Where the step below cost what the counters say, they stand:
        # nothing moves.
        entries[1][4] = 9.6
        self.assertEqual({}, deltas())

    def test_a_measurements_spread_is_kept_with_it(self):
        one = mrc.Seen(2048, 0.0, 64.0, 1000.0, 4.0)
        self.assertIsNone(one.window_sd())
        self.assertFalse(mrc.within_spread(one, one))
        two = one.merged(dataclasses.replace(one, timestamp=1060.0,
                                             disk_mb_s=6.0), 60.0)
        self.assertEqual(5.0, two.disk_mb_s)
        self.assertAlmostEqual(2.0 ** 0.5, two.window_sd())
        self.assertEqual(two, mrc.Seen.from_list(two.to_list()))
        self.assertEqual([None, 26.0], two.to_list()[6:])
        for bad in (-1.0, 'x', float('inf')):
            self.assertIsNone(mrc.Seen.from_list(two.to_list()[:7] + [bad]))

    def test_disk_reads_measured_larger_make_a_taker(self):
        # Its counters value it like the donor (0.11 MiB/s per GiB):
        # nothing moves...
        taker = factory.guest(1, read_mb_s=2.0,
                              refault_s=factory.pages_s(0.25),
                              activate_s=factory.pages_s(0.1))
        self.assertEqual({}, self.deltas(self.donor, taker))
        # ...but at 2304 MiB it read 0.5 MiB/s less: 2 MiB/s per GiB.
        was_larger = remembering(taker, self.seen(2304, 0.0, 64, disk=1.5))
        plan = utility.plan(factory.host([was_larger, self.donor]), CFG)
        moves = {m.instance: m for m in plan.moves}
        self.assertGreater(moves[was_larger.uuid].delta_mb, 0)
        # The host's reads at 2304 MiB decided it, and the reason says so.
        self.assertIn('(host-measured)', moves[was_larger.uuid].reason)
        self.assertIn('(host-measured)', moves[self.donor.uuid].reason)

    def test_a_measured_gain_outbids_a_thrashing_scan_s_claim(self):
        # At 2304 MiB the taker read 0.5 MiB/s less: 2 MiB/s per GiB,
        # host-measured. The donor refaults all it reads and its kernel
        # activates every refault: a scan a little larger than its cache,
        # whose counters alone price its memory at 1.83, within
        # value_band of that. The move goes, and the next window
        # measures the claim.
        taker = factory.guest(1, read_mb_s=2.0,
                              refault_s=factory.pages_s(0.25),
                              activate_s=factory.pages_s(0.1),
                              read_since_boot_mb=factory.READ_FAR_MB)
        measured = remembering(taker, self.seen(2304, 0.0, 64, disk=1.5))
        scan = factory.guest(2, read_mb_s=1.6,
                             refault_s=factory.pages_s(1.6),
                             activate_s=factory.pages_s(1.6))
        self.assertAlmostEqual(1.83, utility.value_curve(
            scan, CFG).loss_density * 1024, places=2)
        self.assertEqual(256, self.deltas(scan, measured)[measured.uuid])
        # The same claim from a guest that hits some of what it reads
        # (half its reads no refault): the band holds.
        hits = factory.guest(2, read_mb_s=3.0,
                             refault_s=factory.pages_s(1.6),
                             activate_s=factory.pages_s(1.6))
        self.assertEqual({}, self.deltas(hits, measured))

    def test_a_flat_step_before_refaulting_reads_is_a_cliff(self):
        # A scan over more than it can cache: every read is a refault, and
        # 512 MiB more saved nothing. The refaults say its data is within
        # the shadow entries' reach beyond that: the step to it is worth
        # what it saves per MiB, so the scan takes memory.
        scan = factory.guest(1, read_mb_s=10.0,
                             refault_s=factory.pages_s(10.0),
                             read_since_boot_mb=factory.READ_FAR_MB)
        flat = remembering(scan, self.seen(2560, 0.0, 64, disk=10.0))
        curve = utility.value_curve(flat, CFG)
        self.assertEqual(0.0, curve.density_at(0)[0])
        self.assertGreater(curve.hull_at(0)[0] * 1024, 0.5)
        self.assertGreater(self.deltas(self.donor, flat)[flat.uuid], 0)

    def test_sizes_that_read_as_much_put_the_cliff_beyond_them(self):
        # The same scan, measured 512 and 1536 MiB larger reading as much:
        # its reuse lies beyond 3584 MiB, and the memory up to there is
        # worth nothing. Where it may have no more than that, it gives:
        # what lies beyond what it may ever hold saves it nothing.
        def scan(max_mb):
            return remembering(
                factory.guest(1, max_mb=max_mb, read_mb_s=10.0,
                              refault_s=factory.pages_s(10.0)),
                self.seen(2560, 0.0, 64, disk=10.0),
                self.seen(3584, 0.0, 64, disk=10.0))
        curve = utility.value_curve(scan(4096), CFG)
        self.assertEqual(0.0, curve.gain(1536))
        self.assertGreater(curve.hull_at(0)[0], 0.0)
        self.assertEqual(0.0, curve.hull_at(0, 1536)[0])
        self.assertLess(self.deltas(self.donor, scan(3584))[
            self.taker.uuid], 0)

    def test_a_saving_the_refaults_do_not_bear_out_is_another_phase(self):
        # At 2304 MiB it read 1.5 MiB/s less than now, but only 0.1 MiB/s
        # of today's reads are refaults: that measurement was of another
        # workload, and prices nothing.
        taker = factory.guest(1, read_mb_s=2.0,
                              refault_s=factory.pages_s(0.1),
                              activate_s=factory.pages_s(0.1))
        was_other = remembering(taker, self.seen(2304, 0.0, 64, disk=0.5))
        self.assertEqual({}, self.deltas(self.donor, was_other))

    def test_beyond_its_shadows_a_saving_needs_no_refault(self):
        # The same reads from a 128 MiB cache: at 2304 MiB it saved misses
        # on pages evicted more than two file LRUs back, which its shadow
        # entries need not remember. The host's reads there price the way
        # back.
        taker = factory.guest(1, actual_mb=1024, used_mb=896, read_mb_s=2.0,
                              refault_s=factory.pages_s(0.1),
                              activate_s=factory.pages_s(0.1))
        counted = self.deltas(self.donor, taker)[taker.uuid]
        was_larger = remembering(taker, self.seen(2304, 0.0, 64, disk=0.5))
        plan = utility.plan(factory.host([was_larger, self.donor]), CFG)
        moves = {m.instance: m for m in plan.moves}
        self.assertGreater(moves[was_larger.uuid].delta_mb, counted)
        self.assertIn('(host-measured)', moves[was_larger.uuid].reason)

    def test_disk_reads_measured_larger_cap_an_overvalued_taker(self):
        # Refaults on nearly every miss (deep shadow entries) value the
        # taker at 1.7 MiB/s per GiB; at 2304 MiB it read only 0.05 MiB/s
        # less: 0.2 MiB/s per GiB, not worth the donor's 0.11 + band.
        was_larger = remembering(self.taker,
                                 self.seen(2304, 0.0, 64, disk=1.95))
        curve = utility.value_curve(was_larger, CFG)
        self.assertEqual(256, curve.segments[0][0])
        self.assertAlmostEqual(0.05 / 256 * 1024,
                               curve.segments[0][1] * 1024)
        self.assertEqual({}, self.deltas(self.donor, was_larger))

    def test_a_window_just_after_a_resize_is_an_echo(self):
        # The last plan saw the donor at 2304 MiB, 30 s before this
        # window began: it was shrunk since, and a window that starts
        # within settle_s of that is not clean (nor moved the other way).
        start = self.taker.previous.timestamp

        def sized(guest, size, at):
            return dataclasses.replace(guest, policy_state={
                utility.STATE_KEY: {'seen': [], 'size_mb': size, 'at': at}})
        echo = sized(self.taker, 2304, start - 30)
        curve = utility.value_curve(echo, CFG)
        self.assertEqual(-1, curve.resized)
        self.assertEqual((), curve.seen)
        self.assertEqual({}, self.deltas(self.donor, echo))
        # The change is kept, so later windows know it too...
        state = utility.plan(factory.host([echo, self.donor]), CFG
                             ).policy_state[echo.uuid][utility.STATE_KEY]
        self.assertEqual([start - 30, -1], state['last_resize'])
        self.assertEqual(2048, state['size_mb'])
        # ...until settle_s has passed before a window starts.
        settled = sized(self.taker, 2304, start - 61)
        self.assertEqual(0, utility.value_curve(settled, CFG).resized)
        self.assertGreater(self.deltas(self.donor, settled)[settled.uuid],
                           0)
        same = sized(self.taker, 2048, start - 30)
        self.assertEqual(0, utility.value_curve(same, CFG).resized)

    def test_old_or_corrupt_measurements_are_ignored(self):
        for entries in [(self.seen(1920, 4.0, 400, age=1801),),
                        (self.seen(1920, 4.0, 400, age=-60),),
                        (('x',), (1920, 'many', 400, self.now, 0.0, 3),
                         self.seen(-5, 4.0, 400),
                         self.seen(1920, 4.0, 0),
                         self.seen(1920, float('nan'), 400),
                         self.seen(1920, 4.0, 400, disk=float('inf')),
                         self.seen(1920, 4.0, 400, count=0),
                         self.seen(1920, 4.0, 400) + (-1.0,),
                         self.seen(1920, 4.0, 400) + ('busy',),
                         self.seen(1920, 4.0, 400)[:5])]:
            donor = remembering(self.donor, *entries)
            self.assertEqual((), mrc.remembered(donor,
                                                utility.UtilityParams()))
            self.assertLess(self.deltas(donor)[self.donor.uuid], 0)
        for state in ('junk', {'seen': 'junk'}, {'seen': None},
                      {'size_mb': 'x', 'at': 1.0},
                      {'size_mb': 2048, 'last_resize': [None, 7]},
                      {'last_resize': 'junk'}):
            donor = dataclasses.replace(
                self.donor, policy_state={utility.STATE_KEY: state})
            self.assertLess(self.deltas(donor)[self.donor.uuid], 0)

    def test_cpu_time_is_kept_with_a_measurement_when_measured(self):
        params = utility.UtilityParams()
        old = mrc.Seen.from_list(list(self.seen(1920, 4.0, 400)))
        self.assertIsNone(old.cpu_s)
        self.assertEqual(6, len(old.to_list()))
        new = mrc.Seen.from_list(list(self.seen(1920, 4.0, 400)) + [0.25])
        self.assertEqual(0.25, new.cpu_s)
        self.assertEqual(new, mrc.Seen.from_list(new.to_list()))
        later = dataclasses.replace(new, timestamp=new.timestamp + 60,
                                    cpu_s=0.75)
        self.assertAlmostEqual((0.25 * 3 + 0.75) / 4,
                               new.merged(later, 60.0).cpu_s)
        self.assertEqual(0.75, old.merged(later, 60.0).cpu_s)
        self.assertEqual(2, len(mrc.remembered(
            remembering(self.donor, old.to_list(),
                        dataclasses.replace(new, size_mb=1536).to_list()),
            params)))

    def test_measurements_at_one_size_are_averaged(self):
        # One window's 0.11 MiB/s per GiB joins three earlier 1.0s.
        # (At 1536 MiB it read 1.2 MiB/s: the step to 2048 saved what its
        # counters promised there, so they keep shaping its curve.)
        donor = remembering(self.donor, self.seen(2048, 1.0, 896),
                            self.seen(1536, 2.0, 700, age=600, count=1,
                                      disk=1.2))
        curve = utility.value_curve(donor, CFG)
        mean = (3 * 1.0 + 0.1 / 896 * 1024) / 4
        self.assertAlmostEqual(mean, curve.segments[0][1] * 1024, places=3)
        plan = utility.plan(factory.host([self.taker, donor]), CFG)
        [latest, other] = plan.policy_state[donor.uuid][
            utility.STATE_KEY]['seen']
        # (and the mean square of its four windows' reads: no spread).
        self.assertEqual([2048, round(mean, 4), 896.0, self.now,
                          0.5, 4, None, 0.25], latest)
        self.assertEqual([1536, 2.0, 700.0, self.now - 600, 1.2, 1], other)
        # The mean weighs at most MAX_COUNT measurements.
        many = remembering(self.donor, self.seen(2048, 1.0, 896, count=500))
        [latest] = utility.plan(factory.host([self.taker, many]), CFG
                                ).policy_state[many.uuid][
            utility.STATE_KEY]['seen']
        self.assertEqual(mrc.MAX_COUNT + 1, latest[5])

    def test_overlapping_windows_weigh_what_they_add(self):
        # The last measurement here was 6 s ago and this window is 60 s
        # long: only a tenth of it is new, so it weighs a tenth.
        donor = remembering(self.donor, self.seen(2048, 1.0, 896, age=6,
                                                  count=1))
        [latest] = utility.plan(factory.host([self.taker, donor]), CFG
                                ).policy_state[donor.uuid][
            utility.STATE_KEY]['seen']
        new = 0.1 / 896 * 1024
        self.assertAlmostEqual((1.0 + 0.1 * new) / 1.1, latest[1], places=3)
        self.assertAlmostEqual(1.1, latest[5])
        # Nothing new (same time): the mean stays, the time moves on.
        same = remembering(self.donor, self.seen(2048, 1.0, 896, age=0,
                                                 count=2))
        [kept] = utility.plan(factory.host([self.taker, same]), CFG
                              ).policy_state[same.uuid][
            utility.STATE_KEY]['seen']
        self.assertEqual([2048, 1.0, 896.0, self.now, 0.5, 2], kept)

    def test_disk_reads_measured_just_above_are_noise(self):
        # 64 MiB above: a 0.5 MiB/s difference over so little memory is
        # not trusted (it would be 8 MiB/s per GiB).
        near = remembering(self.taker, self.seen(2112, 0.0, 64, disk=2.5))
        self.assertEqual(
            utility.value_curve(self.taker, CFG).segments,
            utility.value_curve(near, CFG).segments)

    def test_no_measurement_while_filling_or_resized(self):
        old = self.seen(1536, 2.0, 700, age=600, count=1)
        filling = remembering(factory.guest(2, active_mb=0, inactive_mb=100),
                              old)
        resized = remembering(shrunk_by(self.donor, 256), old)
        for guest in (filling, resized):
            plan = utility.plan(factory.host([self.taker, guest]), CFG)
            self.assertEqual([list(old)], plan.policy_state[
                guest.uuid][utility.STATE_KEY]['seen'])

    def test_kept_per_size_and_bounded(self):
        entries = [self.seen(512 + 64 * i, 1.0, 100, age=i, count=1)
                   for i in range(20)]
        plan = utility.plan(factory.host(
            [self.taker, remembering(self.donor, *entries)]), CFG)
        seen = plan.policy_state[self.donor.uuid][utility.STATE_KEY]['seen']
        self.assertEqual(mrc.MAX_SEEN, len(seen))
        self.assertEqual(2048, seen[0][0])


class TestMeasuredSmaller(testtools.TestCase):
    """Reads the host measured at a smaller size price what lies between."""

    def setUp(self):
        super().setUp()
        # Its data fits: no refaults, nearly all its cache active, and its
        # CPUs busy reading it (not idle).
        self.fits = TestWentIdle.running(
            factory.guest(2, active_mb=1536, inactive_mb=256), 0.5)
        self.now = self.fits.sample.timestamp
        # At 1536 MiB it read 1 MiB/s from disk: 2 MiB/s per GiB between.
        self.smaller = (1536, 0.0, 64, self.now - 300, 1.0, 3)

    def test_a_cache_that_fits_gives_down_to_where_it_was_measured(self):
        # Unmeasured, the active list is kept (a knee no refault priced).
        self.assertEqual(2048 - 256 - 1536 - 128, utility.value_curve(
            self.fits, CFG).donate_mb)
        measured = utility.value_curve(
            remembering(self.fits, self.smaller), CFG)
        self.assertEqual(512, measured.donate_mb)
        self.assertAlmostEqual(2.0, measured.loss_at(0, 64) * 1024)
        self.assertAlmostEqual(2.0, measured.loss_at(448, 64) * 1024)

    def test_only_a_taker_worth_more_gets_it(self):
        def deltas(taker_mb_s):
            taker = factory.guest(
                1, read_mb_s=taker_mb_s,
                refault_s=factory.pages_s(taker_mb_s),
                activate_s=factory.pages_s(0.75 * taker_mb_s),
                read_since_boot_mb=factory.READ_FAR_MB)
            plan = utility.plan(factory.host(
                [taker, remembering(self.fits, self.smaller)]), CFG)
            return {m.instance: (m.delta_mb, m.reason) for m in plan.moves}
        # 1.7 MiB/s per GiB: less than the 2 the host measured.
        self.assertEqual({}, deltas(2.0))
        # 6.9: all of it, priced by the host's reads.
        moves = deltas(8.0)
        self.assertEqual(-512, moves[self.fits.uuid][0])
        self.assertIn('(host-measured)', moves[self.fits.uuid][1])

    def test_a_filling_cache_gives_its_free_memory_for_nothing(self):
        filling = TestWentIdle.running(
            factory.guest(2, active_mb=500, inactive_mb=500), 0.5)
        filling = grown_cache(dataclasses.replace(
            filling, host_io=dataclasses.replace(
                filling.host_io, read_mb_s=0.1)), 0, 6)
        curve = utility.value_curve(remembering(filling, self.smaller), CFG)
        self.assertTrue(curve.filling)
        self.assertEqual(512, curve.donate_mb)
        self.assertEqual(0.0, curve.loss_at(0, 64))
        # Beyond its free memory: (1.0 - 0.1) MiB/s over 512 MiB.
        self.assertAlmostEqual(1.8, curve.loss_at(curve.free_mb, 64) * 1024)

    def test_memory_its_cache_left_unused_goes_first_for_nothing(self):
        # 768 MiB its cache (1024 MiB, all active) never filled, and it
        # reads nothing from disk: its data fits in 1280 MiB. At 1024 MiB
        # it read 2 MiB/s.
        fits = TestWentIdle.running(
            factory.guest(2, active_mb=1024, inactive_mb=0), 0.5)
        below = (1024, 0.0, 64, self.now - 300, 2.0, 3)
        curve = utility.value_curve(remembering(fits, below), CFG)
        self.assertEqual(768, curve.unused_mb)
        self.assertEqual(0.0, curve.loss_at(0, 768))
        # Below 1280 MiB: those 2 MiB/s over 256 MiB, not over 1024.
        self.assertAlmostEqual(8.0, curve.loss_at(768, 64) * 1024)
        # A cache growing into its free memory uses it: the chord runs to
        # its size, and only the free memory beyond the margin is free.
        growing = utility.value_curve(remembering(
            grown_cache(fits, 0, 64), below), CFG)
        self.assertEqual(0.0, growing.unused_mb)
        self.assertAlmostEqual(2.0, growing.loss_at(640, 64) * 1024)

    def test_not_what_an_idle_guest_read_before(self):
        # It reads nothing from its cache either: it went idle, and what it
        # read at 1536 MiB was of a workload that stopped.
        idle = TestWentIdle.running(self.fits, 0.005)
        curve = utility.value_curve(remembering(idle, self.smaller), CFG)
        self.assertTrue(curve.quiet)
        self.assertFalse(curve.priced_below)
        self.assertEqual(0.0, curve.loss_at(0, 64))

    def test_a_change_of_reads_at_this_size_forgets_the_rest(self):
        # At 2048 MiB it read 2 MiB/s, now 0.5: another workload, and
        # what was measured elsewhere was of the old one.
        donor = factory.guest(2, read_mb_s=0.5,
                              refault_s=factory.pages_s(0.3),
                              activate_s=factory.pages_s(0.1))
        old = remembering(donor, (2048, 1.0, 896, self.now - 60, 2.0, 3),
                          (1536, 2.0, 700, self.now - 600, 3.0, 3))
        seen = utility.value_curve(old, CFG).seen
        self.assertEqual([(2048, 0.5)],
                         [(x.size_mb, x.disk_mb_s) for x in seen])
        # The same reads: all kept.
        same = remembering(donor, (2048, 1.0, 896, self.now - 60, 0.5, 3),
                           (1536, 2.0, 700, self.now - 600, 3.0, 3))
        self.assertEqual(2, len(utility.value_curve(same, CFG).seen))

    def test_a_cache_refilling_after_a_grow_keeps_what_was_measured(self):
        # Grown back from 1536 MiB (3 MiB/s) to 2048 (nothing read there),
        # it re-reads what its shrink evicted while its cache fills: its
        # reads at this size moved, but stay below those measured smaller.
        # No new workload: what was measured stays, the cliff below too.
        def refilling(read_mb_s, direction=1):
            guest = grown_cache(factory.guest(2, read_mb_s=read_mb_s), 0)
            return dataclasses.replace(guest, policy_state={
                utility.STATE_KEY: {
                    'seen': [[2048, 0.0, 64, self.now - 600, 0.0, 3],
                             [1536, 2.0, 700, self.now - 900, 3.0, 3]],
                    'last_resize': [self.now - 300, direction]}})

        def sizes(guest):
            curve = utility.value_curve(guest, CFG)
            self.assertTrue(curve.filling)
            return sorted(x.size_mb for x in curve.seen)
        self.assertEqual([1536, 2048], sizes(refilling(0.5)))
        # And it bears them out: they outlive memory_s while it refills.
        self.assertEqual(self.now, utility.value_curve(
            refilling(0.5), CFG).borne_out[0])
        # Reading more than it did smaller, or after a shrink: another
        # workload, and all measured before goes.
        self.assertEqual([], sizes(refilling(3.5)))
        self.assertEqual([], sizes(refilling(0.5, direction=-1)))


class TestMeasurementsBorneOut(testtools.TestCase):
    """Measurements a clean window bears out outlive ``memory_s``."""

    def setUp(self):
        super().setUp()
        self.guest = TestWentIdle.running(
            factory.guest(2, active_mb=1536, inactive_mb=256), 0.5)
        self.now = self.guest.sample.timestamp
        self.params = utility.UtilityParams()
        # Taken longer than memory_s ago.
        self.old = (1536, 0.0, 64, self.now - self.params.memory_s - 60,
                    1.0, 3)

    def remembered(self, **state):
        guest = dataclasses.replace(self.guest, policy_state={
            utility.STATE_KEY: dict(state, seen=[list(self.old)])})
        return mrc.remembered(guest, self.params)

    def test_kept_while_borne_out(self):
        self.assertEqual((), self.remembered())
        self.assertEqual(1, len(self.remembered(confirmed_at=self.now - 60)))
        self.assertEqual((), self.remembered(
            confirmed_at=self.now - self.params.memory_s - 1))
        for junk in ('x', float('nan'), float('inf'), self.now + 60, None):
            self.assertEqual((), self.remembered(confirmed_at=junk), junk)

    def test_a_clean_window_bears_them_out(self):
        guest = dataclasses.replace(self.guest, policy_state={
            utility.STATE_KEY: {'seen': [list(self.old)],
                                'confirmed_at': self.now - 60}})
        plan = utility.plan(factory.host([guest]), CFG)
        state = plan.policy_state[guest.uuid][utility.STATE_KEY]
        self.assertEqual(self.now, state['confirmed_at'])
        self.assertEqual([1536, 2048], sorted(x[0] for x in state['seen']))
        # A window just after a resize bears out nothing.
        resized = shrunk_by(guest, 256)
        state = utility.plan(factory.host([resized]), CFG).policy_state[
            guest.uuid][utility.STATE_KEY]
        self.assertEqual(self.now - 60, state['confirmed_at'])

    def test_borne_out_only_as_far_as_a_window_could_belie(self):
        # The old measurement is at 1536 MiB. A window bore it out a
        # minute ago, and could have belied it up to some size.
        confirmed = self.now - 60
        self.assertEqual((), self.remembered(confirmed_at=confirmed,
                                             confirmed_mb=1472))
        for up_to_mb in (1536, 2048, None, 'x', True, 10 ** 6):
            self.assertEqual(1, len(self.remembered(
                confirmed_at=confirmed, confirmed_mb=up_to_mb)), up_to_mb)

    def test_a_small_cache_bears_out_no_larger_size_than_it_could_belie(self):
        # 640 MiB with 128 MiB of cache, reading all it reads from disk:
        # what a scan longer than that would re-read, no refault shows.
        # Its cache and two more LRUs of shadow entries reach 896 MiB.
        small = dataclasses.replace(
            factory.guest(2, actual_mb=640, used_mb=512, read_mb_s=4.0),
            policy_state={utility.STATE_KEY: {
                'seen': [[640, 0.0, 64, self.now - 900, 4.0, 3],
                         [896, 0.0, 64, self.now - 900, 4.0, 3],
                         [2048, 0.0, 64, self.now - 900, 4.0, 3]],
                'confirmed_at': self.now - 60}})
        self.assertEqual(896, mrc.borne_out_mb(small))
        state = utility.plan(factory.host([small]), CFG).policy_state[
            small.uuid][utility.STATE_KEY]
        self.assertEqual((small.sample.timestamp, 896),
                         (state['confirmed_at'], state['confirmed_mb']))
        self.assertEqual([640, 896, 2048],
                         sorted(x[0] for x in state['seen']))
        # Once memory_s has passed since it was taken, the measurement at
        # 2 GiB is forgotten; those the window could belie are kept.
        later = dataclasses.replace(
            small, policy_state={utility.STATE_KEY: state},
            sample=dataclasses.replace(small.sample, timestamp=(
                self.now - 900 + self.params.memory_s + 1)))
        self.assertEqual([640, 896], sorted(
            x.size_mb for x in mrc.remembered(later, self.params)))
        # Never beyond its flavor memory.
        self.assertEqual(768, mrc.borne_out_mb(dataclasses.replace(
            small, max_mb=768)))


class TestNearMeasurement(testtools.TestCase):
    """A measurement a granule above prices growing back when clear."""

    def curve(self, read_req_s):
        # Reads 1.0 MiB/s at 2048 MiB, all refaults; 64 MiB larger it
        # read half as much, ten windows at each size.
        guest = factory.guest(2, read_mb_s=1.0, refault_s=factory.pages_s(
            1.0))
        now = guest.sample.timestamp
        return utility.value_curve(host_counted(guest, (1.0, read_req_s), [
            [2048, 0.0, 64, now - 120, 1.0, 9],
            [2112, 0.0, 64, now - 700, 0.5, 10]]), CFG)

    def test_enough_requests_price_the_step(self):
        # 960 requests a window: the halving is many times the noise, and
        # the 64 MiB step saved 0.5 MiB/s (8 MiB/s per GiB).
        curve = self.curve(16.0)
        self.assertEqual(64, curve.segments[0][0])
        self.assertAlmostEqual(0.5 / 64, curve.segments[0][1])
        self.assertEqual(64, curve.measured_mb)

    def test_few_requests_or_none_leave_it_to_the_counters(self):
        # Six requests a window could read half as much by chance; without
        # the host's count nothing says how noisy the reads are.
        for read_req_s in (0.1, 0.0):
            curve = self.curve(read_req_s)
            self.assertEqual(0.0, curve.measured_mb, read_req_s)
            self.assertNotEqual(64, curve.segments[0][0], read_req_s)


class TestPhaseChangeByChance(testtools.TestCase):
    """Larger sizes that read more than chance allows are of another phase."""

    def curve(self, read_req_s):
        # It reads 5.05 MiB/s at 512 MiB, most of it refaults: a hot set
        # larger than its cache. At 704 and 1,152 MiB it read 5.9, ten
        # windows each, when it read a uniform range of 32 GiB.
        guest = factory.guest(2, actual_mb=512, active_mb=64,
                              inactive_mb=64, read_mb_s=5.05,
                              refault_s=factory.pages_s(3.2),
                              activate_s=factory.pages_s(0.5))
        now = guest.sample.timestamp
        return utility.value_curve(host_counted(guest, (5.05, read_req_s), [
            [512, 5.2, 128, now - 60, 5.2, 10],
            [704, 0.2, 600, now - 900, 5.94, 10],
            [1152, 0.1, 160, now - 1200, 5.83, 10]]), CFG)

    def test_reads_more_with_more_by_more_than_chance_drop(self):
        # 300 requests a window, ten windows each: 0.9 MiB/s more at 704
        # MiB is about six standard deviations of chance, though less
        # than half its reads. The old workload's flat curve no longer
        # prices growing (random host 1067 kept its guest at 512 MiB for
        # 80 minutes on it, and read 2.1x static).
        counted = self.curve(5.0)
        self.assertEqual([512], [x.size_mb for x in counted.seen])
        self.assertGreater(counted.density_at(0)[0], 0.0)
        # Without the host's count of requests, only moves of more than
        # half the reads tell.
        uncounted = self.curve(0.0)
        self.assertEqual([512, 704, 1152],
                         [x.size_mb for x in uncounted.seen])
        self.assertEqual(0.0, uncounted.density_at(0)[0])


class TestProbe(testtools.TestCase):
    """Where measured reads say more than the counters: one granule."""

    def setUp(self):
        super().setUp()
        # Both guests' counters say 0.11 MiB/s per GiB: nothing moves.
        self.hot = factory.guest(1, read_mb_s=2.0,
                                 refault_s=factory.pages_s(0.3),
                                 activate_s=factory.pages_s(0.1))
        self.other = factory.guest(2, read_mb_s=0.5,
                                   refault_s=factory.pages_s(0.3),
                                   activate_s=factory.pages_s(0.1))
        self.now = self.hot.sample.timestamp

    # A host its guests fill; the stream probes' has memory nobody holds,
    # which a stream (worth nothing yet) does not take: their steps are
    # not cut short by what the host could ever give.
    ram_mb = None

    def plan(self, hot):
        return utility.plan(factory.host([hot, self.other],
                                         ram_mb=self.ram_mb), CFG)

    def measured(self, disk_below):
        """The hot guest measured at 1792 MiB, and now at 2048."""
        return remembering(
            self.hot, (2048, 0.0, 64, self.now - 60, 2.0, 3),
            (1792, 0.0, 64, self.now - 300, disk_below, 3))

    def test_reads_that_fell_more_than_the_counters_say_are_probed(self):
        self.assertEqual([], self.plan(self.hot).moves)
        # 256 MiB more cut its reads by 1 MiB/s: 4 MiB/s per GiB, a hot
        # set larger than its active list. Twice that span goes to it, at
        # most a quarter of its cache (1,792 MiB): 448 MiB.
        moves = {m.instance: m for m in self.plan(self.measured(3.0)).moves}
        self.assertEqual(448, moves[self.hot.uuid].delta_mb)
        self.assertEqual(-448, moves[self.other.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[self.hot.uuid].reason)
        # Its cost, at most: the donor's 0.11 MiB/s per GiB for 448 MiB.
        self.assertIn('costs at most 0.050 MiB/s', moves[self.hot.uuid].reason)

    def test_a_probe_given_back_is_not_repeated_on_the_same_bound(self):
        plan = self.plan(self.measured(3.0))
        # The probe's step is kept with its bound (4 MiB/s per GiB).
        recorded = plan.policy_state[self.hot.uuid][utility.STATE_KEY]
        self.assertEqual([2048, 2496, 4.0 / 1024, self.now],
                         recorded[probe_memory.PROBED_KEY])

        def back_at_2048(bound_per_gib):
            hot = self.measured(3.0)
            hot.policy_state[utility.STATE_KEY][probe_memory.PROBED_KEY] = [
                2048, 2496, bound_per_gib / 1024, self.now - 120]
            return hot
        # It went back: the same slope, the same bound, no probe.
        self.assertEqual([], self.plan(back_at_2048(4.0)).moves)
        kept = utility.plan(factory.host([back_at_2048(4.0), self.other]),
                            CFG).policy_state[self.hot.uuid]
        self.assertEqual([2048, 4.0 / 1024, self.now],
                         kept[utility.STATE_KEY][probe_memory.BACK_KEY])
        # A bound half as large again is new evidence; a little more is
        # chance.
        self.assertEqual([], self.plan(back_at_2048(3.0)).moves)
        self.assertEqual(448, self.probed_mb(back_at_2048(2.5)))
        # Forgotten memory_s after it went back.
        hot = self.measured(3.0)
        hot.policy_state[utility.STATE_KEY][probe_memory.BACK_KEY] = [
            2048, 4.0 / 1024,
            self.now - utility.UtilityParams().memory_s - 60]
        self.assertEqual(448, self.probed_mb(hot))

    def probed_mb(self, hot):
        """MiB a probe gives ``hot`` this cycle."""
        return sum(m.delta_mb for m in probes_of(self.plan(hot))
                   if m.instance == hot.uuid)

    def test_an_explorer_left_with_no_moves_blocks_no_other(self):
        # A search whose plan the guards left empty: the probe after it
        # still takes its turn in the same cycle.
        def nothing(host, *args):
            return model.Plan(host.name)
        with mock.patch.object(flat_search, 'search', nothing):
            moves = self.plan(self.measured(3.0)).moves
        self.assertEqual({self.hot.uuid: 448, self.other.uuid: -448},
                         {m.instance: m.delta_mb for m in moves})

    def filled(self, **fill):
        """The hot guest, whose last fill saved ``fill`` per MiB."""
        return dataclasses.replace(self.hot, policy_state={
            utility.STATE_KEY: fill})

    def test_a_fill_that_saved_more_than_the_counters_say_is_probed(self):
        # Never measured at another size, but its reads fell 1 MiB/s per
        # GiB as its cache filled, nine times what its counters value the
        # next MiB at: a granule.
        hot = self.filled(fill_slope=1.0 / 1024)
        moves = {m.instance: m for m in self.plan(hot).moves}
        self.assertEqual(64, moves[hot.uuid].delta_mb)
        self.assertEqual(-64, moves[self.other.uuid].delta_mb)
        self.assertIn('measured up to 1.000 MiB/s per GiB',
                      moves[hot.uuid].reason)
        # A last span within the noise: the whole fill from nearly empty.
        hot = self.filled(fill_slope=0.0, fill_mean=1.0 / 1024)
        self.assertEqual({hot.uuid: 64, self.other.uuid: -64},
                         {m.instance: m.delta_mb
                          for m in self.plan(hot).moves})
        # A fill that saved no more than the counters say: nothing.
        self.assertEqual(
            [], self.plan(self.filled(fill_slope=0.12 / 1024)).moves)
        # Measured 256 MiB smaller, reading as much: that decides.
        flat = self.measured(2.0)
        flat.policy_state[utility.STATE_KEY]['fill_slope'] = 1.0 / 1024
        self.assertEqual([], self.plan(flat).moves)

    def test_a_slope_still_falling_at_its_size_is_probed_a_granule(self):
        # This window read 1.7 MiB/s, 15% below the 2.0 measured at this
        # size before: its cache still fills over time at one size, and
        # the slope from 1,792 MiB is partly that. One granule only.
        self.hot = factory.guest(1, read_mb_s=1.7,
                                 refault_s=factory.pages_s(0.3),
                                 activate_s=factory.pages_s(0.1))
        moves = {m.instance: m.delta_mb
                 for m in self.plan(self.measured(3.0)).moves}
        self.assertEqual({self.hot.uuid: 64, self.other.uuid: -64}, moves)

    def refaulting_scan(self):
        """A scan a little larger than its cache, and its neighbour.

        Every read a refault, none within the active list. Spread over the
        shadow entries' reach its refaults are worth 0.4 MiB/s per GiB,
        less than the neighbour's 0.51: no water-filling.
        """
        self.other = factory.guest(2, read_mb_s=0.5,
                                   refault_s=factory.pages_s(0.45),
                                   activate_s=factory.pages_s(0.45))
        return factory.guest(1, read_mb_s=6.0,
                             refault_s=factory.pages_s(6.0))

    def test_reads_all_refaulting_beyond_the_active_list_are_probed(self):
        # Where the cliff is, the counters cannot say: a quarter of its
        # cache (1792 MiB) more is tried.
        scan = self.refaulting_scan()
        moves = {m.instance: m for m in self.plan(scan).moves}
        self.assertEqual(448, moves[scan.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[scan.uuid].reason)
        # Once a larger size was measured reading less, the cliff rule
        # prices it.
        tried = remembering(scan, (2048, 0.0, 64, self.now - 60, 6.0, 3),
                            (2560, 0.0, 64, self.now - 300, 1.0, 3))
        reasons = [m.reason for m in self.plan(tried).moves]
        self.assertFalse(any('probe' in r for r in reasons), reasons)
        # Activations mean reuse within its reach that the model prices.
        some = factory.guest(1, read_mb_s=6.0,
                             refault_s=factory.pages_s(6.0),
                             activate_s=factory.pages_s(1.0))
        self.assertFalse(any('probe' in m.reason
                             for m in self.plan(some).moves))

    def test_a_probe_steps_past_the_sizes_measured_reading_as_much(self):
        # Measured at 2560 MiB reading as much as at 2048: the cliff lies
        # beyond 2560 too, and a quarter of its cache (256 MiB) more than
        # that is tried.
        flat = remembering(self.refaulting_scan(),
                           (2048, 0.0, 64, self.now - 60, 6.0, 3),
                           (2560, 0.0, 64, self.now - 300, 6.0, 3))
        moves = {m.instance: m for m in self.plan(flat).moves}
        self.assertEqual(768, moves[flat.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[flat.uuid].reason)
        # Not where that costs its donors more than a share of its reads
        # (here 0.386 MiB/s of its 6).
        with mock.patch.object(probes, 'FLAT_ABOVE_COST_SHARE', 0.05):
            self.assertEqual([], probes_of(self.plan(flat)))
        self.assertTrue(probes._past_flat_sizes(
            utility.value_curve(flat, CFG)))
        # That cap is for a cliff nothing placed: a reader that re-reads
        # within its active list, measured larger, is probed as before.
        hot = remembering(
            factory.guest(1, read_mb_s=6.0, refault_s=factory.pages_s(6.0),
                          activate_s=factory.pages_s(3.0)),
            (2560, 0.0, 64, self.now - 300, 6.0, 3))
        self.assertFalse(probes._past_flat_sizes(
            utility.value_curve(hot, CFG)))
        # Nor where it may not grow past 2560 MiB this cycle.
        cfg = dataclasses.replace(CFG, max_step_mb=512)
        plan = utility.plan(factory.host([flat, self.other]), cfg)
        self.assertEqual([], probes_of(plan))

    def test_no_probe_on_the_window_a_new_workload_began(self):
        # The scan above read 14 MiB/s at this size a minute ago, and 6
        # now: a new workload, whose data is replacing the old one's in
        # its cache. That window measures the turn, not the new curve:
        # no probe on it.
        scan = self.refaulting_scan()

        def measured(reads_mb_s, **state):
            return dataclasses.replace(scan, policy_state={
                utility.STATE_KEY: dict(state, seen=[[
                    scan.actual_mb, 0.0, 64, self.now - 60, reads_mb_s,
                    3]])})
        plan = self.plan(measured(14.0))
        self.assertEqual(self.now, plan.policy_state[scan.uuid][
            utility.STATE_KEY]['phase_at'])
        self.assertEqual([], plan.moves)
        # Nor where the old one read less (1 MiB/s).
        self.assertEqual([], self.plan(measured(1.0)).moves)
        # A window later, reading as much: the probe.
        settled = measured(6.0, phase_at=self.now - 60)
        moves = {m.instance: m for m in self.plan(settled).moves}
        self.assertEqual(448, moves[scan.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[scan.uuid].reason)

    def test_reads_all_refaulting_within_the_active_list_are_probed(self):
        # Every read a refault, every refault activated: each re-reads a
        # page evicted fewer evictions ago than its active list (1,536
        # MiB) holds. A scan a little larger than its cache cycling
        # through the active list an old hot set filled: the model
        # spreads its 6 MiB/s over all that list (4 MiB/s per GiB, less
        # than the neighbour's measured 4.6), while its cliff may be a
        # granule away. A quarter of its cache is tried.
        scan = factory.guest(1, active_mb=1536, inactive_mb=256,
                             read_mb_s=6.0, refault_s=factory.pages_s(6.0),
                             activate_s=factory.pages_s(6.0))
        fits = remembering(
            factory.guest(2, active_mb=1792, inactive_mb=0),
            (2048, 0.0, 64, self.now - 60, 0.0, 3),
            (1152, 0.0, 64, self.now - 900, 4.0, 3))
        moves = {m.instance: m for m in utility.plan(
            factory.host([scan, fits]), CFG).moves}
        self.assertEqual(448, moves[scan.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[scan.uuid].reason)
        # A hot set the cache holds leaves its cold reads un-activated.
        cold = factory.guest(1, active_mb=1536, inactive_mb=256,
                             read_mb_s=6.0, refault_s=factory.pages_s(6.0),
                             activate_s=factory.pages_s(3.0))
        self.assertFalse(any('probe' in m.reason for m in utility.plan(
            factory.host([cold, fits]), CFG).moves))
        # With a 512 MiB active list, measured reading as much 640 MiB
        # smaller: the claim was tried there (within its active list's
        # size more its reads would end), the host belied it, and no
        # probe follows (a tenant that forged its counters so was probed
        # from 1,536 to 2,432 MiB). 320 MiB smaller: it may still be.
        short = factory.guest(1, active_mb=512, inactive_mb=1280,
                              read_mb_s=6.0, refault_s=factory.pages_s(6.0),
                              activate_s=factory.pages_s(6.0))

        def probed(below_mb):
            tried = remembering(
                short, (2048, 0.0, 64, self.now - 60, 6.0, 3),
                (below_mb, 0.0, 64, self.now - 600, 6.0, 3))
            return any('probe' in m.reason for m in utility.plan(
                factory.host([tried, fits]), CFG).moves)
        self.assertFalse(probed(1408))
        self.assertTrue(probed(1728))

    def test_a_stream_too_small_to_show_a_re_read_is_probed(self):
        self.ram_mb = 8192
        # 4 MiB/s read from disk, not one refault, from a 128 MiB file
        # LRU: with its shadows it remembers 384 MiB of evictions, where
        # it could cache 3,840 MiB (its maximum less its used memory). A
        # scan of a GiB looks just like that from there. A step toward
        # 1,280 MiB of file LRU goes to it from memory nobody uses: the
        # free memory of an idle neighbour.
        stream = factory.guest(1, actual_mb=384, active_mb=0,
                               inactive_mb=128, read_mb_s=4.0,
                               read_since_boot_mb=40000)
        self.other = factory.guest(2, active_mb=0, inactive_mb=0)
        moves = {m.instance: m for m in self.plan(stream).moves}
        self.assertEqual(1152, moves[stream.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[stream.uuid].reason)
        self.assertIn('too small to show a re-read',
                      moves[stream.uuid].reason)
        # Re-reading some of what it reads, it shows what it is.
        some = factory.guest(1, actual_mb=384, active_mb=0,
                             inactive_mb=128, read_mb_s=4.0,
                             refault_s=factory.pages_s(0.4),
                             read_since_boot_mb=40000)
        self.assertFalse(any('too small' in m.reason
                             for m in self.plan(some).moves))
        # So would a scan of all it could cache, from a 1,792 MiB LRU.
        large = factory.guest(1, active_mb=0, inactive_mb=1792,
                              read_mb_s=4.0, read_since_boot_mb=40000)
        self.assertFalse(any('too small' in m.reason
                             for m in self.plan(large).moves))
        # A neighbour that uses its memory gives none to a probe.
        self.other = factory.guest(2, read_mb_s=0.5,
                                   refault_s=factory.pages_s(0.3),
                                   activate_s=factory.pages_s(0.1))
        self.assertEqual([], probes_of(self.plan(stream)))

    def test_a_larger_size_bars_a_stream_probe_where_its_step_goes(self):
        self.ram_mb = 8192
        self.other = factory.guest(2, active_mb=0, inactive_mb=0)
        # The stream above: its step goes to 1,536 MiB.
        stream = factory.guest(1, actual_mb=384, active_mb=0,
                               inactive_mb=128, read_mb_s=4.0,
                               read_since_boot_mb=40000)

        def tried(guest, size_mb):
            return remembering(guest, (384, 0.0, 64, self.now - 60, 4.0, 3),
                               (size_mb, 0.0, 64, self.now - 300, 4.0, 3))
        # Measured there, reading as much: a stream, not probed again.
        self.assertFalse(any('probe' in m.reason
                             for m in self.plan(tried(stream, 1536)).moves))
        # Measured short of it, its shadows reached less far back than the
        # step's would: a scan longer than that is still unseen.
        self.assertEqual(1152, {m.instance: m.delta_mb for m in self.plan(
            tried(stream, 1152)).moves}[stream.uuid])
        # Re-reading a little of what it reads (0.5%, below FRESH_SHARE),
        # it reads random blocks over far more than it caches: any larger
        # size it was measured at bars it.
        sparse = factory.guest(1, actual_mb=384, active_mb=0,
                               inactive_mb=128, read_mb_s=4.0,
                               refault_s=factory.pages_s(0.02),
                               read_since_boot_mb=40000)
        self.assertEqual(1152, {m.instance: m.delta_mb for m in self.plan(
            sparse).moves}[sparse.uuid])
        self.assertFalse(any('probe' in m.reason
                             for m in self.plan(tried(sparse, 448)).moves))

    def test_a_new_workload_reading_like_a_stream_is_probed_once(self):
        # The stream above, beside a neighbour whose cache is in use (0.11
        # MiB/s per GiB): not probed while it has read like that since it
        # started, as a reader over a terabyte does.
        stream = factory.guest(1, actual_mb=384, active_mb=0,
                               inactive_mb=128, read_mb_s=4.0,
                               read_since_boot_mb=40000)
        self.assertEqual([], probes_of(self.plan(stream)))
        # Two minutes ago it read 0.5 MiB/s at this size: a new workload.
        # The step (toward what its shadows would reach of the 1,792 MiB
        # it could ever cache on this full host) costs the neighbour 0.05
        # MiB/s, less than a twentieth of the 4 it may save.
        changed = remembering(stream, (384, 0.0, 64, self.now - 120, 0.5, 3))
        plan = self.plan(changed)
        moves = {m.instance: m for m in plan.moves}
        self.assertEqual(448, moves[stream.uuid].delta_mb)
        self.assertIn('costs at most 0.050 MiB/s', moves[stream.uuid].reason)
        self.assertIn('too small to show a re-read',
                      moves[stream.uuid].reason)
        self.assertEqual(self.now, plan.policy_state[stream.uuid][
            utility.STATE_KEY]['phase_at'])

        def began(age_s):
            return dataclasses.replace(stream, policy_state={
                utility.STATE_KEY: {'phase_at': self.now - age_s}})
        self.assertTrue(self.plan(began(1800)).moves)
        # Once the larger size it was probed at is forgotten, so is its
        # workload's start: no second probe.
        self.assertEqual([], self.plan(began(1801)).moves)
        # From a neighbour the step would cost more (1.3 MiB/s), the
        # largest step that costs at most that twentieth: 64 MiB (0.11;
        # 128 would cost 0.21).
        self.other = factory.guest(2, read_mb_s=2.0,
                                   refault_s=factory.pages_s(2.0),
                                   activate_s=factory.pages_s(1.5))
        moves = {m.instance: m for m in self.plan(changed).moves}
        self.assertEqual(64, moves[stream.uuid].delta_mb)
        self.assertIn('costs at most 0.107 MiB/s', moves[stream.uuid].reason)
        # None from one whose every granule costs more.
        self.other = factory.guest(2, read_mb_s=8.0,
                                   refault_s=factory.pages_s(8.0),
                                   activate_s=factory.pages_s(6.0))
        self.assertEqual([], self.plan(changed).moves)

    def test_a_stream_probe_no_further_than_a_size_measured_is_not_made(self):
        # The new workload above, beside the neighbour whose granules
        # cost so much that its step is one granule (to 448 MiB); its
        # workload began five minutes ago.
        stream = factory.guest(1, actual_mb=384, active_mb=0,
                               inactive_mb=128, read_mb_s=4.0,
                               read_since_boot_mb=40000)
        self.other = factory.guest(2, read_mb_s=2.0,
                                   refault_s=factory.pages_s(2.0),
                                   activate_s=factory.pages_s(1.5))

        def began(*seen):
            return dataclasses.replace(stream, policy_state={
                utility.STATE_KEY: {'phase_at': self.now - 300,
                                    'seen': [list(e) for e in seen]}})
        self.assertEqual(64, {m.instance: m.delta_mb for m in self.plan(
            began()).moves}[stream.uuid])
        # Measured at 448 MiB since, reading as much: the granule would
        # measure that size again (random host 262: a 6 GiB scan was
        # probed time after time to sizes it had read as much at, from a
        # neighbour's cache that needed the memory).
        self.assertEqual([], self.plan(began(
            (448, 0.0, 64, self.now - 120, 4.0, 3))).moves)
        # Measured there a minute after it began: 240 MiB read, less than
        # that size's file LRU and shadows reach (3 x 192 MiB), so a scan
        # they would hold had not come round yet.
        self.assertEqual(64, {m.instance: m.delta_mb for m in self.plan(
            began((448, 0.0, 64, self.now - 240, 4.0, 3))).moves}[
                stream.uuid])

    def test_a_first_pass_past_its_shadows_is_a_new_workload(self):
        # The stream above, its reads as they were (no phase shows), but
        # its first pass began a few minutes ago: 1,200 MiB read since, no
        # re-read, where its shadows remember 9 file LRUs (1,152 MiB). A
        # reader of random blocks would have re-read some of that.
        stream = factory.guest(1, actual_mb=384, active_mb=0,
                               inactive_mb=128, read_mb_s=4.0,
                               read_since_boot_mb=40000)

        def in_pass(fresh_mb):
            return dataclasses.replace(stream, policy_state={
                utility.STATE_KEY: {'fresh_mb': fresh_mb}})
        moves = {m.instance: m for m in self.plan(in_pass(1200)).moves}
        self.assertEqual(448, moves[stream.uuid].delta_mb)
        self.assertIn('too small to show a re-read',
                      moves[stream.uuid].reason)
        # Short of its shadows' reach, it may still re-read.
        self.assertEqual([], probes_of(self.plan(in_pass(600))))
        # Begun longer ago than memory_s at its rate (7,200 MiB): probed
        # then, or a stream since; not now.
        self.assertEqual([], probes_of(self.plan(in_pass(7000))))

    def test_a_probe_takes_what_a_donor_can_give(self):
        # The step is a quarter of the scan's cache (448 MiB); the only
        # donor keeps its active list and may give 164 MiB: the probe
        # takes those granules and measures them all the same.
        scan = factory.guest(2, active_mb=100, inactive_mb=1692,
                             read_mb_s=2.0, refault_s=factory.pages_s(2.0),
                             read_since_boot_mb=20000)
        donor = factory.guest(1, max_mb=2048, active_mb=1500,
                              inactive_mb=292, read_mb_s=1.5,
                              refault_s=factory.pages_s(1.5),
                              activate_s=factory.pages_s(1.4))
        self.assertEqual(164, utility.value_curve(donor, CFG).donate_mb)
        moves = {m.instance: m for m in utility.plan(
            factory.host([donor, scan]), CFG).moves}
        self.assertEqual(128, moves[scan.uuid].delta_mb)
        self.assertEqual(-128, moves[donor.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[scan.uuid].reason)

    def test_a_probe_short_of_one_donor_takes_from_the_next(self):
        # The step is a quarter of the scan's cache (448 MiB); each donor
        # keeps its active list and may give 164 MiB. One donor's granules
        # alone could not reach a cliff a quarter of the cache away: the
        # next cheapest gives the rest it can.
        scan = factory.guest(3, active_mb=100, inactive_mb=1692,
                             read_mb_s=2.0, refault_s=factory.pages_s(2.0),
                             read_since_boot_mb=20000)
        donors = [factory.guest(n, max_mb=2048, active_mb=1500,
                                inactive_mb=292, read_mb_s=1.5,
                                refault_s=factory.pages_s(1.5),
                                activate_s=factory.pages_s(1.4))
                  for n in (1, 2)]
        moves = {m.instance: m for m in utility.plan(
            factory.host(donors + [scan]), CFG).moves}
        self.assertEqual(256, moves[scan.uuid].delta_mb)
        self.assertEqual([-128, -128], [moves[d.uuid].delta_mb
                                        for d in donors])
        self.assertIn('utility (probe)', moves[scan.uuid].reason)

    def test_steps_that_measured_no_fall_double_the_next(self):
        # A scan probed from 1536 to 2048 MiB read as much at both: its
        # cliff is beyond both, and the next step is the 512 MiB that
        # showed nothing, not a quarter of its cache (448).
        scan = factory.guest(1, max_mb=4096, read_mb_s=6.0,
                             refault_s=factory.pages_s(6.0),
                             read_since_boot_mb=20000)
        flat = remembering(scan, (2048, 0.0, 64, self.now - 60, 6.0, 3),
                           (1536, 0.0, 64, self.now - 300, 6.0, 3))
        self.other = factory.guest(2, read_mb_s=0.5,
                                   refault_s=factory.pages_s(0.45),
                                   activate_s=factory.pages_s(0.45))
        moves = {m.instance: m.delta_mb for m in self.plan(scan).moves}
        self.assertEqual(448, moves[scan.uuid])
        moves = {m.instance: m.delta_mb for m in self.plan(flat).moves}
        self.assertEqual(512, moves[scan.uuid])

    def test_memory_no_read_needs_goes_as_far_as_the_reads_last(self):
        # 256 MiB more cut the hot guest's reads from 3 to 2 MiB/s: at 4
        # MiB/s per GiB, its 2 MiB/s last 512 MiB more. A neighbour whose
        # CPUs idle and whose cache never filled its free memory loses
        # nothing by giving that: all 512 go at once, not a granule a
        # cycle, each waiting for the last to fill and be measured.
        idle = TestWentIdle.running(factory.guest(
            2, active_mb=256, inactive_mb=256, read_since_boot_mb=20000),
            0.005)
        self.assertGreaterEqual(utility.value_curve(idle, CFG).no_loss_mb,
                                512)
        plan = utility.plan(factory.host([self.measured(3.0), idle]), CFG)
        moves = {m.instance: m for m in plan.moves}
        self.assertEqual(512, moves[self.hot.uuid].delta_mb)
        self.assertEqual(-512, moves[idle.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[self.hot.uuid].reason)
        self.assertIn('costs at most 0.000 MiB/s', moves[self.hot.uuid].reason)
        # No more than the taker may grow: its flavor allows 256 MiB more,
        # and the donor gives those, not 512 the taker cannot hold.
        self.hot = dataclasses.replace(self.hot, max_mb=2304)
        moves = {m.instance: m.delta_mb for m in utility.plan(
            factory.host([self.measured(3.0), idle]), CFG).moves}
        self.assertEqual({self.hot.uuid: 256, idle.uuid: -256}, moves)
        # A donor whose memory some read needs gives no more than the
        # slope's own step: twice its span, within the taker's 256 MiB.
        self.assertEqual(256, {m.instance: m.delta_mb for m in self.plan(
            self.measured(3.0)).moves}[self.hot.uuid])

    def test_a_guest_whose_reads_ended_hides_no_probe(self):
        # The fitted guest's reads fell from 4 to 0 MiB/s over the 256
        # MiB below it: a steep slope, but it reads nothing now and can
        # save nothing more. The scan beside it is probed all the same.
        scan = factory.guest(1, read_mb_s=6.0,
                             refault_s=factory.pages_s(6.0),
                             read_since_boot_mb=20000)
        fitted = remembering(
            factory.guest(3, read_mb_s=0.0, read_since_boot_mb=20000),
            (2048, 0.0, 64, self.now - 60, 0.0, 3),
            (1792, 0.0, 64, self.now - 300, 4.0, 3))
        self.other = factory.guest(2, read_mb_s=0.5,
                                   refault_s=factory.pages_s(0.45),
                                   activate_s=factory.pages_s(0.45))
        moves = {m.instance: m for m in utility.plan(
            factory.host([scan, self.other, fitted]), CFG).moves}
        self.assertIn(scan.uuid, moves)
        self.assertNotIn(fitted.uuid, moves)
        self.assertIn('utility (probe)', moves[scan.uuid].reason)

    def test_a_slow_reader_filling_its_margin_gives_a_probe(self):
        # A scan whose cliff the counters cannot place, and a neighbour
        # whose cache holds all it reads (0.35 MiB/s, 20 MiB of the window
        # kept, no refault): still filling, so it gives the water-filling
        # only the free memory its reads will not fill soon, none here.
        # Its inactive list served nothing (no activation): a probe takes
        # it where it fills only its floor margin; where its cache never
        # filled 664 MiB beyond that margin, the probe takes those (nothing
        # reads them now).
        scan = factory.guest(1, read_mb_s=6.0,
                             refault_s=factory.pages_s(6.0),
                             read_since_boot_mb=20000)
        for active_mb, inactive_mb, free_mb in ((600, 1192, 0),
                                                (300, 700, 664)):
            slow = grown_cache(factory.guest(
                2, active_mb=active_mb, inactive_mb=inactive_mb,
                read_mb_s=0.35, read_since_boot_mb=20000), 0, grew_mb=20)
            curve = utility.value_curve(slow, CFG)
            self.assertEqual((True, free_mb, 0),
                             (curve.filling, curve.free_mb, curve.donate_mb))
            moves = {m.instance: m for m in utility.plan(
                factory.host([scan, slow]), CFG).moves}
            self.assertEqual(448, moves[scan.uuid].delta_mb)
            self.assertEqual(-448, moves[slow.uuid].delta_mb)
            self.assertIn('utility (probe)', moves[scan.uuid].reason)
            # Not while it may be a scan's first pass: its reuse has not
            # shown yet.
            first = grown_cache(factory.guest(
                2, active_mb=active_mb, inactive_mb=inactive_mb,
                read_mb_s=0.35), 0, grew_mb=20)
            self.assertTrue(utility.value_curve(first, CFG).first_pass)
            self.assertEqual([], utility.plan(
                factory.host([scan, first]), CFG).moves)

    def test_a_probe_saves_no_more_than_the_guest_reads(self):
        # Its reads fell from 0.5 to 0.01 MiB/s over the 256 MiB below:
        # 1.9 MiB/s per GiB, but 64 MiB more can save 0.01 MiB/s at most,
        # 0.16 per GiB: not worth the donor's 0.11 and the value band.
        fitted = factory.guest(1, read_mb_s=0.01)
        measured = remembering(
            fitted, (2048, 0.0, 64, self.now - 60, 0.01, 3),
            (1792, 0.0, 64, self.now - 300, 0.5, 3))
        self.assertEqual([], self.plan(measured).moves)
        # Reading 0.05 MiB/s (0.8 per GiB at most), it is probed: one
        # granule, not the slope's wider step, over which those 0.05 MiB/s
        # would save 0.11 per GiB, no more than the donor loses.
        reads = remembering(
            factory.guest(1, read_mb_s=0.05),
            (2048, 0.0, 64, self.now - 60, 0.05, 3),
            (1792, 0.0, 64, self.now - 300, 0.5, 3))
        moves = {m.instance: m for m in self.plan(reads).moves}
        self.assertIn('utility (probe)', moves[self.hot.uuid].reason)
        self.assertEqual(64, moves[self.hot.uuid].delta_mb)

    def test_a_scan_that_began_to_refault_prices_what_it_gives(self):
        # A third of its reads refault, none activated: a scan whose
        # first pass just ended, its reuse somewhere within its shadow
        # entries' reach. Shrunk, they would no longer reach it: what it
        # gives costs what a probe toward it is worth (2 MiB/s over a
        # quarter of its cache: 4.6 MiB/s per GiB, above the taker's
        # 1.1), though its refaults spread over that reach price its
        # memory far below the taker's.
        taker = factory.guest(1, read_mb_s=6.0,
                              refault_s=factory.pages_s(4.0),
                              activate_s=factory.pages_s(1.0))
        scan = factory.guest(2, read_mb_s=6.0,
                             refault_s=factory.pages_s(2.0),
                             read_since_boot_mb=20000)
        curve = utility.value_curve(scan, CFG)
        self.assertLess(curve.loss_at(0, 64) * 1024, 0.2)
        self.assertEqual([], utility.plan(
            factory.host([taker, scan]), CFG).moves)
        # Grown as far as it may, its reuse lies beyond what it can have:
        # it gives.
        largest = factory.guest(2, max_mb=2048, read_mb_s=6.0,
                                refault_s=factory.pages_s(2.0),
                                read_since_boot_mb=20000)
        moves = {m.instance: m.delta_mb for m in utility.plan(
            factory.host([taker, largest]), CFG).moves}
        self.assertLess(moves[largest.uuid], 0)
        # Re-reads within its cache too (activations, here a tenth of its
        # refaults or less): pages re-read by chance, as a uniform
        # reader's are a little beyond the shadow entries' reach. It gives.
        for activated_mb_s in (0.5, 0.18):
            uniform = factory.guest(2, read_mb_s=6.0,
                                    refault_s=factory.pages_s(2.0),
                                    activate_s=factory.pages_s(
                                        activated_mb_s),
                                    read_since_boot_mb=20000)
            moves = {m.instance: m.delta_mb for m in utility.plan(
                factory.host([taker, uniform]), CFG).moves}
            self.assertLess(moves[uniform.uuid], 0, activated_mb_s)

    def test_reads_that_did_not_fall_are_not_probed(self):
        self.assertEqual([], self.plan(self.measured(2.0)).moves)

    def test_reads_that_fell_within_their_noise_are_not_probed(self):
        # 2.15 MiB/s at 1792 MiB, 2.0 at 2048: 0.6 MiB/s per GiB, above
        # the donor's 0.11, but 7% of what it reads, within a disk rate's
        # noise (mrc.NOISE_SHARE): probes on such slopes go back and
        # forth between two guests.
        self.assertEqual([], self.plan(self.measured(2.15)).moves)
        moves = {m.instance: m for m in self.plan(self.measured(2.4)).moves}
        self.assertIn('utility (probe)', moves[self.hot.uuid].reason)

    def test_only_from_a_donor_whose_loss_is_lower(self):
        # 2 MiB/s per GiB measured; the other's counters say 2.2.
        worth = factory.guest(2, read_mb_s=3.0,
                              refault_s=factory.pages_s(1.93),
                              activate_s=factory.pages_s(1.93))
        self.assertEqual([], utility.plan(
            factory.host([self.measured(2.5), worth]), CFG).moves)


class TestActiveList(testtools.TestCase):
    """The active list is kept where it is a knee of the curve."""

    def test_a_hot_set_keeps_its_active_list(self):
        # Activations only: its re-reads are all within the active list.
        hot = factory.guest(1, read_mb_s=2.0, refault_s=factory.pages_s(1.0),
                            activate_s=factory.pages_s(1.0))
        curve = utility.value_curve(hot, CFG)
        self.assertEqual(2048 - 256 - 896 - 128, curve.donate_mb)

    def test_a_uniform_reader_gives_its_active_list_too(self):
        # Refaults beyond the active list as dense as those within it:
        # pages re-read by chance, worth what the rest is.
        uniform = factory.guest(1, read_mb_s=8.0,
                                refault_s=factory.pages_s(8.0),
                                activate_s=factory.pages_s(0.5))
        curve = utility.value_curve(uniform, CFG)
        self.assertEqual(2048 - 256 - 128, curve.donate_mb)


def since_phase(g, activated_pages, *entries):
    """``g`` whose workload began at ``activated_pages`` activations.

    Remembering ``entries`` too (see :func:`remembering`).
    """
    state = remembering(g, *entries).policy_state[utility.STATE_KEY]
    state[stale_active.BASE_KEY] = activated_pages
    return dataclasses.replace(g, policy_state={utility.STATE_KEY: state})


class TestUnreadActiveList(testtools.TestCase):
    """What an old phase left on the active list goes, a granule a cycle."""

    def setUp(self):
        super().setUp()
        # Reads nothing from disk and hits nothing on its inactive list: a
        # 512 MiB scan that fits, beside 118 MiB an old phase left on its
        # active list (630 MiB); 84 MiB inactive. It has activated nothing
        # since its workload changed.
        self.fits = factory.guest(2, actual_mb=1024, used_mb=256,
                                  active_mb=630, inactive_mb=84)
        self.stale = since_phase(self.fits, 0)
        self.taker = factory.guest(1, read_mb_s=1.0,
                                   refault_s=factory.pages_s(1.0),
                                   activate_s=factory.pages_s(0.5))

    def given(self, stale):
        plan = utility.plan(factory.host([self.taker, stale]), CFG)
        return {m.instance: m.delta_mb for m in plan.moves}

    def test_a_granule_goes_at_no_loss(self):
        # Its active list is the knee: 1024 - (256 + 630 + 128) kept.
        kept = utility.value_curve(self.stale, CFG)
        self.assertEqual((64, 64), (kept.donate_mb, kept.no_loss_mb))
        self.assertEqual(0.0, kept.loss_at(0, 64))
        self.assertEqual({self.stale.uuid: -64, self.taker.uuid: 64},
                         self.given(self.stale))
        # Its baseline stays in the policy state.
        plan = utility.plan(factory.host([self.taker, self.stale]), CFG)
        self.assertEqual(0, plan.policy_state[self.stale.uuid][
            utility.STATE_KEY][stale_active.BASE_KEY])

    def test_a_phase_change_begins_its_workload(self):
        # It read 0.5 MiB/s at this size two minutes ago, 4 now.
        changed = factory.guest(2, actual_mb=1024, read_mb_s=4.0)
        changed = dataclasses.replace(
            changed,
            previous=dataclasses.replace(changed.previous, pgactivate=123),
            sample=dataclasses.replace(changed.sample, pgactivate=123))
        changed = remembering(
            changed, (1024, 0.0, 64, changed.sample.timestamp - 120, 0.5, 3))
        plan = utility.plan(factory.host([self.taker, changed]), CFG)
        self.assertEqual(123, plan.policy_state[changed.uuid][
            utility.STATE_KEY][stale_active.BASE_KEY])
        self.assertNotIn(stale_active.BASE_KEY, plan.policy_state[
            self.taker.uuid][utility.STATE_KEY])

    def test_not_without_a_workload_seen_to_begin(self):
        # A slow scan that fits reads nothing and hits nothing for as long
        # as it passes over its active list: all it holds may be its own.
        curve = utility.value_curve(self.fits, CFG)
        self.assertLess(curve.no_loss_mb, 64)
        self.assertNotIn(self.fits.uuid, self.given(self.fits))

    def test_not_what_its_workload_activated(self):
        # 700 MiB activated since its workload began: 14 MiB of its file
        # LRU at most are the old workload's.
        busy = dataclasses.replace(self.fits, sample=dataclasses.replace(
            self.fits.sample, pgactivate=200000),
            previous=dataclasses.replace(self.fits.previous,
                                         pgactivate=200000))
        curve = utility.value_curve(since_phase(
            busy, 200000 - factory.pages_s(700)), CFG)
        self.assertLess(curve.no_loss_mb, 64)

    def test_whatever_a_past_window_measured_smaller(self):
        # At 832 MiB it read 4.5 MiB/s, in the window its phase changed.
        now = self.stale.sample.timestamp
        measured = since_phase(self.fits, 0, (832, 0.0, 64, now - 300, 4.5, 1))
        curve = utility.value_curve(measured, CFG)
        self.assertEqual(0.0, curve.loss_at(0, 64))
        self.assertGreater(curve.loss_at(64, 64) * 1024, 10.0)
        self.assertEqual(-64, self.given(measured)[self.stale.uuid])
        # Two that agree are a curve, and price it.
        curve = since_phase(self.fits, 0,
                            (768, 0.0, 64, now - 200, 6.0, 2),
                            (832, 0.0, 64, now - 300, 4.5, 1))
        self.assertLess(utility.value_curve(curve, CFG).no_loss_mb, 64)
        self.assertGreater(
            utility.value_curve(curve, CFG).loss_at(0, 64) * 1024, 10.0)
        self.assertNotIn(self.stale.uuid, self.given(curve))

    def test_not_from_a_guest_that_reads_or_hits_what_it_holds(self):
        def like_it(**kw):
            return since_phase(factory.guest(
                2, actual_mb=1024, **dict(dict(
                    used_mb=256, active_mb=630, inactive_mb=84), **kw)), 0)
        for busy in (
                since_phase(TestValueCurve._with_pgactivate(self.fits, 0.1),
                            0),
                like_it(read_mb_s=0.5),
                like_it(used_mb=308, inactive_mb=32),
                like_it(psi=25.0),
                grown_cache(self.stale, 0, grew_mb=84),
                shrunk_by(self.stale, 64)):
            # (54 MiB it never filled lose nothing either: no granule.)
            self.assertLess(utility.value_curve(busy, CFG).no_loss_mb, 64)
            self.assertNotIn(busy.uuid, self.given(busy))


class TestMemoryThatSavesNothingGoesBack(testtools.TestCase):
    """A guest whose host-measured reads did not fall when it grew."""

    def setUp(self):
        super().setUp()
        self.neighbour = factory.guest(2, read_mb_s=1.0,
                                       refault_s=factory.pages_s(0.5),
                                       activate_s=factory.pages_s(0.5),
                                       read_since_boot_mb=factory.READ_FAR_MB)

    def grown(self, **counters):
        """Grown from 2048 MiB to 2560; the host read 8 MiB/s at both."""
        g = factory.guest(1, actual_mb=2560, read_mb_s=8.0, **counters)
        now = g.sample.timestamp
        # What its counters said at each size: MiB/s per GiB over the
        # next 1024 MiB.
        said = 9.0 if counters else 0.0
        return remembering(g, (2560, said, 1024, now - 60, 8.0, 3),
                           (2048, said, 1024, now - 300, 8.0, 3))

    def given_back(self, guest):
        plan = utility.plan(factory.host([guest, self.neighbour]), CFG)
        return -sum(m.delta_mb for m in plan.moves
                    if m.instance == guest.uuid)

    def test_a_stream_or_direct_io_gives_it_back(self):
        # O_DIRECT or a stream: no refaults, reads unchanged.
        self.assertGreaterEqual(self.given_back(self.grown()), 512)

    def test_even_when_its_counters_claim_every_read_would_hit(self):
        # Its counters say every read was a refault within its active
        # list, within what the host measured, so the claims check
        # passes: they value its memory at three times the neighbour's
        # (0.57 MiB/s per GiB), but the host's reads at both sizes decide.
        claims = self.grown(refault_s=factory.pages_s(8.0),
                            activate_s=factory.pages_s(8.0))
        alone = remembering(
            claims, (2560, 9.0, 1024, claims.sample.timestamp - 60, 8.0, 3))
        self.assertGreater(
            utility.value_curve(alone, CFG).loss_density * 1024, 1.7)
        self.assertLessEqual(self.given_back(alone), 0)
        # The step from 2048 MiB saved nothing of what they promised.
        self.assertEqual(0.0, utility.value_curve(claims, CFG).loss_density)
        self.assertGreaterEqual(self.given_back(claims), 512)


class TestWentIdle(testtools.TestCase):
    """A guest that read at its size and now reads nothing."""

    def setUp(self):
        super().setUp()
        self.taker = factory.guest(1, read_mb_s=2.0,
                                   refault_s=factory.pages_s(2.0),
                                   activate_s=factory.pages_s(1.5),
                                   read_since_boot_mb=factory.READ_FAR_MB)
        # Reads nothing now; its active list is half its cache.
        self.quiet = factory.guest(2, active_mb=896, inactive_mb=896)
        self.now = self.quiet.sample.timestamp

    def given(self, quiet):
        plan = utility.plan(factory.host([self.taker, quiet]), CFG)
        return -sum(m.delta_mb for m in plan.moves
                    if m.instance == quiet.uuid), plan

    def test_its_cache_goes_when_it_stopped_reading(self):
        # At this size it read 3 MiB/s five minutes ago.
        was_busy = remembering(self.quiet,
                               (2048, 0.5, 896, self.now - 300, 3.0, 3))
        # All but its used memory and the margin may go, its active list
        # too; the taker's first segment (896 MiB) is what is worth it.
        self.assertEqual(2048 - 256 - 128,
                         utility.value_curve(was_busy, CFG).donate_mb)
        given, plan = self.given(was_busy)
        self.assertEqual(896, given)
        self.assertIn('(host-measured)', plan.moves[0].reason)
        state = plan.policy_state[was_busy.uuid][utility.STATE_KEY]
        self.assertEqual(self.now, state['idle_since'])
        # Its measurement prices nothing now but waits for its return,
        # borne out while it reads nothing (TestBackFromIdle).
        self.assertEqual((), utility.value_curve(was_busy, CFG).seen)
        self.assertEqual([2048], [x[0] for x in state['seen']])
        self.assertEqual(self.now, state['confirmed_at'])

    def test_a_scan_hitting_what_its_cache_kept_has_not_stopped(self):
        # At this size it read 3 MiB/s at 0.08 CPU s/s five minutes ago.
        # A window without a disk read at 0.06: the same work, its reads
        # hitting what its active list kept (a scan passing over it).
        was_busy = remembering(
            self.quiet, (2048, 0.5, 896, self.now - 300, 3.0, 3, 0.08))
        hitting = utility.value_curve(
            self.running(was_busy, 0.06), CFG)
        self.assertIsNone(hitting.idle_since)
        self.assertEqual(2048 - 256 - 896 - 128, hitting.donate_mb)
        # Its vCPUs idle (0.005, or 0.04 under TCG), or at a third of that
        # CPU time: it stopped.
        for cpu in (0.005, 0.04, 0.027):
            stopped = utility.value_curve(
                self.running(was_busy, cpu), CFG)
            self.assertEqual(self.now, stopped.idle_since, cpu)

    def test_a_guest_whose_data_fits_keeps_its_active_list(self):
        # It never read at this size once full: its data may fit.
        given, _ = self.given(self.quiet)
        self.assertLessEqual(given, 2048 - 256 - 896 - 128)

    @staticmethod
    def running(guest, cpu_s):
        """``guest`` with the host measuring it run ``cpu_s`` CPU s/s."""
        return dataclasses.replace(guest, host_io=host_io.HostIo(
            window_s=60.0, start_mb=guest.actual_mb, end_mb=guest.actual_mb,
            read_mb_s=0.0, read_req_s=0.0, cpu_s=cpu_s))

    def test_a_guest_whose_cpus_idle_gives_a_quarter_of_its_cache(self):
        # Its cache nearly all active: its data may fit, and is kept...
        fits = factory.guest(2, active_mb=1536, inactive_mb=256)
        kept = 2048 - 256 - 1536 - 128
        for cpu in (None, 0.5):
            self.assertEqual(kept, utility.value_curve(
                self.running(fits, cpu), CFG).donate_mb)
        # ...unless its CPUs were idle: nothing reads it, and a quarter of
        # its cache goes in one cycle (the next window measures the step).
        idle = self.running(fits, 0.005)
        self.assertEqual(1792 // 4,
                         utility.value_curve(idle, CFG).donate_mb)
        # A guest stalled on memory still gives nothing.
        stalled = self.running(factory.guest(2, active_mb=1536,
                                             inactive_mb=256, psi=25.0),
                               0.005)
        self.assertEqual(0, utility.value_curve(stalled, CFG).donate_mb)
        given, _ = self.given(idle)
        self.assertEqual(448, given)
        # Not its free memory and its cache at once: its free memory and
        # a quarter of the cache.
        roomy = self.running(factory.guest(2, active_mb=1024,
                                           inactive_mb=0), 0.005)
        free = 2048 - 256 - 1024 - 128
        self.assertEqual(free + 1024 // 4,
                         utility.value_curve(roomy, CFG).donate_mb)

    def test_a_quiet_guest_s_free_memory_and_step_cost_nothing(self):
        # Its cache never filled 792 MiB of it, and at 1536 MiB it was
        # measured worth 0.5 MiB/s per GiB up to 2432 MiB.
        roomy = remembering(factory.guest(2, active_mb=500, inactive_mb=500),
                            (1536, 0.5, 896, self.now - 300, 3.0, 3))
        # Busy, its cache growing into that memory.
        busy = utility.value_curve(
            grown_cache(self.running(roomy, 0.5), 0, 64), CFG)
        self.assertAlmostEqual(0.5, busy.loss_at(0, 64) * 1024)
        # Reading nothing, neither from disk nor from its cache: what its
        # cache never filled and a quarter of its cache (the step the next
        # window measures) are worth nothing now; beyond, as before.
        quiet = utility.value_curve(self.running(roomy, 0.005), CFG)
        self.assertEqual(664, quiet.free_mb)
        self.assertEqual(664 + 1000 // 4, quiet.no_loss_mb)
        self.assertEqual(0.0, quiet.loss_at(0, 664))
        self.assertEqual(0.0, quiet.loss_at(664, 250))
        self.assertGreater(quiet.loss_at(850, 128), 0.0)
        self.assertEqual(busy.loss_at(850, 128), quiet.loss_at(850, 128))

    def test_an_idle_guest_keeps_its_memory_from_a_taker_with_free(self):
        # Paper mode's steps would take from the idle guest, whose cache
        # utilization is low, for a guest still filling what it has.
        idle = self.running(factory.guest(2, active_mb=1536,
                                          inactive_mb=256,
                                          read_since_boot_mb=8192), 0.005)
        for inactive_mb, allowed in ((1024, False), (1536, True)):
            taker = factory.guest(1, active_mb=256, inactive_mb=inactive_mb,
                                  read_mb_s=1.0,
                                  refault_s=factory.pages_s(0.5),
                                  activate_s=factory.pages_s(0.4))
            curves = {g.uuid: utility.value_curve(g, CFG)
                      for g in (taker, idle)}
            self.assertEqual(allowed, utility._tie_allowed(
                curves[taker.uuid], curves[idle.uuid], (128, 128),
                utility.UtilityParams()), inactive_mb)

    def test_not_a_slow_reader_that_read_from_disk_when_smaller(self):
        fits = factory.guest(2, active_mb=1536, inactive_mb=256)
        # At 1536 MiB, running as little CPU, it read 1 MiB/s from disk: a
        # reader too slow for its CPU time to show, whose data fits here.
        slow = utility.value_curve(self.running(remembering(
            fits, (1536, 0.5, 512, self.now - 300, 1.0, 3, 0.004)), 0.005),
            CFG)
        self.assertFalse(slow.quiet)
        # What it gives is priced by those reads (1 MiB/s over 512 MiB),
        # not by the idle step.
        self.assertAlmostEqual(2.0, slow.loss_at(0, 64) * 1024)
        # Busy then, or idle and reading nothing: no such evidence.
        for then in ((1536, 0.5, 512, self.now - 300, 1.0, 3, 0.3),
                     (1536, 0.5, 512, self.now - 300, 0.0, 3, 0.004),
                     (1536, 0.5, 512, self.now - 300, 1.0, 3)):
            curve = utility.value_curve(self.running(
                remembering(fits, then), 0.005), CFG)
            self.assertTrue(curve.quiet, then)
            self.assertGreaterEqual(curve.donate_mb, 448, then)

    def test_idle_lasts_while_it_reads_nothing(self):
        idle = dataclasses.replace(self.quiet, policy_state={
            utility.STATE_KEY: {'idle_since': self.now - 600}})
        self.assertEqual(self.now - 600,
                         utility.value_curve(idle, CFG).idle_since)
        reading = dataclasses.replace(
            factory.guest(2, read_mb_s=1.0), policy_state=idle.policy_state)
        self.assertIsNone(utility.value_curve(reading, CFG).idle_since)
        # A corrupt state is not a time.
        for junk in ('nan', 'inf', None, [1]):
            corrupt = dataclasses.replace(self.quiet, policy_state={
                utility.STATE_KEY: {'idle_since': junk}})
            self.assertIsNone(utility.value_curve(corrupt, CFG).idle_since)


class TestBackFromIdle(testtools.TestCase):
    """Measurements from before an idle spell: for its return only."""

    def setUp(self):
        super().setUp()
        self.now = factory.guest(1).sample.timestamp
        # Before its 40 idle minutes it read 0.5 MiB/s at 1536 MiB; each
        # idle cycle bore that out, the last one a minute ago.
        self.before = (1536, 0.0, 64, self.now - 3000, 0.5, 3)
        self.state = {'seen': [list(self.before)],
                      'idle_since': self.now - 2400,
                      'confirmed_at': self.now - 60}

    def back(self, state, **counters):
        """Shrunk to 512 MiB while idle, it reads 3.5 MiB/s again."""
        guest = factory.guest(1, actual_mb=512, read_mb_s=3.5, **counters)
        return dataclasses.replace(guest, policy_state={
            utility.STATE_KEY: state})

    def test_the_same_workload_back_gets_what_it_read_less_with(self):
        # Its counters see little beyond its active list...
        counters = dict(refault_s=factory.pages_s(1.5),
                        activate_s=factory.pages_s(0.3))
        fresh = utility.value_curve(self.back({}, **counters), CFG)
        self.assertLess(fresh.gain(1024), 1.0)
        # ...but 1024 MiB more saved it 3 MiB/s before: that prices them.
        curve = utility.value_curve(self.back(self.state, **counters), CFG)
        self.assertAlmostEqual(3.0, curve.gain(1024), places=1)
        self.assertEqual(self.now - 2400, curve.resumed_from)
        self.assertEqual([512, 1536], [x.size_mb for x in curve.seen])

    def test_another_workload_is_not_slowed_by_them(self):
        # A small hot set: its counters value its first MiB far above the
        # chord to the old workload's size (3 MiB/s over 1 GiB).
        counters = dict(refault_s=factory.pages_s(3.0),
                        activate_s=factory.pages_s(2.9))
        fresh = utility.value_curve(self.back({}, **counters), CFG)
        curve = utility.value_curve(self.back(self.state, **counters), CFG)
        self.assertGreater(fresh.density_at(0)[0], 3.0 / 1024)
        self.assertEqual(fresh.density_at(0), curve.density_at(0))
        self.assertGreaterEqual(curve.gain(1024), fresh.gain(1024))

    def test_remembered_until_nothing_from_before_is_left(self):
        guest = self.back(self.state, refault_s=factory.pages_s(1.5),
                          activate_s=factory.pages_s(0.3))
        state = utility.plan(factory.host([guest]), CFG).policy_state[
            guest.uuid][utility.STATE_KEY]
        self.assertEqual(self.now - 2400, state['resumed_from'])
        self.assertNotIn('idle_since', state)
        newer = dict(state, seen=[x for x in state['seen']
                                  if x[3] > self.now - 2400])
        later = self.back(newer, refault_s=factory.pages_s(1.5))
        state = utility.plan(factory.host([later]), CFG).policy_state[
            guest.uuid][utility.STATE_KEY]
        self.assertNotIn('resumed_from', state)

    def test_back_at_its_old_size_the_measurement_there_prices_it(self):
        # Grown back to 1728 MiB, where it read 2.07 MiB/s before its idle
        # spell, from 896 MiB, where it read 3.87; its cache still fills
        # (reads 3 MiB/s now) and its counters see its inactive hits.
        filling = grown_cache(factory.guest(
            1, actual_mb=1728, active_mb=400, inactive_mb=400, read_mb_s=3.0,
            refault_s=factory.pages_s(1.0),
            activate_s=factory.pages_s(0.3)), 0, 180)
        below = [896, 0.0, 64, self.now - 300, 3.87, 3]
        before = [1728, 0.0, 64, self.now - 3000, 2.07, 3]

        def curve(*seen):
            return utility.value_curve(dataclasses.replace(
                filling, policy_state={utility.STATE_KEY: {
                    'seen': list(seen), 'resumed_from': self.now - 2400,
                    'confirmed_at': self.now - 60}}), CFG)

        back = curve(below, before)
        self.assertTrue(back.filling)
        self.assertEqual(1728, back.here.size_mb)
        # Its free memory is worth the chord between the two: 2.2 MiB/s
        # per GiB, not what the filling cache's counters say.
        self.assertAlmostEqual(2.2, back.loss_at(0, 64) * 1024, places=1)
        self.assertLess(curve(below).loss_at(0, 64) * 1024, 1.5)

    def test_what_it_gave_while_idle_comes_back_in_one_step(self):
        # Idle at 1,536 MiB (no reads, its CPUs idle too), it gave all but
        # 384 MiB; now it reads 4 MiB/s like a stream from a 128 MiB file
        # LRU, a scan that fits only in what it gave (random host 259).
        idle = dataclasses.replace(
            factory.guest(1, actual_mb=1536, active_mb=0, inactive_mb=0),
            host_io=host_io.HostIo(window_s=60.0, start_mb=1536,
                                   end_mb=1536, read_mb_s=0.0,
                                   read_req_s=0.0, cpu_s=0.001))
        self.assertEqual(1536, utility.value_curve(idle, CFG).lent_mb)
        woke = dataclasses.replace(
            factory.guest(1, actual_mb=384, active_mb=0, inactive_mb=128,
                          read_mb_s=4.0, read_since_boot_mb=100),
            policy_state={utility.STATE_KEY: {given_back.LENT_KEY: 1536}})
        donor = factory.guest(2, actual_mb=3712, read_mb_s=0.6,
                              refault_s=factory.pages_s(0.28),
                              activate_s=factory.pages_s(0.28))
        plan = utility.plan(factory.host([woke, donor]), CFG)
        moves = {m.instance: m for m in plan.moves}
        self.assertEqual(1152, moves[woke.uuid].delta_mb)
        self.assertIn('utility (probe)', moves[woke.uuid].reason)
        state = plan.policy_state[woke.uuid][utility.STATE_KEY]
        self.assertEqual([1536, 384], state[given_back.RESTORE_KEY])
        self.assertNotIn(given_back.LENT_KEY, state)

    def test_memory_a_fitted_cache_gave_is_not_lent(self):
        # It read nothing from disk, but its CPUs ran: its data fit, and
        # what went was measured to cost it nothing.
        fits = dataclasses.replace(
            factory.guest(1, actual_mb=1536),
            host_io=host_io.HostIo(window_s=60.0, start_mb=1536,
                                   end_mb=1536, read_mb_s=0.0,
                                   read_req_s=0.0, cpu_s=0.5))
        self.assertIsNone(utility.value_curve(fits, CFG).lent_mb)

    def test_upper_envelope(self):
        self.assertEqual(((64, 3.0), (192, 1.0), (768, 0.5)),
                         mrc._upper_envelope(((64, 3.0), (960, 0.5)),
                                             ((256, 1.0),)))
        self.assertEqual(((256, 1.0),),
                         mrc._upper_envelope(((256, 1.0),), ()))


class TestInactiveListHits(testtools.TestCase):
    """Hits on the inactive list price what shrinking it loses."""

    def test_a_hot_set_cycling_through_the_inactive_list_keeps_it(self):
        taker = factory.guest(1, read_mb_s=2.0,
                              refault_s=factory.pages_s(1.5),
                              activate_s=factory.pages_s(1.0))
        # No refault, no activation: its counters value it at nothing...
        hot = factory.guest(2, read_mb_s=0.2)
        self.assertEqual(0.0, utility.value_curve(hot, CFG).loss_density)
        self.assertTrue(utility.plan(factory.host([taker, hot]), CFG).moves)
        # ...but 4 MiB/s of its inactive pages (896 MiB) are hit again:
        # 4.6 MiB/s per GiB, more than the taker's 1.1 and the band.
        cycling = dataclasses.replace(hot, sample=dataclasses.replace(
            hot.sample, pgactivate=hot.previous.pgactivate
            + int(factory.pages_s(4.0) * 60)))
        curve = utility.value_curve(cycling, CFG)
        self.assertAlmostEqual(4.0 / 896 * 1024, curve.loss_density * 1024,
                               places=2)
        self.assertEqual([], utility.plan(factory.host([taker, cycling]),
                                          CFG).moves)

    def test_a_few_inactive_mib_say_little_of_the_rest(self):
        # All but 4 MiB of its cache is active: 0.03 MiB/s of hits there
        # is priced over a segment (64 MiB), not as 7.7 MiB/s per GiB.
        full = factory.guest(2, active_mb=1788, inactive_mb=4)
        hits = dataclasses.replace(full, sample=dataclasses.replace(
            full.sample, pgactivate=int(factory.pages_s(0.03) * 60)))
        self.assertAlmostEqual(
            0.03 / 64 * 1024,
            utility.value_curve(hits, CFG).loss_density * 1024, places=2)


class TestMemoryNobodyHolds(testtools.TestCase):
    """What the host may promise beyond what its guests hold."""

    def setUp(self):
        super().setUp()
        # Its next 512 MiB (all its flavor allows) save it reads; the
        # neighbour reads a stream, its cache worth nothing.
        self.taker = factory.guest(1, max_mb=2560, read_mb_s=2.0,
                                   refault_s=factory.pages_s(1.5),
                                   activate_s=factory.pages_s(1.0),
                                   read_since_boot_mb=factory.READ_FAR_MB)
        self.stream = factory.guest(2, active_mb=20, read_mb_s=8.0)

    def deltas(self, *others, ram_mb=None):
        guests = [self.taker, self.stream] + list(others)
        plan = utility.plan(factory.host(guests, ram_mb=ram_mb), CFG)
        return {m.instance: m.delta_mb for m in plan.moves}

    def test_a_taker_gets_it_before_any_neighbour_gives(self):
        # On a full host the stream gives what the taker gets (a step a
        # cycle: no reuse of its has shown yet).
        self.assertEqual({self.taker.uuid: 448, self.stream.uuid: -448},
                         self.deltas())
        self.assertEqual({self.taker.uuid: 512}, self.deltas(ram_mb=4608))
        # 256 MiB nobody holds go first; the stream gives the rest.
        self.assertEqual({self.taker.uuid: 512, self.stream.uuid: -256},
                         self.deltas(ram_mb=4352))

    def test_a_guest_it_would_save_nothing_gets_none(self):
        # A stream beside memory nobody holds: its reads would not fall.
        host = factory.host([self.stream], ram_mb=8192)
        self.assertEqual([], utility.plan(host, CFG).moves)

    def test_what_guests_outside_the_plan_hold_is_held(self):
        # A guest without data (or outside the audit's scope) is never
        # moved, but what it holds is not the host's to hand out.
        stranger = dataclasses.replace(factory.guest(3), sample=None,
                                       previous=None)
        self.assertFalse(stranger.has_data)
        self.assertEqual({self.taker.uuid: 448, self.stream.uuid: -448},
                         self.deltas(stranger, ram_mb=6144))
        # Nor what the host reserves.
        plan = utility.plan(factory.host(
            [self.taker, self.stream], ram_mb=4608, reserved_mb=512), CFG)
        self.assertEqual(0, sum(m.delta_mb for m in plan.moves))

    def test_not_to_a_guest_at_the_size_a_grow_that_cost_it_went_back_to(
            self):
        # It gave a grow back for reading more with it (grow_check): the
        # memory nobody holds does not take it there again while it keeps
        # that size; a neighbour's may, its loss weighed.
        def state(mb):
            return dataclasses.replace(self.taker, policy_state={
                utility.STATE_KEY: {grow_check.UNDONE_KEY: mb}})
        self.taker = state(2048)
        for ram_mb in (None, 4608):
            self.assertEqual({self.taker.uuid: 448, self.stream.uuid: -448},
                             self.deltas(ram_mb=ram_mb))
        plan = utility.plan(factory.host([self.taker, self.stream],
                                         ram_mb=4608), CFG)
        self.assertEqual(2048, plan.policy_state[self.taker.uuid][
            utility.STATE_KEY][grow_check.UNDONE_KEY])
        # Another size since, or junk: forgotten.
        for junk in (1536, True, '2048', -1, 10 ** 9):
            self.taker = state(junk)
            self.assertEqual({self.taker.uuid: 512},
                             self.deltas(ram_mb=4608), junk)


class TestNoFurtherThanTheDataItRead(testtools.TestCase):
    """A cache saves only re-reads of data the guest read before."""

    def test_a_woken_reader_takes_what_its_data_fills(self):
        # It read 300 MiB before this window and 480 in it: memory beyond
        # its used 256 MiB, those 780 and the floor margin holds nothing
        # it will read again, however its refaults price it; a stream's
        # cache, worth nothing, would give it all.
        def taken(read_since_boot_mb):
            return taken_beside_a_stream(factory.guest(
                1, actual_mb=1024, active_mb=300, inactive_mb=420,
                read_mb_s=8.0, refault_s=factory.pages_s(6.0),
                activate_s=factory.pages_s(4.0),
                read_since_boot_mb=read_since_boot_mb))
        room = 256 + 300 + 480 + CFG.floor_margin_mb - 1024
        self.assertEqual(room - room % 64, taken(300))
        # One that read far more since it booted takes what its curve is
        # worth.
        self.assertEqual(448, taken(factory.READ_FAR_MB))
