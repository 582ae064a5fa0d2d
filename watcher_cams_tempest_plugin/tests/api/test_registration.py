"""Watcher knows the plugin: its goals, strategies and their parameters."""

from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from watcher_cams_tempest_plugin.tests import base


class TestRegistration(base.BaseWatcherCamsTest):

    @decorators.idempotent_id('a3d0c8f6-1b7e-4f0e-9a52-6c8e2b8f4d01')
    def test_goals_with_efficacy_specifications(self):
        goals = {g['name']: g for g in self.optim.list_goals()}
        for name in set(base.STRATEGY_GOALS.values()):
            self.assertIn(name, goals)
            # What a plan achieved is reported against these indicators.
            self.assertTrue(goals[name]['efficacy_specification'], name)

    @decorators.idempotent_id('5b9e7e2c-4c1d-4d64-8f0a-2a7d3c9b6e12')
    def test_strategies_under_their_goals_with_parameters(self):
        for strategy, goal in base.STRATEGY_GOALS.items():
            listed = {s['name'] for s in self.optim.list_strategies(goal)}
            self.assertIn(strategy, listed, goal)
            shown = self.optim.show_strategy(strategy)
            self.assertEqual(goal, shown['goal_name'])
            spec = shown['parameters_spec']
            self.assertEqual('object', spec['type'], strategy)
            self.assertTrue(spec['properties'], strategy)
        modes = self.optim.show_strategy('cache_aware_balloon')[
            'parameters_spec']['properties']['mode']
        self.assertEqual({'paper', 'utility'}, set(modes['enum']))

    @decorators.idempotent_id('0e4f1d7a-8c35-4b2e-b6d9-3f1a5e7c9b23')
    def test_an_audit_template_per_strategy(self):
        for strategy, goal in base.STRATEGY_GOALS.items():
            template = self.create_audit_template(strategy)
            shown = self.optim.show_audit_template(template['uuid'])
            self.assertEqual((goal, strategy),
                             (shown['goal_name'], shown['strategy_name']))

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('c7a2e9b4-6d13-4f8a-9e05-1b4d8f2a6c34')
    def test_a_bad_audit_parameter_is_refused(self):
        template = self.create_audit_template('cache_aware_balloon')
        self.assertRaises(lib_exc.BadRequest, self.optim.create_audit,
                          audit_template_uuid=template['uuid'],
                          audit_type='ONESHOT',
                          parameters={'mode': 'lottery'})
