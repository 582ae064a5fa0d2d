"""Counters a tenant forged, belied by the reads the host measured.

A stream's tenant that reports every read as a refault its active list
would keep, and PSI 100, gets memory only until the host's reads at the
sizes it held tell otherwise: while it grows (grow_check.fill_belies),
while it holds (donation.stall_belied) and where its refaults would
place a cliff above what the host measured flat (mrc's activated
refaults).
"""

import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import donation
from watcher_cams.policy import grow_check
from watcher_cams.policy import guards
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
PARAMS = utility.UtilityParams()
NOW = 1060.0


def seen(size_mb, disk_mb_s, at=NOW - 200, per_gib=8.0 * 1024 / 224):
    """One clean measurement, as the policy state keeps it.

    Its counters valued the next 224 MiB (its active list) at ``per_gib``
    MiB/s per GiB: by default all 8 MiB/s it read.
    """
    return [size_mb, per_gib, 224, at, disk_mb_s, 3]


def grown(reads_mb_s, entries=(), state=None, activated=None):
    """A guest grown from 1536 to 2048 MiB at the last plan, memory full.

    Its cache grew with it (1,280 to 1,792 MiB, an eighth of it active),
    and it reads ``reads_mb_s``, every read a refault, ``activated`` (by
    default all) of them activated. ``entries``: its measurements.
    """
    activated = reads_mb_s if activated is None else activated
    g = factory.guest(1, actual_mb=2048, active_mb=224, inactive_mb=1568,
                      read_mb_s=reads_mb_s,
                      refault_s=factory.pages_s(reads_mb_s),
                      activate_s=factory.pages_s(activated),
                      read_since_boot_mb=40000,
                      policy_state={utility.STATE_KEY: dict(
                          {'size_mb': 1536, 'at': 990.0,
                           'seen': list(entries)}, **(state or {}))})
    before = dataclasses.replace(
        g.previous, mem_total_kb=1536 * 1024,
        mem_available_kb=1280 * 1024, cached_kb=1280 * 1024,
        active_file_kb=160 * 1024, inactive_file_kb=1120 * 1024)
    return dataclasses.replace(g, previous=before)


class TestFullMemoryBelies(testtools.TestCase):
    """A run of grows checked once the cache holds what it was given."""

    def test_reads_as_before_belie_the_activations(self):
        # 8 MiB/s at 1536 MiB and now at 2048, its cache full: the 512
        # MiB (over two active lists) saved nothing of what the counters
        # promised. The window is a measurement, and prices nothing.
        curve = utility.value_curve(grown(8.0, [seen(1536, 8.0)]), CFG)
        self.assertEqual([2048, 1536], [x.size_mb for x in curve.seen])
        self.assertEqual(0.0, curve.gain(256))

    def test_reads_that_fell_stand(self):
        # 3 MiB/s where it read 8: the grow paid, the counters stand.
        curve = utility.value_curve(grown(3.0, [seen(1536, 8.0)]), CFG)
        self.assertEqual([1536], [x.size_mb for x in curve.seen])
        self.assertGreater(curve.gain(256), 0.5)

    def test_not_a_near_small_or_old_promise_nor_a_new_workload(self):
        # 1,856 MiB is 192 below: a scan short of its cliff may read as
        # much there. At 1536 MiB its counters promised next to nothing
        # (a scan whose refaults activate only once it comes near its
        # cliff). Reads that rose past half again are another workload's.
        # A foot older than the last measurement below is not the run's.
        for reads, below in ((8.0, [seen(1856, 8.0)]),
                             (8.0, [seen(1536, 8.0, per_gib=0.5)]),
                             (13.0, [seen(1536, 8.0)]),
                             (8.0, [seen(1536, 8.0, at=NOW - 900),
                                    seen(1856, 8.0, at=NOW - 100)])):
            curve = utility.value_curve(grown(reads, below), CFG)
            self.assertEqual(len(below), len(curve.seen), below)
            self.assertGreater(curve.gain(256), 0.5, below)

    def test_a_full_window_before_the_grows_is_the_base(self):
        # No clean window measured it: it grew from its first fill on.
        # The full window at 1536 MiB the state kept is the base.
        base = {grow_check.BASE_KEY: seen(1536, 8.0, at=NOW - 120)}
        curve = utility.value_curve(grown(8.0, state=base), CFG)
        self.assertEqual(0.0, curve.gain(256))
        self.assertEqual([2048, 1536], [x.size_mb for x in curve.seen])
        self.assertGreater(utility.value_curve(grown(8.0), CFG).gain(256),
                           0.5)

    def test_steps_shorter_than_the_reach_are_weighed_from_the_base(self):
        # Grown from 1536 MiB, measured at 1856 on the way: 192 MiB from
        # there is short of two active lists, 512 from the run's base is
        # not. A measurement at 1536 that is not the base stays an older
        # foot (see above).
        base = {grow_check.BASE_KEY: seen(1536, 8.0, at=NOW - 300)}
        on_the_way = [seen(1856, 8.0, at=NOW - 100)]
        curve = utility.value_curve(grown(8.0, on_the_way, state=base), CFG)
        self.assertEqual(0.0, curve.gain(256))
        self.assertIn(1536, [x.size_mb for x in curve.seen])
        premise = utility.value_curve(grown(8.0, on_the_way), CFG)
        self.assertGreater(premise.gain(256), 0.5)
        # Reads that fell from the base's: the run paid.
        paid = utility.value_curve(grown(3.0, on_the_way, state=base), CFG)
        self.assertGreater(paid.gain(256), 0.5)

    def test_the_base_is_kept_while_it_grows(self):
        g = grown(8.0, state={grow_check.BASE_KEY: seen(1536, 8.0)})
        kept = grow_check.full_base(g, ((224, 0.01),), (8.0, 1, 0.0), CFG,
                                    PARAMS)
        self.assertEqual(1536, kept.size_mb)
        # A resized window is no base; a full one at this size is.
        self.assertIsNone(grow_check.full_base(
            grown(8.0), ((224, 0.01),), (8.0, 1, 0.0), CFG, PARAMS))
        here = grow_check.full_base(grown(8.0), ((224, 0.01),),
                                    (8.0, 0, 0.0), CFG, PARAMS)
        self.assertEqual((2048, 8.0), (here.size_mb, here.disk_mb_s))
        # Not with free memory its cache has yet to fill.
        self.assertIsNone(grow_check.full_base(
            grown(8.0), ((224, 0.01),), (8.0, 0, 512.0), CFG, PARAMS))
        # Too old, or junk: forgotten.
        for bad in (seen(1536, 8.0, at=NOW - PARAMS.memory_s - 60), 'x',
                    [1536]):
            g = grown(8.0, state={grow_check.BASE_KEY: bad})
            self.assertIsNone(grow_check.full_base(
                g, ((224, 0.01),), (8.0, 1, 0.0), CFG, PARAMS), bad)


class TestStallBelied(testtools.TestCase):
    """PSI holds a guest's cache only where the host measured nothing."""

    def test_a_smaller_size_that_read_no_more_belies_the_stall(self):
        g = factory.guest(1, actual_mb=2048, psi=100.0)
        below = grown(4.0, [seen(1536, 4.2)])
        entries = utility.value_curve(below, CFG).seen
        self.assertTrue(donation.stall_belied(g, entries, 4.0, PARAMS))
        # It read more there, or a resize blurs this window: the stall
        # stands.
        self.assertFalse(donation.stall_belied(g, entries, 3.0, PARAMS))
        self.assertFalse(donation.stall_belied(g, entries, None, PARAMS))
        self.assertFalse(donation.stall_belied(g, (), 4.0, PARAMS))

    def test_a_larger_size_that_read_as_much_belies_the_stall(self):
        # More memory cured nothing: 4.0 MiB/s 512 MiB up as here. Not
        # where the larger size read less, nor a granule up (noise).
        g = factory.guest(1, actual_mb=1536, psi=100.0)
        entries = utility.value_curve(grown(4.0, [seen(1536, 4.0)]),
                                      CFG).seen
        self.assertEqual(2048, entries[0].size_mb)
        self.assertTrue(donation.stall_belied(g, entries[:1], 4.0, PARAMS))
        self.assertFalse(donation.stall_belied(g, entries[:1], 5.0, PARAMS))
        near = factory.guest(1, actual_mb=1984, psi=100.0)
        self.assertFalse(donation.stall_belied(near, entries[:1], 4.0,
                                               PARAMS))

    def test_a_belied_stall_gives(self):
        g = factory.guest(1, actual_mb=2048, psi=100.0)
        segments = ((512, 0.001), (4096, 0.0009))
        self.assertEqual(0, donation.donatable_mb(
            g, CFG, PARAMS, (0.0, False, False), (segments, 0, False), 0.0))
        self.assertGreater(donation.donatable_mb(
            g, CFG, PARAMS, (0.0, False, False), (segments, 0, True), 0.0),
            0)


class TestNoTieForABeliedTaker(testtools.TestCase):
    """Paper mode's steps follow the active list, the tenant's claim."""

    def taker(self, below_mb):
        """A stream claiming an active list of 224 MiB.

        Measured here and at ``below_mb``, 8 MiB/s at both.
        """
        g = factory.guest(1, actual_mb=2048, active_mb=224, inactive_mb=1568,
                          read_mb_s=8.0, refault_s=factory.pages_s(8.0),
                          activate_s=factory.pages_s(8.0),
                          read_since_boot_mb=40000,
                          policy_state={utility.STATE_KEY: {
                              'size_mb': 2048, 'at': 1000.0,
                              'confirmed_at': 1000.0,
                              'seen': [seen(2048, 8.0, at=NOW - 60),
                                       seen(below_mb, 8.0)]}})
        return utility.value_curve(g, CFG)

    def test_a_taker_whose_active_list_a_step_below_belied(self):
        donor = utility.value_curve(factory.guest(
            2, read_mb_s=2.0, read_since_boot_mb=40000), CFG)
        belied = self.taker(1536)
        self.assertFalse(utility._tie_allowed(belied, donor, (128, 128),
                                              PARAMS))
        # Not from a step shorter than mrc.EMPIRICAL_REACH_MB: a scan a
        # little short of its cliff reads as much a little smaller.
        near = self.taker(1856)
        self.assertTrue(utility._tie_allowed(near, donor, (128, 128),
                                             PARAMS))


class TestActivatedRefaultsPlaceNoCliff(testtools.TestCase):
    """Refaults the host measured flat above price no cliff beyond it."""

    def curve(self, activated, measured_at=NOW - 200):
        # At 640 MiB it reads 4 MiB/s, every read a refault; at 2,176 it
        # read as much (at ``measured_at``, borne out since). Shrunk here,
        # no resize in this window.
        g = factory.guest(1, actual_mb=640, active_mb=48, inactive_mb=336,
                          read_mb_s=4.0, refault_s=factory.pages_s(4.0),
                          activate_s=factory.pages_s(activated),
                          read_since_boot_mb=40000,
                          policy_state={utility.STATE_KEY: {
                              'size_mb': 640, 'at': 1000.0,
                              'confirmed_at': 1000.0,
                              'seen': [seen(2176, 4.0, at=measured_at)]}})
        return utility.value_curve(g, CFG)

    def test_activated_refaults_lie_within_the_active_lists(self):
        # Within two active lists of 640 MiB, which the flat step above
        # covers: they were not re-reads of data beyond it.
        self.assertEqual(0.0, self.curve(4.0).gain(4096 - 640))

    def test_not_by_a_measurement_older_than_memory_s(self):
        # Kept because windows since bore it out, it may be of a workload
        # that changed since.
        old = self.curve(4.0, measured_at=NOW - PARAMS.memory_s - 60)
        self.assertEqual([640, 2176], [x.size_mb for x in old.seen])
        self.assertGreater(old.gain(4096 - 640), 1.0)

    def test_refaults_not_activated_still_place_a_cliff(self):
        # A scan that fits only in more memory than 2,176 MiB.
        self.assertGreater(self.curve(0.0).gain(4096 - 640), 1.0)
