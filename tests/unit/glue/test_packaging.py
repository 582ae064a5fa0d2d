import io
from unittest import mock

from stevedore import extension
from stevedore import named
from watcher.decision_engine.loading import default as de_loading
from watcher.tests.unit import base

from watcher_cams.cmd import lab
from watcher_cams.lab import bench_apply
from watcher_cams.lab import example
from watcher_cams.lab import runner
from watcher_cams.strategies import base as cams_base


class TestEntryPoints(base.TestCase):
    def names(self, namespace):
        mgr = extension.ExtensionManager(namespace, on_load_failure_callback=(
            lambda mgr, ep, exc: self.fail('%s: %s' % (ep, exc))))
        return set(mgr.names())

    def test_plugins_are_registered_and_load(self):
        self.assertLessEqual({'memory_cache_efficiency',
                              'cpu_cache_affinity'},
                             self.names('watcher_goals'))
        self.assertLessEqual({'cache_aware_balloon', 'margin_balloon',
                              'ksm_balloon', 'sharing_aware_pinning'},
                             self.names('watcher_strategies'))
        self.assertLessEqual({'cams_balloon', 'cams_host_balloon',
                              'cams_pin_vcpus', 'cams_host_pin'},
                             self.names('watcher_actions'))
        # Only ours: other projects' lists (Nova's is installed for the
        # driver extension) register on the global CONF and may clash.
        ours = ['watcher_cams', 'watcher_cams.nova']
        mgr = named.NamedExtensionManager(
            'oslo.config.opts', ours, on_load_failure_callback=(
                lambda mgr, ep, exc: self.fail('%s: %s' % (ep, exc))))
        self.assertEqual(set(ours), set(mgr.names()))
        for ext in mgr:
            self.assertTrue(ext.plugin())

    def test_goals_load_with_their_efficacy_specs(self):
        for name in ('memory_cache_efficiency', 'cpu_cache_affinity'):
            goal = de_loading.DefaultGoalLoader().load(name)
            self.assertTrue(goal.efficacy_specification.indicators_specs)


class TestWeightPlanner(base.TestCase):
    def planner(self):
        # The shipped file, read as bench-apply reads it.
        return bench_apply.weight_planner()

    def test_shipped_config_accepts_and_orders_the_actions(self):
        planner = self.planner()
        self.assertEqual(len(planner.config.weights),
                         len(set(planner.config.weights.values())),
                         'weights must be unique')
        reports = [example.PaperExample().report(),
                   _elsewhere(example.PaperExample().report(), 'cmp-b')]
        _, solution = runner.run('cache_aware_balloon',
                                 runner.compute_model(reports),
                                 runner.ReportAgent(reports))
        graph = self.graph(planner, solution)
        self.assertEqual(2, len(graph))
        for action in graph:
            # One action per host, independent of the other host's; its
            # targets shrink first.
            self.assertEqual('cams_host_balloon', action.action_type)
            self.assertEqual([], action.parents)
            first, second = action.input_parameters['targets']
            self.assertLess(first['target_mb'], first['current_mb'])
            self.assertGreater(second['target_mb'], second['current_mb'])

    def test_single_guest_balloons_keep_their_order(self):
        solution = cams_base.CamsSolution(goal=mock.Mock(),
                                          strategy=mock.Mock())
        for uuid, target in ((example.PaperExample.VM2, 3584),
                             (example.PaperExample.VM1, 4096)):
            solution.add_action('cams_balloon', resource_id=uuid,
                                input_parameters={'host': 'cmp-a',
                                                  'target_mb': target})
        shrink, grow = sorted(self.graph(self.planner(), solution),
                              key=lambda a: a.input_parameters['target_mb'])
        # parallelization 1: the grow waits for the shrink.
        self.assertEqual([shrink.uuid], grow.parents)

    def graph(self, planner, solution):
        ordered = planner.get_sorted_actions_by_weight(
            self.context, mock.Mock(id=1), solution)
        return list(planner.compute_action_graph(ordered).nodes())


def _elsewhere(report, host):
    """``report`` as another host's, with guests of their own."""
    report['host'] = host
    for guest in report['guests']:
        guest['uuid'] = guest['uuid'][:-4] + 'bbbb'
    return report


class TestLabCommand(base.TestCase):
    def test_example_prints_plans_and_cycles(self):
        out = io.StringIO()
        with mock.patch('sys.stdout', out):
            self.assertEqual(0, lab.main(['example', '--cycles', '2']))
        text = out.getvalue()
        for strategy, _ in lab.STRATEGY_RUNS:
            self.assertIn('== %s' % strategy, text)
        self.assertIn('vm1-hotcold', text)
        self.assertIn('cams_host_balloon', text)
