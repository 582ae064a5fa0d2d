import testtools

from tests.unit import factory
from watcher_cams.policy import guards
from watcher_cams.policy import ksm
from watcher_cams.policy import model
from watcher_cams.policy import utility

CFG = guards.GuardConfig(ksm_safety_factor=0.5)


def ksm_saving(mb):
    return model.KsmStats(pages_shared=10, pages_sharing=mb * 256)


def two_guests(**kw):
    return [factory.guest(i, actual_mb=2048, base_mb=2048, max_mb=2304,
                          **kw) for i in (1, 2)]


class TestKsmPaper(testtools.TestCase):
    def test_equal_shares_of_safe_savings(self):
        h = factory.host(two_guests(), ram_mb=4096, ksm=ksm_saving(400))
        plan = ksm.plan(h, CFG)
        self.assertEqual([2148, 2148], [m.target_mb for m in plan.moves])
        self.assertEqual(200, plan.ksm_returned_mb)

    def test_share_capped_at_max_rest_to_others(self):
        gs = [factory.guest(1, actual_mb=2048, base_mb=2048, max_mb=2100),
              factory.guest(2, actual_mb=2048, base_mb=2048, max_mb=4096)]
        h = factory.host(gs, ram_mb=4096, ksm=ksm_saving(800))
        by = {m.instance: m.target_mb for m in ksm.plan(h, CFG).moves}
        self.assertEqual({gs[0].uuid: 2100, gs[1].uuid: 2396}, by)

    def test_takes_back_when_sharing_falls(self):
        gs = [factory.guest(i, actual_mb=2248, base_mb=2048, max_mb=2304)
              for i in (1, 2)]
        h = factory.host(gs, ram_mb=4096, ksm=ksm_saving(100))
        plan = ksm.plan(h, CFG)
        self.assertEqual([2073, 2073], [m.target_mb for m in plan.moves])

    def test_no_ksm_no_bonus(self):
        h = factory.host(two_guests(), ram_mb=4096, ksm=None)
        self.assertEqual([], ksm.plan(h, CFG).moves)


class TestKsmUtility(testtools.TestCase):
    def test_savings_go_where_they_save_reads(self):
        busy = factory.guest(1, actual_mb=2048, base_mb=2048, max_mb=3072,
                             read_mb_s=2.0, refault_s=factory.pages_s(1.5),
                             activate_s=factory.pages_s(1.0))
        idle = factory.guest(2, actual_mb=2048, base_mb=2048, max_mb=3072)
        h = factory.host([busy, idle], ram_mb=4096, ksm=ksm_saving(1024))
        plan = ksm.plan(h, CFG, ksm.KsmParams(mode=ksm.UTILITY))
        by = {m.instance: m.delta_mb for m in plan.moves}
        self.assertEqual({busy.uuid: 512}, by)

    def test_a_bonus_just_given_is_kept_while_it_fills(self):
        # Grown by 256 MiB in the last cycle: its cache is still filling,
        # so its counters show nothing yet; the savings it holds stay with
        # it rather than going to the next guest each cycle.
        valued = dict(read_mb_s=2.0, refault_s=factory.pages_s(1.5),
                      activate_s=factory.pages_s(1.0))
        grown = factory.guest(1, actual_mb=2304, base_mb=2048, max_mb=2304,
                              active_mb=100, inactive_mb=1000)
        other = factory.guest(2, actual_mb=2048, base_mb=2048, max_mb=2304,
                              **valued)
        self.assertTrue(utility.value_curve(grown, CFG).filling)
        h = factory.host([grown, other], ram_mb=4096, ksm=ksm_saving(1024))
        plan = ksm.plan(h, CFG, ksm.KsmParams(mode=ksm.UTILITY))
        by = {m.instance: m.target_mb for m in plan.moves}
        self.assertNotIn(grown.uuid, by)
        self.assertEqual(2304, by[other.uuid])

    def test_equal_values_share_evenly_and_wholly(self):
        # Three guests alike: the 200 MiB of safe savings are split (the
        # last granule smaller), not handed to the first in 64 MiB steps.
        gs = [factory.guest(i, actual_mb=2048, base_mb=2048, max_mb=2304,
                            read_mb_s=2.0, refault_s=factory.pages_s(1.5),
                            activate_s=factory.pages_s(1.0))
              for i in (1, 2, 3)]
        h = factory.host(gs, ram_mb=6144, ksm=ksm_saving(400))
        plan = ksm.plan(h, CFG, ksm.KsmParams(mode=ksm.UTILITY))
        bonus = sorted(m.delta_mb for m in plan.moves)
        self.assertEqual(200, sum(bonus))
        self.assertLessEqual(bonus[-1] - bonus[0], 64)

    def test_bad_mode(self):
        self.assertRaises(ValueError, ksm.KsmParams, mode='magic')
