import dataclasses

import testtools

from tests.unit import factory
from tests.unit.policy import test_first_reuse
from tests.unit.policy import test_utility
from watcher_cams.policy import cliff_probe
from watcher_cams.policy import guards
from watcher_cams.policy import scan_cliffs
from watcher_cams.policy import utility

CFG = guards.GuardConfig()


def hot_set(actual_mb=2560, active_mb=2176, read_mb_s=0.5, free_mb=0,
            **kw):
    """A guest whose re-reads are all within its active list (a knee).

    Its floor is 384 MiB (used 256 and the margin); the water-filling
    keeps its active list, 2,176 MiB: at 2,560 MiB it may give nothing.
    ``free_mb``: memory its cache has not filled.
    """
    return factory.guest(1, actual_mb=actual_mb, active_mb=active_mb,
                         inactive_mb=actual_mb - 256 - active_mb - free_mb,
                         read_mb_s=read_mb_s,
                         refault_s=factory.pages_s(read_mb_s / 2),
                         activate_s=factory.pages_s(read_mb_s / 2),
                         read_since_boot_mb=40000, **kw)


class TestCliffProbe(testtools.TestCase):
    """A scan short of its cliff, beside a hot set that keeps its memory."""

    def moves(self, *guests):
        plan = utility.plan(factory.host(guests), CFG)
        return {m.instance: m for m in plan.moves}

    def test_all_it_lacks_comes_from_an_active_list(self):
        # Its cliff is at 1,756 MiB (used 256, reach 1,500): 220 MiB more,
        # four granules, save its 6 MiB/s (24 MiB/s per GiB); the hot
        # set's activations price them at 0.12 per GiB.
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        donor = hot_set()
        moves = self.moves(scan, donor)
        self.assertEqual(256, moves[scan.uuid].delta_mb)
        self.assertEqual(-256, moves[donor.uuid].delta_mb)
        self.assertIn('(probe)', moves[scan.uuid].reason)
        self.assertIn('short of its cliff', moves[scan.uuid].reason)

    def test_not_without_the_probe_the_water_filling_keeps_it(self):
        # The premise: the water-filling alone moves nothing here.
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        host = factory.host([scan, hot_set()], ram_mb=4096)
        curves = {g.uuid: utility.value_curve(g, CFG) for g in host.guests}
        self.assertEqual(0, curves[hot_set().uuid].donate_mb)

    def test_not_where_the_donor_was_measured_losing_more(self):
        # Measured 256 MiB smaller reading 8 MiB/s, 7.5 more than now
        # (30 MiB/s per GiB): more than the scan would save. No probe:
        # the scan's cliff is out of reach of what the hot set would give
        # for it, so what the scan holds saves nothing, and the hot set
        # takes it.
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        donor = dataclasses.replace(hot_set(), policy_state={
            utility.STATE_KEY: {'seen': [[2304, 0.0, 64, 900.0, 8.0, 3]]}})
        moves = self.moves(scan, donor)
        self.assertEqual(-(1536 - 384), moves[scan.uuid].delta_mb)
        self.assertIn('value 0.000', moves[scan.uuid].reason)
        self.assertNotIn('(probe)', moves[donor.uuid].reason)

    def test_not_where_the_donors_cannot_give_all_it_lacks(self):
        # Above its floor and used memory the hot set holds 192 MiB: a
        # step short of the cliff saves nothing.
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        donor = hot_set(actual_mb=576, active_mb=256)
        host = factory.host([scan, donor], ram_mb=4096)
        params = utility.UtilityParams()
        curves = scan_cliffs.priced(host, CFG, params, {
            g.uuid: utility.value_curve(g, CFG) for g in host.guests})
        self.assertIsNotNone(curves[scan.uuid].cliff_mb)
        self.assertIsNone(cliff_probe.cliff_probe(
            host, CFG, params, curves, dict.fromkeys(curves, 0)))

    def test_memory_no_guest_holds_serves_it_first(self):
        # The same host's 1,984 MiB nobody holds: all the scan lacks, at
        # no one's loss (the hot set takes some too).
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        donor = hot_set(actual_mb=576, active_mb=256)
        plan = utility.plan(factory.host([scan, donor], ram_mb=4096), CFG)
        moves = {m.instance: m for m in plan.moves}
        self.assertGreaterEqual(moves[scan.uuid].target_mb, 1756)
        self.assertTrue(all(m.delta_mb > 0 for m in plan.moves))

    def test_not_from_a_cache_still_filling(self):
        # Free memory beyond the margin: it evicted nothing yet, and no
        # counter says what its active list is worth.
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        filling = hot_set(active_mb=1900, free_mb=256)
        self.assertTrue(utility.value_curve(filling, CFG).filling)
        moves = self.moves(scan, filling)
        self.assertNotIn('short of its cliff',
                         ''.join(m.reason for m in moves.values()))

    def test_from_a_full_cache_that_grew_by_a_trickle(self):
        # It grew 16 MiB over the window, more than half its 30 MiB of
        # reads: filling by that count, but with no free memory left to
        # fill it evicts as a full cache does (random host 1167: a uniform
        # reader that fitted, its last few MiB trickling in, kept a 4 MiB/s
        # scan 576 MiB short of its cliff for 90 minutes).
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        trickle = test_utility.grown_cache(hot_set(), 0, grew_mb=16)
        curve = utility.value_curve(trickle, CFG)
        self.assertTrue(curve.filling)
        self.assertLess(curve.free_mb, utility.UtilityParams().granule_mb)
        moves = self.moves(scan, trickle)
        self.assertEqual(256, moves[scan.uuid].delta_mb)
        self.assertIn('short of its cliff', moves[scan.uuid].reason)

    def test_not_from_a_guest_stalled_on_memory(self):
        scan = test_first_reuse.scan(1500, actual_mb=1536)
        self.assertEqual({}, self.moves(scan, hot_set(psi=40.0)))

    def test_a_cache_that_refaults_nothing_gives_half_its_file_lru(self):
        # 448 MiB to its cliff (used 256, reach 1,700). A cache that holds
        # all it re-reads (no refault) 640 MiB above its floor, 768 MiB in
        # all: half of that, 384, is all a probe may take, short of it.
        scan = test_first_reuse.scan(1700, actual_mb=1536)

        def fits(actual_mb):
            return factory.guest(1, actual_mb=actual_mb,
                                 active_mb=actual_mb - 256 - 64,
                                 inactive_mb=64, read_mb_s=0.5,
                                 activate_s=factory.pages_s(0.25),
                                 read_since_boot_mb=40000)

        def moved(donor):
            host = factory.host([scan, donor], ram_mb=1536 + donor.actual_mb)
            return {abs(m.delta_mb) for m in utility.plan(host, CFG).moves}

        self.assertEqual(set(), moved(fits(1024)))
        # With a file LRU of 1,024 MiB, half of it reaches the cliff.
        self.assertEqual({448}, moved(fits(1280)))
        # One that refaults prices some of its curve, and may give more.
        self.assertEqual({448}, moved(hot_set(actual_mb=1024,
                                              active_mb=700)))
