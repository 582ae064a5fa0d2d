"""What a guest may give (donation)."""

import testtools

from tests.unit import factory
from watcher_cams.policy import donation
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
PARAMS = utility.UtilityParams()
# The refault model's segments ((MiB, MiB/s per MiB), ...): the active
# list's, then the rest of the reach.
HOT_SET = ((512, 0.004), (4096, 0.0005))
SPREAD = ((512, 0.001), (4096, 0.0009))


class TestKept(testtools.TestCase):

    def test_floor_or_used_memory_and_active_list_with_the_margin(self):
        g = factory.guest(1, actual_mb=2048, used_mb=700)
        self.assertEqual(700 + CFG.floor_margin_mb,
                         donation.kept_mb(g, CFG))
        self.assertEqual(700 + 300 + CFG.floor_margin_mb,
                         donation.kept_mb(g, CFG, active_mb=300))
        small = factory.guest(2, actual_mb=2048, used_mb=64)
        self.assertEqual(guards.floor_mb(small, CFG),
                         donation.kept_mb(small, CFG))

    def test_a_step_is_free_memory_and_a_quarter_of_the_cache(self):
        g = factory.guest(1, actual_mb=2048, used_mb=256, active_mb=512,
                          inactive_mb=512)
        free_mb = 2048 - 256 - 1024
        self.assertEqual(free_mb - CFG.floor_margin_mb + 1024 / 4,
                         donation.step_mb(g, CFG, free_mb))


class TestKnee(testtools.TestCase):

    def test_a_hot_set_on_the_active_list_is_a_knee(self):
        self.assertTrue(donation.active_list_is_a_knee(HOT_SET))
        # A list no refault priced yet is kept too.
        self.assertTrue(donation.active_list_is_a_knee(
            ((512, 0.0), (4096, 0.0))))

    def test_evenly_spread_refaults_are_no_knee(self):
        self.assertFalse(donation.active_list_is_a_knee(SPREAD))
        self.assertFalse(donation.active_list_is_a_knee(((4608, 0.001),)))

    def test_the_knee_keeps_the_active_list(self):
        g = factory.guest(1, actual_mb=2048, used_mb=256, active_mb=896,
                          inactive_mb=896)
        keeps = donation.donatable_mb(g, CFG, PARAMS, (0.0, False, False),
                                      (HOT_SET, 0, False), 0.0)
        gives = donation.donatable_mb(g, CFG, PARAMS, (0.0, False, False),
                                      (SPREAD, 0, False), 0.0)
        self.assertEqual(2048 - donation.kept_mb(g, CFG, 896), keeps)
        self.assertEqual(2048 - donation.kept_mb(g, CFG), gives)


class TestStalled(testtools.TestCase):

    def test_a_guest_stalled_on_memory_gives_nothing(self):
        stalled = factory.guest(1, psi=PARAMS.psi_protect)
        calm = factory.guest(2, psi=PARAMS.psi_protect / 2)
        self.assertTrue(donation.stalled_on_memory(stalled, PARAMS))
        self.assertFalse(donation.stalled_on_memory(calm, PARAMS))
        self.assertEqual(0, donation.donatable_mb(
            stalled, CFG, PARAMS, (0.0, False, False), (SPREAD, 0, False),
            0.0))
        self.assertGreater(donation.donatable_mb(
            calm, CFG, PARAMS, (0.0, False, False), (SPREAD, 0, False),
            0.0), 0)


def touched_guest(mb, half_mb=None, least_mb=2048, ended_at=1060.0, **kw):
    """A guest of 2,048 MiB that touched ``mb`` in a window ending now."""
    touched = host_io.Touched(mb=mb, half_mb=mb if half_mb is None
                              else half_mb, window_s=600.0,
                              ended_at=ended_at, least_mb=least_mb)
    io = host_io.HostIo(window_s=60.0, start_mb=2048, end_mb=2048,
                        read_mb_s=0.0, read_req_s=0.0, touched=touched)
    return factory.guest(1, actual_mb=2048, used_mb=256, active_mb=1536,
                         inactive_mb=256, host_io=io, **kw)


class TestUntouched(testtools.TestCase):

    def test_a_guest_reading_nothing_gives_what_it_did_not_touch(self):
        g = touched_guest(1200)
        self.assertEqual(2048 - 1200 - CFG.floor_margin_mb,
                         donation.untouched_mb(g, CFG, PARAMS, 0.0))
        # Never below its used memory, whatever it touched.
        self.assertEqual(2048 - donation.kept_mb(g, CFG),
                         donation.untouched_mb(touched_guest(100), CFG,
                                               PARAMS, 0.0))
        self.assertEqual(0, donation.untouched_mb(touched_guest(2048), CFG,
                                                  PARAMS, 0.0))

    def test_only_a_window_that_saw_its_workload_whole(self):
        cases = {
            'it reads from disk': (touched_guest(1200), 0.5, ()),
            'its second half touched more': (
                touched_guest(1200, half_mb=1000), 0.0, ()),
            'it was smaller in the window': (
                touched_guest(1200, least_mb=1536), 0.0, ()),
            'its workload began in the window': (
                touched_guest(1200), 0.0, (700.0, None)),
            'it came back from a rest in it': (
                touched_guest(1200), 0.0, (None, 460.0)),
            'it stalls on memory': (
                touched_guest(1200, psi=PARAMS.psi_protect), 0.0, ()),
        }
        for why, (g, disk, since) in cases.items():
            self.assertEqual(0, donation.untouched_mb(
                g, CFG, PARAMS, disk, since), why)
        self.assertGreater(donation.untouched_mb(
            touched_guest(1200, half_mb=1200 - PARAMS.granule_mb), CFG,
            PARAMS, 0.0, (400.0, None)), 0)

    def test_not_measured_gives_nothing(self):
        self.assertEqual(0, donation.untouched_mb(
            factory.guest(1, actual_mb=2048), CFG, PARAMS, 0.0))
