import io
import os
from unittest import mock

from oslo_config import cfg
from stevedore import extension
from stevedore import named
from watcher.decision_engine.loading import default as de_loading
from watcher.decision_engine.planner import weight
from watcher.tests.unit import base

from watcher_cams.cmd import lab
from watcher_cams.lab import example
from watcher_cams.lab import runner

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
WATCHER_CONF = os.path.join(TOP, 'etc', 'watcher-cams', 'watcher.conf.d',
                            '50-watcher-cams.conf')


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
        self.assertLessEqual({'cams_balloon', 'cams_pin_vcpus'},
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
        conf = cfg.ConfigOpts()
        group = 'watcher_planners.weight'
        conf.register_opts(weight.WeightPlanner.get_config_opts(), group)
        conf(args=[], default_config_files=[WATCHER_CONF])
        return weight.WeightPlanner(conf[group])

    def test_shipped_config_accepts_and_orders_the_actions(self):
        planner = self.planner()
        self.assertEqual(len(planner.config.weights),
                         len(set(planner.config.weights.values())),
                         'weights must be unique')
        ex = example.PaperExample()
        rep = ex.report()
        _, solution = runner.run('cache_aware_balloon',
                                 runner.compute_model([rep]),
                                 runner.ReportAgent([rep]))
        plan = mock.Mock(id=1)
        ordered = planner.get_sorted_actions_by_weight(self.context, plan,
                                                       solution)
        graph = planner.compute_action_graph(ordered)
        actions = list(graph.nodes())
        self.assertEqual(2, len(actions))
        shrink = [a for a in actions if a.input_parameters['target_mb']
                  < a.input_parameters['current_mb']][0]
        grow = [a for a in actions if a is not shrink][0]
        # parallelization 1: the grow waits for the shrink.
        self.assertEqual([shrink.uuid], grow.parents)


class TestLabCommand(base.TestCase):
    def test_example_prints_plans_and_cycles(self):
        out = io.StringIO()
        with mock.patch('sys.stdout', out):
            self.assertEqual(0, lab.main(['example', '--cycles', '2']))
        text = out.getvalue()
        for strategy, _ in lab.STRATEGY_RUNS:
            self.assertIn('== %s' % strategy, text)
        self.assertIn('vm1-hotcold', text)
        self.assertIn('cams_balloon', text)
