"""The lab's in-process agent client and applier."""

import random

import fixtures
import jsonschema
from watcher.tests.unit import base

from tests.unit.glue import fakes
from watcher_cams.agent import controllers
from watcher_cams.lab import bench
from watcher_cams.lab import runner
from watcher_cams import rpcapi

A = '11111111-1111-4111-8111-111111111111'
B = '22222222-2222-4222-8222-222222222222'
C = '33333333-3333-4333-8333-333333333333'


class FakeManager:
    """AgentManager's interface: answers, or raises as the real one does."""

    def __init__(self):
        self.calls = []

    def get_report(self):
        return {'host': 'lab', 'sizes': (1, 2)}

    def collect(self):
        self.calls.append('collect')

    def plan(self, request):
        self.calls.append('plan')
        return {'host': 'lab', 'asked': request}

    def set_balloon(self, instance, target_mb, reason='', change_id=None):
        self.calls.append((instance, target_mb))
        if target_mb < 256:
            raise controllers.Refused('target %d MiB is below the floor'
                                      % target_mb)
        return {'previous_mb': 512, 'actual_mb': target_mb}


class TestLocalAgent(base.TestCase):

    def test_answers_pass_through_json_like_rpc(self):
        agent = runner.LocalAgent(FakeManager(), 'lab')
        self.assertEqual({'host': 'lab', 'sizes': [1, 2]},
                         agent.get_report('lab'))
        self.assertEqual({'previous_mb': 512, 'actual_mb': 300},
                         agent.set_balloon('lab', A, 300.0, 'why'))

    def test_plans_from_a_collection_made_now(self):
        # The lab's manager runs no background loop: plan collects first.
        manager = FakeManager()
        agent = runner.LocalAgent(manager, 'lab')
        self.assertEqual({'host': 'lab', 'asked': {'planner': 'margin'}},
                         agent.plan('lab', {'planner': 'margin'}))
        self.assertEqual(['collect', 'plan'], manager.calls)
        self.assertRaises(rpcapi.AgentUnreachable, agent.plan, 'other', {})

    def test_errors_are_the_rpc_clients(self):
        manager = FakeManager()
        agent = runner.LocalAgent(manager, 'lab')
        exc = self.assertRaises(rpcapi.AgentError, agent.set_balloon, 'lab',
                                A, 100)
        self.assertEqual('Refused', exc.exc_type)
        self.assertIn('below the floor', str(exc))
        self.assertRaises(rpcapi.AgentUnreachable, agent.get_report, 'other')
        self.assertEqual([(A, 100)], manager.calls)


def balloon(uuid, target):
    return {'action_type': 'cams_balloon',
            'input_parameters': {'resource_id': uuid, 'host': 'cmp-a',
                                 'target_mb': target, 'reason': 'test'}}


class FailingAgent(fakes.FakeAgent):
    def __init__(self, fail, **kwargs):
        super().__init__(**kwargs)
        self.fail = fail

    def set_balloon(self, host, instance, target_mb, reason='',
                    change_id=None):
        if instance == self.fail:
            self.calls.append(('set_balloon', host, instance, target_mb))
            raise rpcapi.AgentError(host, 'set_balloon', 'ChangeFailed',
                                    'balloon stuck')
        return super().set_balloon(host, instance, target_mb, reason,
                                   change_id)


class TestApplyActions(base.TestCase):

    def test_all_succeed_in_order(self):
        agent = fakes.FakeAgent(state={'running': [A, B]})
        outcomes = runner.apply_actions([balloon(A, 512), balloon(B, 1024)],
                                        agent)
        self.assertEqual(['SUCCEEDED', 'SUCCEEDED'],
                         [o for _, o in outcomes])
        self.assertEqual([('set_balloon', 'cmp-a', A, 512),
                          ('set_balloon', 'cmp-a', B, 1024)],
                         [c for c in agent.calls if c[0] == 'set_balloon'])

    def test_instance_gone_is_skipped(self):
        agent = fakes.FakeAgent(state={'running': [B]})
        outcomes = runner.apply_actions([balloon(A, 512), balloon(B, 1024)],
                                        agent)
        self.assertEqual(['SKIPPED', 'SUCCEEDED'], [o for _, o in outcomes])

    def test_a_failure_reverts_what_was_done_and_cancels_the_rest(self):
        agent = FailingAgent(B, state={'running': [A, B, C]})
        outcomes = runner.apply_actions(
            [balloon(A, 512), balloon(B, 1024), balloon(C, 768)], agent)
        self.assertEqual(['REVERTED', 'FAILED', 'CANCELLED'],
                         [o for _, o in outcomes])
        self.assertIn(('revert', 'cmp-a', A, 'balloon'), agent.calls)
        self.assertNotIn(C, [c[2] for c in agent.calls if len(c) > 2])

    def test_bad_parameters_are_refused_before_anything_runs(self):
        agent = fakes.FakeAgent(state={'running': [A]})
        bad = balloon(A, 0)
        self.assertRaises(jsonschema.ValidationError, runner.apply_actions,
                          [bad], agent)
        self.assertEqual([], agent.calls)


class TestComputeModel(base.TestCase):

    def test_every_host_a_node_every_guest_an_instance(self):
        # bench-plan's first guest had the first node's uuid: Watcher's
        # model took the instance for the node and planned one host less.
        rng = random.Random(1)
        reports = [bench.synthetic_report(i, 3, rng) for i in range(12)]
        model = runner.compute_model(reports)
        self.assertEqual(12, len(model.get_all_compute_nodes()))
        self.assertEqual(36, len(model.get_all_instances()))
        for node in model.get_all_compute_nodes().values():
            self.assertEqual(3, len(model.get_node_instances(node)))


class TestBenchHosts(base.TestCase):
    def test_bench_plan_hosts_hold_fitted_scans_the_others_none(self):
        # bench-plan weighs trades on every host; the hosts the cloud
        # benchmarks serve plan as before.
        from watcher_cams.policy import guards
        from watcher_cams.policy import report as report_format
        from watcher_cams.policy import scan_cliffs
        from watcher_cams.policy import utility
        cfg, params = guards.GuardConfig(), utility.UtilityParams()
        for every, fitted in ((bench.FITTED_EVERY, 2), (0, 0)):
            host = report_format.parse_host(bench.host_report(
                1, 0, 8, fitted_every=every))
            curves = {g.uuid: utility.value_curve(g, cfg, params)
                      for g in host.guests}
            priced = scan_cliffs.priced(host, cfg, params, {
                u: c for u, c in curves.items() if c is not None})
            self.assertEqual(fitted, sum(
                1 for c in priced.values() if c.held_cliff is not None))


class TestBenchPlanVerdict(base.TestCase):
    ROW = ('cache_aware_balloon', 'mode=utility')

    def verdict(self, times):
        lines = []
        worst = bench._print_rows([self.ROW + (sorted(times), 7)],
                                  lines.append)
        return worst, lines

    def test_the_median_decides_not_one_fast_or_slow_run(self):
        # One slow run of three (a busy machine) does not fail the target,
        # nor does one fast run pass it.
        worst, lines = self.verdict([9.0, 1.0, 1.5])
        self.assertEqual(1.5, worst)
        self.assertIn('ok', lines[1])
        self.assertIn('1.00', lines[1])
        worst, lines = self.verdict([2.5, 0.1, 2.6])
        self.assertEqual(2.5, worst)
        self.assertIn('OVER %.1f s' % bench.TARGET_S, lines[1])
        self.assertIn('2.50 s median', lines[-1])

    def test_every_strategy_runs_as_often_as_asked(self):
        lines, runs = [], []
        real = bench._timed_execute

        def counted(*args):
            runs.append(args[0])
            return real(*args)

        self.useFixture(fixtures.MonkeyPatch(
            'watcher_cams.lab.bench._timed_execute', counted))
        worst = bench.run(nodes=2, instances=3, out=lines.append, repeat=2)
        self.assertEqual(2 * len(bench.RUNS), len(runs))
        self.assertIn('each strategy run 2 times', lines[0])
        self.assertEqual(len(bench.RUNS) + 3, len(lines))
        self.assertGreater(worst, 0.0)
