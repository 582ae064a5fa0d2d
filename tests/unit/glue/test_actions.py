import jsonschema
from watcher.applier.loading import default as loading
from watcher.common import exception
from watcher.tests.unit import base

from tests.unit.glue import fakes
from watcher_cams import rpcapi

UUID = '11111111-1111-4111-8111-111111111111'
OTHER = '22222222-2222-4222-8222-222222222222'
GONE = '33333333-3333-4333-8333-333333333333'
NODE = '99999999-9999-4999-8999-999999999999'


class TestActions(base.TestCase):
    def load(self, name, params, agent=None):
        action = loading.DefaultActionLoader().load(name)
        action.input_parameters = dict(params, resource_id=UUID)
        action.agent = agent or fakes.FakeAgent(state={'running': [UUID]})
        return action

    def test_balloon_executes_and_reverts_through_the_agent(self):
        action = self.load('cams_balloon', {'host': 'cmp-a',
                                            'target_mb': 1024,
                                            'current_mb': 2048,
                                            'reason': 'test'})
        self.assertTrue(action.validate_parameters())
        action.pre_condition()
        self.assertTrue(action.execute())
        action.revert()
        self.assertEqual([('get_state', 'cmp-a'),
                          ('set_balloon', 'cmp-a', UUID, 1024),
                          ('revert', 'cmp-a', UUID, 'balloon')],
                         action.agent.calls)
        # Loaded outside the plugin's workflow engine: no change id.
        self.assertEqual([None, None], action.agent.change_ids)

    def test_pin_executes_and_reverts(self):
        action = self.load('cams_pin_vcpus', {'host': 'cmp-a',
                                              'cpus': [2, 3], 'llc': 'L3-1'})
        self.assertTrue(action.validate_parameters())
        action.change_id = 'the-action-uuid'
        self.assertTrue(action.execute())
        action.revert()
        self.assertEqual(['the-action-uuid'] * 2, action.agent.change_ids)
        self.assertIn(('set_affinity', 'cmp-a', UUID, [2, 3]),
                      action.agent.calls)
        self.assertIn(('revert', 'cmp-a', UUID, 'affinity'),
                      action.agent.calls)

    def test_abort_lets_the_change_finish(self):
        # Without abort() Watcher's cancel marks the action FAILED with an
        # AttributeError; False makes it SUCCEEDED, as it finishes.
        for name, params in (('cams_balloon', {'host': 'cmp-a',
                                               'target_mb': 1024}),
                             ('cams_pin_vcpus', {'host': 'cmp-a',
                                                 'cpus': [2]})):
            action = self.load(name, params)
            self.assertIs(False, action.abort())
            self.assertEqual([], action.agent.calls)

    def test_schema_rejects_bad_parameters(self):
        for name, params in (
                ('cams_balloon', {'host': 'cmp-a', 'target_mb': 0}),
                ('cams_balloon', {'host': 'cmp-a', 'target_mb': '1024'}),
                ('cams_balloon', {'target_mb': 1024}),
                ('cams_balloon', {'host': 'cmp-a', 'target_mb': 1,
                                  'extra': 1}),
                ('cams_pin_vcpus', {'host': 'cmp-a', 'cpus': []}),
                ('cams_pin_vcpus', {'host': 'cmp-a', 'cpus': [-1]})):
            action = self.load(name, params)
            self.assertRaises(jsonschema.ValidationError,
                              action.validate_parameters)

    def test_gone_instance_is_skipped(self):
        action = self.load('cams_balloon', {'host': 'cmp-a',
                                            'target_mb': 1024},
                           fakes.FakeAgent(state={'running': []}))
        self.assertRaises(exception.ActionSkipped, action.pre_condition)

    def test_unreachable_agent_fails_cleanly(self):
        agent = fakes.FakeAgent(down={'cmp-a'})
        action = self.load('cams_balloon', {'host': 'cmp-a',
                                            'target_mb': 1024}, agent)
        exc = self.assertRaises(exception.WatcherException,
                                action.pre_condition)
        self.assertIn('cmp-a did not answer', str(exc))
        self.assertFalse(action.execute())
        self.assertRaises(rpcapi.AgentUnreachable, action.revert)


class TestHostBalloon(base.TestCase):
    """cams_host_balloon: one host's ordered targets, reverted as one."""

    def load(self, targets, running=(UUID, OTHER)):
        action = loading.DefaultActionLoader().load('cams_host_balloon')
        action.input_parameters = {
            'resource_id': NODE, 'host': 'cmp-a', 'reason': '1 shrink',
            'targets': [dict(instance=u, target_mb=t, current_mb=c,
                             reason='r') for u, t, c in targets]}
        action.agent = fakes.FakeAgent(state={'running': list(running)})
        action.change_id = 'the-action-uuid'
        return action

    def test_applies_the_running_targets_in_order_in_one_call(self):
        action = self.load([(OTHER, 512, 1024), (GONE, 256, 512),
                            (UUID, 1536, 1024)])
        self.assertTrue(action.validate_parameters())
        action.pre_condition()
        self.assertTrue(action.execute())
        self.assertEqual([('get_state', 'cmp-a'),
                          ('set_balloons', 'cmp-a',
                           [(OTHER, 512), (UUID, 1536)])],
                         action.agent.calls)
        self.assertEqual(['the-action-uuid'], action.agent.change_ids)

    def test_none_running_is_skipped(self):
        action = self.load([(UUID, 512, 1024)], running=())
        self.assertRaises(exception.ActionSkipped, action.pre_condition)

    def test_revert_undoes_every_target_in_one_call(self):
        action = self.load([(OTHER, 512, 1024), (UUID, 1536, 1024)])
        answer = action.revert()
        self.assertEqual(('revert_balloons', 'cmp-a', [OTHER, UUID]),
                         action.agent.calls[-1])
        self.assertEqual({OTHER, UUID}, set(answer['reverted']))
        # Nothing recorded under its change id: the engine leaves it be.
        action.agent.reverts = {u: {'not_applied': 'x'}
                                for u in (OTHER, UUID)}
        self.assertEqual({'not_applied': 'the-action-uuid'},
                         action.revert())
        action.agent.reverts = {UUID: {'error': 'below the floor'}}
        exc = self.assertRaises(exception.WatcherException, action.revert)
        self.assertIn('1 of 2 balloon changes not reverted: below the floor',
                      str(exc))

    def test_schema_rejects_bad_targets(self):
        for targets in ([], [{'instance': UUID}],
                        [{'instance': 'nope', 'target_mb': 512}],
                        [{'instance': UUID, 'target_mb': 512, 'x': 1}],
                        [{'instance': UUID, 'target_mb': 0}],
                        [{'instance': UUID, 'target_mb': 512}] * 257):
            action = self.load([])
            action.input_parameters['targets'] = targets
            self.assertRaises(jsonschema.ValidationError,
                              action.validate_parameters)


class TestHostPin(base.TestCase):
    """cams_host_pin: one host's pins in order, reverted as one."""

    def load(self, pins, running=(UUID, OTHER)):
        action = loading.DefaultActionLoader().load('cams_host_pin')
        action.input_parameters = {
            'resource_id': NODE, 'host': 'cmp-a', 'reason': '2 pinned',
            'pins': [dict(instance=u, cpus=c, llc='L3-0', reason='r')
                     for u, c in pins]}
        action.agent = fakes.FakeAgent(state={'running': list(running)})
        action.change_id = 'the-action-uuid'
        return action

    def test_pins_the_running_instances_in_order(self):
        action = self.load([(OTHER, [2, 3]), (GONE, [2, 3]), (UUID, [0])])
        self.assertTrue(action.validate_parameters())
        action.pre_condition()
        self.assertTrue(action.execute())
        self.assertEqual([('get_state', 'cmp-a'),
                          ('set_affinity', 'cmp-a', OTHER, [2, 3]),
                          ('set_affinity', 'cmp-a', UUID, [0])],
                         action.agent.calls)
        self.assertEqual(['the-action-uuid'] * 2, action.agent.change_ids)

    def test_an_instance_gone_meanwhile_is_skipped_an_error_fails(self):
        action = self.load([(OTHER, [2]), (UUID, [0])])
        calls = []

        def set_affinity(host, instance, cpus, reason, change_id):
            calls.append(instance)
            raise rpcapi.AgentError(host, 'set_affinity', self.error, 'x')
        action.agent.set_affinity = set_affinity
        self.error = 'UnknownInstance'
        self.assertTrue(action.execute())
        self.assertEqual({'changed': {}, 'gone': [OTHER, UUID]},
                         action.result)
        self.error = 'Refused'
        self.assertFalse(action.execute())
        self.assertEqual([OTHER, UUID, OTHER], calls)

    def test_revert_undoes_every_pin_last_first(self):
        action = self.load([(OTHER, [2]), (UUID, [0])])
        answer = action.revert()
        self.assertEqual([('revert', 'cmp-a', UUID, 'affinity'),
                          ('revert', 'cmp-a', OTHER, 'affinity')],
                         action.agent.calls)
        self.assertEqual(['the-action-uuid'] * 2, action.agent.change_ids)
        self.assertEqual({OTHER, UUID}, set(answer['reverted']))

        def refused(host, instance, kind, change_id=None):
            raise rpcapi.AgentError(host, 'revert', 'Refused', 'later change')
        action.agent.revert = refused
        exc = self.assertRaises(exception.WatcherException, action.revert)
        self.assertIn('2 of 2 affinity changes not reverted', str(exc))

    def test_schema_rejects_bad_pins(self):
        for pins in ([], [{'instance': UUID}],
                     [{'instance': UUID, 'cpus': []}],
                     [{'instance': 'nope', 'cpus': [1]}],
                     [{'instance': UUID, 'cpus': [1], 'x': 1}],
                     [{'instance': UUID, 'cpus': [-1]}],
                     [{'instance': UUID, 'cpus': [1]}] * 257):
            action = self.load([])
            action.input_parameters['pins'] = pins
            self.assertRaises(jsonschema.ValidationError,
                              action.validate_parameters)
