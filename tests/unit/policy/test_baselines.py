import testtools

from tests.unit import factory
from watcher_cams.policy import baselines
from watcher_cams.policy import guards

CFG = guards.GuardConfig(max_step_mb=8192)


class TestBaselines(testtools.TestCase):
    def test_static_split_is_equal(self):
        gs = [factory.guest(1, actual_mb=3072, max_mb=6144),
              factory.guest(2, actual_mb=1024, max_mb=6144)]
        plan = baselines.static_split(factory.host(gs, ram_mb=4096), CFG)
        self.assertEqual([2048, 2048], [m.target_mb for m in plan.moves])

    def test_sms_is_proportional_to_access_rate(self):
        gs = [factory.guest(1, actual_mb=2048, max_mb=6144),
              factory.guest(2, actual_mb=2048, max_mb=6144)]
        h = factory.host(gs, ram_mb=4096)
        plan = baselines.sms(h, CFG, {gs[0].uuid: 1.0, gs[1].uuid: 3.0})
        by = {m.instance: m.target_mb for m in plan.moves}
        self.assertEqual({gs[0].uuid: 1024, gs[1].uuid: 3072}, by)
        self.assertRaises(ValueError, baselines.sms, h, CFG,
                          {gs[0].uuid: -1.0})
