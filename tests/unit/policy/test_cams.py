import testtools

from tests.unit import factory
from watcher_cams.policy import cams
from watcher_cams.policy import guards

CFG = guards.GuardConfig()


class TestUtilization(testtools.TestCase):
    def test_proxy_is_active_share_of_file_lru(self):
        self.assertEqual(0.25, cams.utilization(256, 768))
        self.assertEqual(0.0, cams.utilization(0, 0))

    def test_params_checked(self):
        self.assertRaises(ValueError, cams.CamsParams, pages_per_step=0)
        self.assertRaises(ValueError, cams.CamsParams, tolerance=1.0)
        self.assertEqual(128, cams.CamsParams().step_mb)


class TestCamsPlan(testtools.TestCase):
    def test_moves_fixed_steps_from_lowest_to_highest(self):
        low = factory.guest(1, active_mb=50, inactive_mb=1742)
        high = factory.guest(2, active_mb=1200, inactive_mb=592)
        h = factory.host([low, high], ram_mb=4096)
        plan = cams.plan(h, CFG, cams.CamsParams(max_steps=2))
        by = {m.instance: m.delta_mb for m in plan.moves}
        self.assertEqual({low.uuid: -256, high.uuid: 256}, by)

    def test_stops_when_equal_within_tolerance(self):
        a = factory.guest(1, active_mb=500, inactive_mb=1292)
        b = factory.guest(2, active_mb=520, inactive_mb=1272)
        plan = cams.plan(factory.host([a, b], ram_mb=4096), CFG)
        self.assertEqual([], plan.moves)

    def test_prediction_converges_before_step_limit(self):
        # Inactive pages are evicted first: the donor's utilization rises
        # and the recipient's falls, so steps stop before 100.
        a = factory.guest(1, active_mb=300, inactive_mb=1492)
        b = factory.guest(2, active_mb=900, inactive_mb=892)
        params = cams.CamsParams(max_steps=100)
        cfg = guards.GuardConfig(max_step_mb=4096)
        plan = cams.plan(factory.host([a, b], ram_mb=4096), cfg, params)
        moved = plan.moves[0].target_mb - plan.moves[0].current_mb
        self.assertLess(abs(moved), 100 * 128)
        self.assertGreater(abs(moved), 0)

    def test_paper_example_moves_memory_to_vm1(self):
        vm1, vm2 = factory.example_deltas(lambda h: cams.plan(h, CFG))
        self.assertGreater(vm1, 0)
        self.assertEqual(-vm1, vm2)
