import testtools

from tests.unit import factory
from watcher_cams.policy import guards
from watcher_cams.policy import model


class TestGuardConfig(testtools.TestCase):
    def test_rejects_bad_values(self):
        for bad in ({'min_guest_mb': -1}, {'ksm_safety_factor': 1.5},
                    {'max_step_mb': 10, 'min_change_mb': 20},
                    {'floor_margin_mb': 1.5}):
            self.assertRaises(guards.GuardError, guards.GuardConfig, **bad)


class TestFloorsAndCapacity(testtools.TestCase):
    cfg = guards.GuardConfig(min_guest_mb=256, floor_margin_mb=128)

    def test_floor_is_committed_plus_margin(self):
        g = factory.guest(1, used_mb=700)
        self.assertEqual(828, guards.floor_mb(g, self.cfg))

    def test_floor_never_below_minimum_nor_above_max(self):
        self.assertEqual(256, guards.floor_mb(factory.guest(1, used_mb=10),
                                              self.cfg))
        g = factory.guest(1, actual_mb=1024, max_mb=1024, used_mb=1000)
        self.assertEqual(1024, guards.floor_mb(g, self.cfg))

    def test_capacity_counts_safe_ksm_savings_only(self):
        ksm = model.KsmStats(pages_sharing=256 * 1000)  # 1000 MiB saved
        h = factory.host([], ram_mb=8192, reserved_mb=512, ksm=ksm)
        cfg = guards.GuardConfig(ksm_safety_factor=0.25)
        self.assertEqual(8192 - 512 + 750, guards.capacity_mb(h, cfg))

    def test_config_reserve_applies_when_larger(self):
        h = factory.host([], ram_mb=8192, reserved_mb=512)
        cfg = guards.GuardConfig(host_reserved_mb=1024)
        self.assertEqual(7168, guards.capacity_mb(h, cfg))


class TestFinalize(testtools.TestCase):
    cfg = guards.GuardConfig(max_step_mb=1024, min_change_mb=32)

    def test_clamps_floor_ceiling_and_step(self):
        a = factory.guest(1, actual_mb=2048, max_mb=2560, used_mb=900)
        b = factory.guest(2, actual_mb=2048, max_mb=4096)
        h = factory.host([a, b], ram_mb=16384)
        moves = guards.finalize(h, {a.uuid: (0, 'x'), b.uuid: (9999, 'y')},
                                self.cfg)
        by = {m.instance: m.target_mb for m in moves}
        self.assertEqual(1028, by[a.uuid])  # floor 900 + 128
        self.assertEqual(3072, by[b.uuid])  # step limit

    def test_shrinks_come_first(self):
        a = factory.guest(1)
        b = factory.guest(2)
        h = factory.host([a, b], ram_mb=4096)
        moves = guards.finalize(h, {a.uuid: (2560, 'up'),
                                    b.uuid: (1536, 'down')}, self.cfg)
        self.assertEqual([model.MoveKind.SHRINK, model.MoveKind.GROW],
                         [m.kind for m in moves])

    def test_growth_trimmed_to_capacity(self):
        a = factory.guest(1)
        b = factory.guest(2)
        h = factory.host([a, b], ram_mb=4096 + 200)
        moves = guards.finalize(h, {a.uuid: (2560, 'up'),
                                    b.uuid: (2560, 'up')}, self.cfg)
        self.assertLessEqual(sum(m.delta_mb for m in moves), 200)

    def test_over_committed_host_cannot_grow(self):
        a = factory.guest(1)
        b = factory.guest(2)
        h = factory.host([a, b], ram_mb=3000)
        moves = guards.finalize(h, {a.uuid: (3072, 'up')}, self.cfg)
        self.assertEqual([], moves)

    def test_small_changes_and_guests_without_data_dropped(self):
        a = factory.guest(1)
        b = model.GuestView(uuid=factory.uid(2), name='b', max_mb=4096,
                            actual_mb=2048, problem='guest agent timeout')
        h = factory.host([a, b], ram_mb=16384)
        moves = guards.finalize(h, {a.uuid: (2060, 'tiny'),
                                    b.uuid: (1024, 'no data'),
                                    'unknown': (1, 'ghost'),
                                    }, self.cfg)
        self.assertEqual([], moves)

    def test_nan_target_ignored(self):
        a = factory.guest(1)
        h = factory.host([a], ram_mb=16384)
        self.assertEqual([], guards.finalize(
            h, {a.uuid: (float('nan'), 'nan')}, self.cfg))
