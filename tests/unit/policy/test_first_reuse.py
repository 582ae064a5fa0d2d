import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import first_reuse
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import scan_cliffs
from watcher_cams.policy import utility

CFG = guards.GuardConfig()


def window(read_mb_s, refault_mb_s=0.0, **kw):
    """(guest, its rates) over a 60 s window."""
    guest = factory.guest(1, read_mb_s=read_mb_s,
                          refault_s=factory.pages_s(refault_mb_s), **kw)
    return guest, model.rates(guest)


def after(reach, read_mb_s, refault_mb_s=0.0, **kw):
    guest, r = window(read_mb_s, refault_mb_s, **kw)
    return first_reuse.tracked(reach, guest, r, read_mb_s)


class TestTracked(testtools.TestCase):
    """The reach: what a guest read from a first pass's start to a re-read."""

    def test_a_scan_seen_from_its_first_window(self):
        # It re-read 5% of what it read since it booted: its first pass
        # began with the first window seen without a refault.
        guest, _ = window(6.0, read_since_boot_mb=4000)
        reread = factory.pages_s(200)
        guest = dataclasses.replace(
            guest, previous=dataclasses.replace(
                guest.previous, workingset_refault_file=reread),
            sample=dataclasses.replace(
                guest.sample, workingset_refault_file=reread))
        reach = first_reuse.tracked(first_reuse.Reach(), guest,
                                    model.rates(guest), 6.0)
        self.assertEqual(first_reuse.Reach(fresh_mb=360.0), reach)
        for _ in range(4):
            reach = after(reach, 6.0)
        self.assertEqual(1800.0, reach.fresh_mb)
        # A third of the next window re-reads: its first 240 MiB were new.
        reach = after(reach, 6.0, 2.0)
        self.assertEqual(first_reuse.Reach(reuse_mb=2040.0), reach)
        # It holds that while it re-reads, as a scan: confirmed.
        self.assertEqual(dataclasses.replace(reach, scanned_mb=2040.0),
                         after(reach, 6.0, 6.0))

    def test_a_first_pass_since_boot_counts_what_it_read_before(self):
        reach = after(first_reuse.Reach(), 6.0, read_since_boot_mb=900)
        self.assertEqual(1260.0, reach.fresh_mb)

    def test_a_pass_after_a_new_workload_counts_from_its_own_start(self):
        # Its reads showed a new workload at t=900; a few refaults since
        # ended the pass that began there. The pass that begins now counts
        # this window's reads alone, not the 5,800 MiB read since boot
        # (the old workload's; wide host 305: its reach went beyond the
        # flavor memory, and its memory was priced at nothing).
        guest, r = window(4.0, read_since_boot_mb=5800)
        guest = dataclasses.replace(guest, policy_state={
            utility.STATE_KEY: {'phase_at': 900.0}})
        reach = first_reuse.tracked(first_reuse.Reach(), guest, r, 4.0)
        self.assertEqual(first_reuse.Reach(fresh_mb=240.0), reach)

    def test_a_slow_window_counts_where_its_refaults_decide(self):
        # A 1 MiB/s scan reads 60 MiB a minute, less than WINDOW_MB: a
        # window that re-read none of it continues its first pass...
        reach = first_reuse.Reach(fresh_mb=2500.0)
        self.assertEqual(2560.0, after(reach, 1.0).fresh_mb)
        # ...one that re-read all of it ends the pass and places its reach,
        # confirmed: it re-read as a scan does.
        self.assertEqual(first_reuse.Reach(reuse_mb=2500.0,
                                           scanned_mb=2500.0),
                         after(reach, 1.0, 1.0))
        # A few refaults in so few reads decide nothing, nor do windows of
        # less than DECISIVE_MB.
        self.assertEqual(reach, after(reach, 1.0, 0.2))
        self.assertEqual(reach, after(reach, 0.2))
        self.assertEqual(reach, after(reach, 0.2, 0.2))

    def test_no_reach_within_the_cache_it_had(self):
        # A re-read needs an eviction first: re-reading as soon as its
        # cache (1,792 MiB) was full, it reads random blocks, or lies.
        for fresh_mb in (100.0, 1792 + 63):
            self.assertEqual(first_reuse.Reach(), after(
                first_reuse.Reach(fresh_mb=fresh_mb), 6.0, 6.0))
        self.assertEqual(1792 + 64, after(first_reuse.Reach(
            fresh_mb=1792 + 64), 6.0, 6.0).reuse_mb)

    def test_no_reach_beyond_what_its_shadows_remember(self):
        # Its file LRU (1,792 MiB) and shadow entries for eight more
        # (mrc.SHADOW_REACH) go back 16,128 MiB of evictions: a refault
        # re-reads a page read no longer ago. A "first pass" longer than
        # that (a stream since boot, then another workload) did not come
        # round: where it began is unknown, and it places no reach.
        lrus_mb = (1 + mrc.SHADOW_REACH) * 1792
        self.assertEqual(lrus_mb, after(first_reuse.Reach(
            fresh_mb=lrus_mb), 6.0, 6.0).reuse_mb)
        self.assertEqual(first_reuse.Reach(), after(
            first_reuse.Reach(fresh_mb=lrus_mb + 1), 6.0, 6.0))

    def test_a_grow_counts_the_pass_from_what_its_shadows_remembered(self):
        # 20,000 MiB read without a re-read: a scan whose reuse lies
        # beyond what a 128 MiB file LRU's shadows remember. Grown, its
        # first refault re-reads the oldest page they still remember:
        # counted from 128 MiB and SURE_SHADOW_LRUS to SHADOW_REACH LRUs
        # of shadows (384 to 1,152 MiB), not from the pass's start.
        guest, r = window(8.0, actual_mb=384, active_mb=0, inactive_mb=128)
        reach = first_reuse.tracked(first_reuse.Reach(fresh_mb=20000.0),
                                    guest, r, 8.0, resized=1)
        self.assertEqual(first_reuse.Reach(
            fresh_mb=20480.0, grown_mb=1632.0, slack_mb=768.0), reach)
        # At its first re-read (from a 448 MiB file LRU), the count from
        # the grow places the reach, an upper bound by at most the slack.
        self.assertEqual(first_reuse.Reach(
            reuse_mb=1632.0, scanned_mb=1632.0, slack_mb=768.0),
            after(reach, 8.0, 8.0, actual_mb=704, active_mb=0,
                  inactive_mb=448))
        # Counted from the start, it would lie beyond any shadows' reach.
        self.assertEqual(first_reuse.Reach(), after(
            dataclasses.replace(reach, grown_mb=None, slack_mb=None),
            8.0, 8.0, actual_mb=704, active_mb=0, inactive_mb=448))
        # Beyond its maximum (1,280 MiB for its cache) by less than the
        # slack: placed at it, what lies below it the slack that is left.
        self.assertEqual(first_reuse.Reach(
            reuse_mb=1280.0, scanned_mb=1280.0, slack_mb=416.0),
            after(reach, 8.0, 8.0, actual_mb=704, max_mb=1536, active_mb=0,
                  inactive_mb=448))
        # Beyond it by more: counted from its start, as with no grow.
        self.assertEqual(first_reuse.Reach(), after(
            reach, 8.0, 8.0, actual_mb=704, max_mb=1024, active_mb=0,
            inactive_mb=448))

    def test_the_window_that_places_a_reach_confirms_it_as_a_scan(self):
        # Its pass came round at the window's start: all it read then
        # refaulted, none activated. Waiting a window to see that again
        # kept the guest from giving for a minute (random host 23 read
        # 9.7 GiB more).
        fresh = first_reuse.Reach(fresh_mb=2500.0)
        self.assertEqual(first_reuse.Reach(reuse_mb=2500.0,
                                           scanned_mb=2500.0),
                         after(fresh, 6.0, 6.0))
        # It came round late in the window, or its re-reads activated (a
        # reader whose data partly fits): the next window decides.
        self.assertEqual(first_reuse.Reach(reuse_mb=2740.0),
                         after(fresh, 6.0, 2.0))
        self.assertEqual(first_reuse.Reach(reuse_mb=2500.0), after(
            fresh, 6.0, 6.0, activate_s=factory.pages_s(3.0)))

    def test_the_next_refaulting_window_confirms_a_scan(self):
        placed = first_reuse.Reach(reuse_mb=2500.0)
        # All it reads refaults, none activated: a scan.
        self.assertEqual(first_reuse.Reach(reuse_mb=2500.0,
                                           scanned_mb=2500.0),
                         after(placed, 6.0, 6.0))
        # A block now and then: a reader of random blocks over far more
        # than it caches, whose first re-read placed no reach at all.
        self.assertEqual(first_reuse.Reach(), after(placed, 6.0, 0.3))
        # Half of it activated: a reader whose data partly fits.
        self.assertEqual(first_reuse.Reach(), after(
            placed, 6.0, 6.0, activate_s=factory.pages_s(3.0)))

    def test_a_confirmed_reach_goes_once_it_rereads_otherwise(self):
        scanned = first_reuse.Reach(reuse_mb=2500.0, scanned_mb=2500.0)
        # Still a scan: it holds.
        self.assertEqual(scanned, after(scanned, 6.0, 6.0))
        # A reader whose data partly fits its cache now (random host 19's
        # scan became one): half its re-reads activated. The reach was
        # another workload's.
        self.assertEqual(first_reuse.Reach(), after(
            scanned, 6.0, 6.0, activate_s=factory.pages_s(3.0)))
        # Within the noise of a scan's, it holds.
        self.assertEqual(scanned, after(
            scanned, 6.0, 6.0, activate_s=factory.pages_s(0.5)))
        # A block now and then (a scan grown part of the way), a window
        # that re-reads nothing, or too little to count: it holds.
        self.assertEqual(scanned, after(scanned, 6.0, 0.3))
        self.assertEqual(scanned, after(scanned, 6.0, actual_mb=704))
        self.assertEqual(scanned, after(scanned, 0.2, 0.1))

    def test_beyond_its_shadows_a_scan_begins_no_first_pass(self):
        # Confirmed at 2,500 MiB and shrunk to a 448 MiB file LRU, it
        # re-reads what it evicted more than two LRUs ago: no refault.
        scanned = first_reuse.Reach(reuse_mb=2500.0, scanned_mb=2500.0)
        self.assertEqual(scanned, after(scanned, 6.0, actual_mb=704))
        # With 1,792 MiB it would see them: a window without is a pass.
        self.assertEqual(360.0, after(scanned, 6.0).fresh_mb)
        # Unconfirmed, such a window always is.
        self.assertEqual(360.0, after(first_reuse.Reach(reuse_mb=2500.0),
                                      6.0, actual_mb=704).fresh_mb)

    def test_a_first_pass_keeps_half_what_it_read_in_its_file_lru(self):
        guest, _ = window(6.0)
        # 1,792 MiB of file LRU, 3,000 MiB read in its pass: it may give
        # 292 MiB and still remember its first block two LRUs back.
        self.assertEqual(292, first_reuse.shadowed_room_mb(
            first_reuse.Reach(fresh_mb=3000.0), guest))
        self.assertEqual(0, first_reuse.shadowed_room_mb(
            first_reuse.Reach(fresh_mb=4000.0), guest))
        self.assertGreater(first_reuse.shadowed_room_mb(
            first_reuse.Reach(), guest), 4096)

    def test_the_policy_state_keeps_it_and_drops_junk(self):
        kept = first_reuse.Reach(fresh_mb=12.34, reuse_mb=1843.0,
                                 scanned_mb=1843.0)
        self.assertEqual({'fresh_mb': 12.3, 'reuse_mb': 1843.0,
                          'scanned_mb': 1843.0}, kept.to_state())
        self.assertEqual(first_reuse.Reach(12.3, 1843.0, 1843.0),
                         first_reuse.remembered(kept.to_state()))
        for junk in ('nan', 'inf', -1, 'x', None, [1]):
            self.assertEqual(first_reuse.Reach(), first_reuse.remembered(
                {'fresh_mb': junk, 'reuse_mb': junk, 'scanned_mb': junk}))
        self.assertEqual(first_reuse.Reach(), first_reuse.remembered(None))


def scan(reuse_mb, actual_mb=2048, max_mb=4096, read_mb_s=6.0,
         refault_s=None, **kw):
    """A guest that re-reads all it reads, its reach ``reuse_mb``."""
    if refault_s is None:
        refault_s = factory.pages_s(read_mb_s)
    guest = factory.guest(2, actual_mb=actual_mb, max_mb=max_mb,
                          active_mb=0, inactive_mb=actual_mb - 256,
                          read_mb_s=read_mb_s, refault_s=refault_s,
                          read_since_boot_mb=40000, **kw)
    return dataclasses.replace(guest, policy_state={
        utility.STATE_KEY: {'reuse_mb': reuse_mb}})


class TestCliff(testtools.TestCase):
    def curve(self, guest):
        return utility.value_curve(guest, CFG)

    def test_it_fits_at_its_used_memory_and_its_reach(self):
        guest = scan(2500)
        self.assertEqual((2756, 6.0 / 708), first_reuse.cliff(
            self.curve(guest), guest))

    def test_none_beyond_its_maximum_or_without_a_reach(self):
        self.assertIsNone(first_reuse.cliff(self.curve(scan(4000)),
                                            scan(4000)))
        plain = factory.guest(2, read_mb_s=6.0,
                              refault_s=factory.pages_s(6.0))
        self.assertIsNone(first_reuse.cliff(self.curve(plain), plain))

    def test_none_once_passed(self):
        # Held that much in a clean window and still re-reading: wrong.
        held = scan(1500)
        self.assertIsNone(first_reuse.cliff(self.curve(held), held))
        # Measured larger, reading as much: wrong too.
        measured = dataclasses.replace(scan(2500), policy_state={
            utility.STATE_KEY: {'reuse_mb': 2500, 'seen': [
                [2816, 0.0, 64, 900.0, 6.0, 3]]}})
        self.assertIsNone(first_reuse.cliff(self.curve(measured), measured))
        # Just grown to it, the window still shows the smaller size.
        grown = scan(1500)
        grown = dataclasses.replace(grown, previous=dataclasses.replace(
            grown.previous,
            mem_total_kb=grown.previous.mem_total_kb - 512 * 1024))
        curve = self.curve(grown)
        self.assertEqual(1, curve.resized)
        self.assertEqual((1756, 6.0), first_reuse.cliff(curve, grown))


class TestCappedShortOfCliff(testtools.TestCase):
    """A scan given all of max_step_mb in one move, short of its cliff."""

    def grown(self, before_mb, reach_mb=2500):
        """2,432 MiB, 1,000 of them cached, grown from ``before_mb``."""
        guest = factory.guest(2, actual_mb=2432, active_mb=0,
                              inactive_mb=1000, read_mb_s=6.0,
                              refault_s=factory.pages_s(6.0),
                              read_since_boot_mb=40000)
        return dataclasses.replace(guest, policy_state={
            utility.STATE_KEY: {'reuse_mb': reach_mb,
                                'scanned_mb': reach_mb,
                                'size_mb': before_mb}})

    def room_mb(self, guest):
        curves = {guest.uuid: utility.value_curve(guest, CFG)}
        host = factory.host([guest], ram_mb=8192)
        return utility._up_rooms(host, CFG, curves, 64)[guest.uuid]

    def test_the_rest_comes_before_its_cache_has_filled(self):
        # Its cliff at 2,756 MiB: the 2,048 it got save nothing without
        # the 324 it still lacks.
        self.assertGreater(utility.value_curve(
            self.grown(384), CFG).free_mb, 64)
        self.assertGreaterEqual(self.room_mb(self.grown(384)), 324)

    def test_not_after_a_smaller_grow_nor_past_its_cliff(self):
        # A grow max_step_mb did not cap: it fills what it has first.
        self.assertEqual(0, self.room_mb(self.grown(1432)))
        # Grown past its cliff: nothing it lacks.
        self.assertEqual(0, self.room_mb(self.grown(384, reach_mb=2000)))


class TestScanCliffs(testtools.TestCase):
    """utility mode on a scan whose first re-read placed its cliff."""

    def neighbour(self, read_mb_s):
        # It refaults all it reads, half of it within its active list
        # (896 MiB): its next MiB saves half its reads over 896 MiB.
        return factory.guest(1, active_mb=896, inactive_mb=896,
                             read_mb_s=read_mb_s,
                             refault_s=factory.pages_s(read_mb_s),
                             activate_s=factory.pages_s(read_mb_s / 2),
                             read_since_boot_mb=40000)

    def moves(self, *guests):
        plan = utility.plan(factory.host(guests), CFG)
        return {m.instance: m for m in plan.moves}

    def test_a_costly_scan_gets_what_it_lacks_in_one_move(self):
        # 6 MiB/s re-read, 708 MiB short of its cliff: 8.7 MiB/s per GiB.
        taker = scan(2500)
        moves = self.moves(taker, self.neighbour(0.5))
        self.assertEqual(768, moves[taker.uuid].delta_mb)
        self.assertIn('(guest-reported)', moves[taker.uuid].reason)

    def test_a_cheap_scan_gives_all_it_holds(self):
        # 0.3 MiB/s over the 2,372 MiB from where it is kept to its cliff
        # (0.13 per GiB), while the neighbour's next MiB saves 2.3 per
        # GiB: reaching the cliff is not worth that memory, and nothing
        # it holds saves a read now.
        cheap = scan(2500, read_mb_s=0.3)
        moves = self.moves(cheap, self.neighbour(4.0))
        self.assertEqual(-(2048 - 384), moves[cheap.uuid].delta_mb)
        self.assertIn('value 0.000', moves[cheap.uuid].reason)
        # Beside a neighbour whose next MiB saves less (0.06 per GiB), it
        # takes what it lacks (0.43 per GiB) instead.
        moves = self.moves(cheap, self.neighbour(0.1))
        self.assertEqual(768, moves[cheap.uuid].delta_mb)

    def test_a_scan_whose_cliff_the_host_cannot_hold_gives_all_it_holds(
            self):
        # Its cliff (2,756 MiB) is within its flavor memory, but the host
        # may promise 4,096 MiB and the neighbour's floor is 1,664 MiB:
        # 2,432 MiB at most is all it could ever hold, and it would read
        # there what it reads now. So what it holds is worth nothing, and
        # the neighbour, whose next 896 MiB save it 1 MiB/s, takes them.
        taker = scan(2500)
        neighbour = dataclasses.replace(
            self.neighbour(2.0), sample=dataclasses.replace(
                self.neighbour(2.0).sample, committed_as_kb=1536 * 1024))
        host = factory.host([taker, neighbour], ram_mb=4096)
        self.assertEqual(2432, guards.reachable_mb(host, taker, CFG))
        moves = {m.instance: m for m in utility.plan(host, CFG).moves}
        self.assertEqual(-896, moves[taker.uuid].delta_mb)
        self.assertIn('value 0.000', moves[taker.uuid].reason)
        # With a neighbour that may give what it lacks, it takes that.
        moves = self.moves(taker, self.neighbour(2.0))
        self.assertEqual(768, moves[taker.uuid].delta_mb)

    def test_a_scan_placed_within_a_slack_is_tried_where_the_host_can(
            self):
        # The same host, the reach an upper bound a grow's count placed
        # (first_reuse._grown): the scan may fit 400 MiB short of its
        # cliff, within the 2,432 MiB the host could give it. It is tried
        # there: it takes what the neighbour may give above its floor.
        def placed(slack_mb, *seen):
            taker = scan(2500)
            return dataclasses.replace(taker, policy_state={
                utility.STATE_KEY: {'reuse_mb': 2500, 'slack_mb': slack_mb,
                                    'seen': [list(x) for x in seen]}})
        neighbour = dataclasses.replace(
            self.neighbour(2.0), sample=dataclasses.replace(
                self.neighbour(2.0).sample, committed_as_kb=1536 * 1024))

        def moves(taker):
            host = factory.host([taker, neighbour], ram_mb=4096)
            return {m.instance: m.delta_mb
                    for m in utility.plan(host, CFG).moves}
        self.assertEqual(384, moves(placed(400.0))[scan(2500).uuid])
        # Not once it was measured there reading as much.
        self.assertEqual(-896, moves(placed(
            400.0, (2432, 0.0, 64, 900.0, 6.0, 3)))[scan(2500).uuid])

    def test_a_scan_shrunk_past_its_shadows_still_has_its_cliff(self):
        # Shrunk to 704 MiB, a scan confirmed at 2,500 MiB re-reads
        # nothing its shadow entries remember: it reads 6 MiB/s and
        # refaults none. Its cliff still prices it, at the reads the host
        # measured: 6 MiB/s for the 2,052 MiB it lacks, 3 per GiB. On a
        # host with 5,440 MiB nobody holds, it gets a whole step of them.
        shrunk = scan(2500, actual_mb=704, refault_s=0.0)
        shrunk = dataclasses.replace(shrunk, policy_state={
            utility.STATE_KEY: {'reuse_mb': 2500, 'scanned_mb': 2500}})

        def moves(guest):
            host = factory.host([guest, self.neighbour(1.0)], ram_mb=8192)
            return {m.instance: m for m in utility.plan(host, CFG).moves}
        self.assertEqual(2048, moves(shrunk)[shrunk.uuid].delta_mb)
        self.assertIn('value 2.994', moves(shrunk)[shrunk.uuid].reason)
        # Never confirmed, it is a stream: its memory saves nothing, and
        # it gets none (on a full host it gives: the neighbour takes it).
        unconfirmed = dataclasses.replace(shrunk, policy_state={
            utility.STATE_KEY: {'reuse_mb': 2500}})
        self.assertNotIn(unconfirmed.uuid, moves(unconfirmed))
        full = self.moves(unconfirmed, self.neighbour(1.0))
        self.assertEqual(-320, full[unconfirmed.uuid].delta_mb)
        self.assertIn('value 0.000', full[unconfirmed.uuid].reason)

    def test_a_reach_its_window_placed_gives_nothing_yet(self):
        # Its first re-read: 2,400 MiB read without a refault, then a
        # window of which a sixth refaults. Only the next window tells a
        # scan from a reader of random blocks; meanwhile it keeps its
        # cache, whose refaults show which.
        placing = dataclasses.replace(
            scan(2500, refault_s=factory.pages_s(1.0)),
            policy_state={utility.STATE_KEY: {'fresh_mb': 2400}})
        curve = utility.value_curve(placing, CFG)
        self.assertEqual(2700.0, curve.reach.reuse_mb)
        self.assertTrue(first_reuse.unconfirmed(curve))
        self.assertNotIn(placing.uuid,
                         self.moves(placing, self.neighbour(4.0)))

    def test_a_reach_beyond_its_maximum_is_owed_no_probe(self):
        # Re-reading as a scan of 5,000 MiB does, within a 4 GiB flavor:
        # no size it may have holds it. Its cliff is no longer unknown,
        # so what it gives is not priced as a probe toward it, and it
        # takes none: the neighbour's next MiB gets its memory.
        far = scan(5000)
        host = factory.host([far, self.neighbour(2.0)])
        priced = scan_cliffs.priced(host, CFG, utility.UtilityParams(), {
            g.uuid: utility.value_curve(g, CFG) for g in host.guests})
        self.assertLess(priced[far.uuid].loss_density * 1024, 0.5)
        moves = self.moves(far, self.neighbour(2.0))
        self.assertLess(moves[far.uuid].delta_mb, 0)
        self.assertNotIn('probe', moves[far.uuid].reason)
        # Unplaced (no reach), the same reads are probed toward.
        unplaced = dataclasses.replace(far, policy_state={})
        moves = self.moves(unplaced, self.neighbour(2.0))
        self.assertGreater(moves[unplaced.uuid].delta_mb, 0)

    def test_a_scan_no_size_it_may_have_holds_takes_nothing(self):
        # The refault model spreads its 6 MiB/s of refaults over its
        # shadow entries' reach, about 0.4 MiB/s per GiB: more than the
        # neighbour's next MiB (0.17), so it took the neighbour's memory.
        # But no size within its flavor holds a 5,000 MiB scan: what it
        # holds and what it would get save nothing, and it gives instead.
        far = scan(5000)
        host = factory.host([far, self.neighbour(0.3)])
        priced = scan_cliffs.priced(host, CFG, utility.UtilityParams(), {
            g.uuid: utility.value_curve(g, CFG) for g in host.guests})
        self.assertEqual({0.0}, {d for _, d in priced[far.uuid].segments})
        self.assertEqual(0.0, priced[far.uuid].loss_density)
        moves = self.moves(far, self.neighbour(0.3))
        self.assertLess(moves[far.uuid].delta_mb, 0)
        self.assertIn('value 0.000', moves[far.uuid].reason)

    def test_what_its_refaults_priced_when_smaller_goes_too(self):
        # Measured at 1,536 MiB, where the refault model priced the next
        # 600 MiB at 0.9 MiB/s per GiB, the host reading as much as now:
        # that density is the same spread of refaults, which the reach
        # beyond its maximum shows saves nothing. Only the host's reads
        # there price what it gives (random host 685: a 3 GiB scan in a
        # 2.5 GiB flavor kept 384 MiB a hot/cold neighbour read for).
        far = dataclasses.replace(scan(5000), policy_state={
            utility.STATE_KEY: {'reuse_mb': 5000, 'scanned_mb': 5000,
                                'seen': [[1536, 0.9, 600.0, 900.0, 6.0,
                                          4]]}})
        host = factory.host([far, self.neighbour(0.3)])
        priced = scan_cliffs.priced(host, CFG, utility.UtilityParams(), {
            g.uuid: utility.value_curve(g, CFG) for g in host.guests})
        self.assertEqual(0.0, priced[far.uuid].loss_at(0, 256))
        moves = self.moves(far, self.neighbour(0.3))
        self.assertLess(moves[far.uuid].delta_mb, 0)
        # Where the host read more there, that prices it still.
        more = dataclasses.replace(far, policy_state={
            utility.STATE_KEY: {'reuse_mb': 5000, 'scanned_mb': 5000,
                                'seen': [[1536, 0.9, 600.0, 900.0, 9.0,
                                          4]]}})
        priced = scan_cliffs.priced(host, CFG, utility.UtilityParams(), {
            more.uuid: utility.value_curve(more, CFG)})
        self.assertGreater(priced[more.uuid].loss_at(0, 512), 0.0)

    def test_a_phase_change_drops_the_reach(self):
        # Measured at this size reading 1 MiB/s, it now reads 6: its
        # reads moved by more than half, a new workload, and the reach
        # its old scan placed prices nothing of it.
        changed = dataclasses.replace(scan(2500), policy_state={
            utility.STATE_KEY: {'reuse_mb': 2500, 'scanned_mb': 2500,
                                'seen': [[2048, 0.0, 64, 900.0, 1.0, 3]]}})
        self.assertEqual(first_reuse.Reach(), utility.value_curve(
            changed, CFG).reach)
        # Reading as much as then, it keeps it.
        same = dataclasses.replace(changed, policy_state={
            utility.STATE_KEY: {'reuse_mb': 2500, 'scanned_mb': 2500,
                                'seen': [[2048, 0.0, 64, 900.0, 6.0, 3]]}})
        self.assertEqual(2500, utility.value_curve(
            same, CFG).reach.reuse_mb)

    def test_a_new_workload_counts_its_pass_from_its_start(self):
        # It streamed 40 GB since boot, re-reading none of it, and now
        # reads 6 MiB/s where it read 1: a new workload, whose pass began
        # with it. Counted from boot, a 1 GiB scan that follows would
        # place its reach at all the stream read (random host 975).
        def streaming(then_mb_s):
            guest = factory.guest(2, read_mb_s=6.0, active_mb=0,
                                  inactive_mb=1792,
                                  read_since_boot_mb=40000)
            return dataclasses.replace(guest, policy_state={
                utility.STATE_KEY: {
                    'seen': [[2048, 0.0, 64, 900.0, then_mb_s, 3]]}})
        self.assertEqual(360.0, utility.value_curve(
            streaming(1.0), CFG).reach.fresh_mb)
        # Reading as much as then: the same pass, since boot.
        self.assertEqual(40360.0, utility.value_curve(
            streaming(6.0), CFG).reach.fresh_mb)

    def fitted(self, seen=((2048, 0.0, 64, 900.0, 6.0, 3),)):
        """A confirmed scan of 2,500 MiB that fits at 3,072 MiB.

        It reads nothing; ``seen``: measured at 2,048 MiB reading
        6 MiB/s (the policy state's lists).
        """
        guest = factory.guest(3, actual_mb=3072, active_mb=2600,
                              inactive_mb=216, read_since_boot_mb=40000)
        return dataclasses.replace(guest, policy_state={
            utility.STATE_KEY: {'reuse_mb': 2500, 'scanned_mb': 2500,
                                'seen': [list(x) for x in seen]}})

    def priced(self, host):
        return scan_cliffs.priced(host, CFG, utility.UtilityParams(), {
            g.uuid: utility.value_curve(g, CFG) for g in host.guests})

    def test_a_scan_that_fits_loses_all_its_reads_past_its_cliff(self):
        # It fits at its used memory and its reach: 2,756 MiB. A step
        # to below there brings back all 6 MiB/s, however large; priced
        # as the slope between its two sizes (6 MiB/s over 1,024 MiB), a
        # 960 MiB step seemed to cost 5.6 of them.
        fitted = self.fitted()
        curve = self.priced(factory.host([fitted]))[fitted.uuid]
        self.assertEqual((2756, 6.0), curve.held_cliff)
        self.assertAlmostEqual(6.0, curve.loss_at(0, 960) * 960)
        self.assertAlmostEqual(6.0, curve.loss_at(0, 320) * 320)
        # Within its slack the slope still prices it.
        self.assertAlmostEqual(6.0 / 1024, curve.loss_at(0, 256))
        # Never measured below its cliff, nothing says what it would read.
        alone = self.fitted(seen=())
        self.assertIsNone(self.priced(factory.host([alone]))[
            alone.uuid].held_cliff)

    def test_a_cliff_only_a_fitted_scan_could_make_room_for_gives_up(self):
        # The scan short of its cliff (2,756 MiB) could reach it only
        # with memory the fitted scan needs for all its 6 MiB/s (the
        # neighbour's floor is 1,664 MiB): taking it would save nothing.
        # So it gives what it holds to the neighbour, as one whose cliff
        # the host cannot hold does.
        neighbour = self.neighbour(2.0)
        neighbour = dataclasses.replace(neighbour, sample=dataclasses.replace(
            neighbour.sample, committed_as_kb=1536 * 1024))
        short = scan(2500)
        host = factory.host([short, self.fitted(), neighbour], ram_mb=7168)
        self.assertEqual(4096, guards.reachable_mb(host, short, CFG))
        moves = {m.instance: m for m in utility.plan(host, CFG).moves}
        self.assertEqual(-896, moves[short.uuid].delta_mb)
        self.assertIn('value 0.000', moves[short.uuid].reason)
        self.assertEqual(896, moves[neighbour.uuid].delta_mb)

    def test_a_cliff_only_costlier_working_sets_could_pay_for_gives_up(
            self):
        # The scan lacks 708 MiB of its cliff (2,756 MiB), 8.7 MiB/s per
        # GiB, on a host with no memory spare. Every other guest at its
        # floor would make room, but the guest at its flavor maximum
        # loses 9.1 per GiB of all it holds, and the taker holds 640 MiB
        # above its floor: the cliff is out of reach of what others would
        # give for it (random host 843). So the scan gives what it holds,
        # and the taker (1.3 per GiB) takes it.
        short = scan(2500)
        taker = factory.guest(1, actual_mb=1024, active_mb=384,
                              inactive_mb=384, read_mb_s=1.0,
                              refault_s=factory.pages_s(1.0),
                              activate_s=factory.pages_s(0.5),
                              read_since_boot_mb=40000)

        def moves(costly_mb_s):
            costly = factory.guest(
                3, max_mb=2048, active_mb=896, inactive_mb=896,
                read_mb_s=costly_mb_s,
                refault_s=factory.pages_s(costly_mb_s),
                activate_s=factory.pages_s(costly_mb_s / 2),
                read_since_boot_mb=40000)
            host = factory.host([short, taker, costly], ram_mb=5120)
            self.assertEqual(4096, guards.reachable_mb(host, short, CFG))
            return {m.instance: m for m in utility.plan(host, CFG).moves}
        moved = moves(16.0)
        self.assertLess(moved[short.uuid].delta_mb, 0)
        self.assertIn('value 0.000', moved[short.uuid].reason)
        self.assertEqual(-moved[short.uuid].delta_mb,
                         moved[taker.uuid].delta_mb)
        # Beside one whose memory costs less (4.6 per GiB), the cliff is in
        # reach: the scan takes toward it.
        self.assertGreater(moves(8.0)[short.uuid].delta_mb, 0)

    def test_what_others_keep_from_a_cliff_is_what_saves_more_there(self):
        costly = factory.guest(3, max_mb=2048, active_mb=896,
                               inactive_mb=896, read_mb_s=16.0,
                               refault_s=factory.pages_s(16.0),
                               activate_s=factory.pages_s(8.0),
                               read_since_boot_mb=40000)
        curve = utility.value_curve(costly, CFG)
        host = factory.host([costly])

        def kept(price_per_gib, c=curve):
            return scan_cliffs._Ladders(
                host, CFG, {costly.uuid: c}, 64).kept_above(
                    price_per_gib / 1024, set())
        # 9.1 MiB/s per GiB of all it holds above its floor (384 MiB).
        self.assertEqual(2048 - 384, kept(8.7))
        self.assertEqual(0, kept(9.2))
        # Without a curve nothing plans its memory; excluded, it counts
        # for nothing.
        self.assertEqual(2048 - 384, kept(9.2, c=None))
        self.assertEqual(0, scan_cliffs._Ladders(
            host, CFG, {costly.uuid: curve}, 64).kept_above(
                0.0, {costly.uuid}))
        # One that reads nothing now lends what it holds, whatever the
        # workload that stopped measured (random host 1332).
        self.assertEqual(0, kept(0.0, c=dataclasses.replace(
            curve, quiet=True)))

    def test_its_reach_stays_in_the_policy_state(self):
        taker = scan(2500)
        plan = utility.plan(factory.host([taker, self.neighbour(0.5)]), CFG)
        state = plan.policy_state[taker.uuid][mrc.STATE_KEY]
        self.assertEqual(2500, state['reuse_mb'])

    def test_claims_the_host_did_not_measure_take_nothing(self):
        # Its counters claim a first pass, a reach and 6 MiB/s of
        # re-reads; QEMU read nothing for it.
        liar = dataclasses.replace(scan(2500), host_io=host_io.HostIo(
            window_s=60.0, start_mb=2048, end_mb=2048, read_mb_s=0.0,
            read_req_s=0.0, cpu_s=0.5))
        moves = self.moves(liar, self.neighbour(0.5))
        self.assertLessEqual(
            moves[liar.uuid].delta_mb if liar.uuid in moves else 0, 0)
