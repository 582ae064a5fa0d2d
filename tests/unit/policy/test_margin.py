import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import guards
from watcher_cams.policy import margin

P = margin.MarginParams()


def obs(cache_mb, active_mb):
    return factory.sample(total_mb=8192, used_mb=512, active_mb=active_mb,
                          inactive_mb=cache_mb - active_mb)


class TestController(testtools.TestCase):
    def test_first_observation_only_records(self):
        s = margin.step(margin.MarginState(), obs(1000, 100), P)
        self.assertTrue(s.seen)
        self.assertEqual(100, s.margin_mb)

    def test_up_grows_by_25_times_streak_capped_at_200(self):
        s = margin.step(margin.MarginState(), obs(1000, 100), P)
        margins = []
        for i in range(1, 12):
            s = margin.step(s, obs(1000 + 100 * i, 100 + 10 * i), P)
            margins.append(s.margin_mb)
        steps = [b - a for a, b in zip([100] + margins, margins)]
        self.assertEqual([25, 50, 75, 100, 125, 150, 175, 200, 200, 200,
                          200], steps)

    def test_up_switches_down_when_cache_stops_then_cuts_to_cache(self):
        s = margin.MarginState(mode=margin.UP, margin_mb=900, streak=3,
                               cache_mb=500, active_mb=100, seen=True)
        s = margin.step(s, obs(500, 100), P)
        self.assertEqual((margin.DOWN, 900), (s.mode, s.margin_mb))
        s = margin.step(s, obs(500, 100), P)
        self.assertEqual(500, s.margin_mb)  # margin above cache -> cache

    def test_down_shrinks_by_50_times_streak_to_floor_100(self):
        s = margin.MarginState(mode=margin.DOWN, margin_mb=600, streak=1,
                               cache_mb=2000, active_mb=100, seen=True)
        seen = []
        for _ in range(5):
            s = margin.step(s, obs(2000, 100), P)
            seen.append(s.margin_mb)
        self.assertEqual([500, 350, 150, 100, 100], seen)

    def test_down_switches_up_when_useful_cache_shrinks_or_cache_grows(self):
        base = margin.MarginState(mode=margin.DOWN, margin_mb=600, streak=2,
                                  cache_mb=2000, active_mb=800, seen=True)
        self.assertEqual(margin.UP,
                         margin.step(base, obs(2000, 500), P).mode)
        self.assertEqual(margin.UP,
                         margin.step(base, obs(2600, 800), P).mode)

    def test_damaged_state_restarts(self):
        for bad in (None, 'x', {'mode': 'sideways'}, {'margin_mb': -5},
                    dict(dataclasses.asdict(margin.MarginState()),
                         mode='nope')):
            self.assertEqual(margin.MarginState(),
                             margin.MarginState.from_dict(bad, P))

    def test_params_checked(self):
        self.assertRaises(ValueError, margin.MarginParams, up_mb=-1)
        self.assertRaises(ValueError, margin.MarginParams,
                          initial_margin_mb=50)


class TestMarginPlan(testtools.TestCase):
    def test_targets_committed_plus_margin_and_returns_state(self):
        state = margin.MarginState(mode=margin.UP, margin_mb=300,
                                   streak=0, cache_mb=1792, active_mb=896,
                                   seen=True).to_dict()
        g = factory.guest(1, actual_mb=2048, used_mb=256,
                          policy_state={'margin': state})
        h = factory.host([g], ram_mb=8192)
        plan = margin.plan(h, guards.GuardConfig())
        new = plan.policy_state[g.uuid]['margin']
        self.assertEqual(margin.DOWN, new['mode'])
        self.assertEqual([256 + 300], [m.target_mb for m in plan.moves])

    def test_host_capacity_guard_added(self):
        grow = margin.MarginState(mode=margin.UP, margin_mb=4000,
                                  seen=True, cache_mb=0,
                                  active_mb=0).to_dict()
        gs = [factory.guest(i, actual_mb=2048, max_mb=8192,
                            policy_state={'margin': grow})
              for i in (1, 2)]
        h = factory.host(gs, ram_mb=4096 + 512)
        plan = margin.plan(h, guards.GuardConfig())
        self.assertLessEqual(sum(m.delta_mb for m in plan.moves), 512)
