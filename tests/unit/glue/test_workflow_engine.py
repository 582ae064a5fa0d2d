"""The workflow engine reverts what a failed or cancelled plan applied."""

import datetime
from unittest import mock

import fixtures

from watcher.applier.loading import default as loading
from watcher.applier.workflow_engine import default
from watcher.common import exception
from watcher.tests.unit import base

from watcher_cams import rpcapi
from watcher_cams import workflow_engine

T0 = datetime.datetime(2026, 11, 23, 12, 0, 0)


def db_action(uuid, action_type, state, second, message=None,
              host='cmp-a'):
    return mock.Mock(uuid=uuid, action_type=action_type, state=state,
                     status_message=message,
                     input_parameters={'host': host} if host else {},
                     updated_at=T0 + datetime.timedelta(seconds=second))


class TestRevertingEngine(base.TestCase):

    def setUp(self):
        super().setUp()
        self.engine = workflow_engine.RevertingWorkFlowEngine(config={})
        self.engine.notify = mock.Mock()
        self.reverted = []
        self.engine._action_factory = mock.Mock()
        self.engine._action_factory.make_action.side_effect = self._make

    def _make(self, action):
        loaded = mock.Mock()
        loaded.revert.side_effect = lambda: self.reverted.append(
            action.uuid) or {'actual_mb': 512}
        return loaded

    def run_plan(self, actions, outcome=None):
        by_uuid = {a.uuid: a for a in actions}
        with mock.patch.object(default.DefaultWorkFlowEngine, 'execute',
                               side_effect=outcome), \
                mock.patch('watcher.objects.Action.get_by_uuid',
                           lambda ctx, uuid: by_uuid[uuid]):
            return self.engine.execute(actions)

    def test_loaded_by_watcher_under_its_entry_point(self):
        engine = loading.DefaultWorkFlowEngineLoader().load('cams_taskflow')
        self.assertIsInstance(engine,
                              workflow_engine.RevertingWorkFlowEngine)

    def test_a_plan_that_succeeds_is_left_alone(self):
        self.run_plan([db_action('a', 'cams_balloon', 'SUCCEEDED', 1)])
        self.assertEqual([], self.reverted)
        self.engine.notify.assert_not_called()

    def test_a_failed_action_reverts_ours_newest_first(self):
        actions = [db_action('a', 'cams_balloon', 'SUCCEEDED', 1),
                   db_action('m', 'migrate', 'SUCCEEDED', 2),
                   db_action('b', 'cams_pin_vcpus', 'SUCCEEDED', 3),
                   db_action('c', 'cams_host_balloon', 'FAILED', 4),
                   db_action('d', 'cams_balloon', 'PENDING', 0),
                   db_action('e', 'cams_balloon', 'SUCCEEDED', 0,
                             message='Reverted: earlier')]
        self.run_plan(actions)
        # The FAILED one too: its agent may have made the change and died
        # before it replied (the change id tells the agent which).
        self.assertEqual(['c', 'b', 'a'], self.reverted)
        messages = [c.kwargs['status_message']
                    for c in self.engine.notify.call_args_list]
        self.assertEqual(['Reverted: an action of the plan failed'] * 3,
                         messages)

    def test_a_failed_host_action_reverts_only_its_own_host(self):
        actions = [db_action('a', 'cams_host_balloon', 'SUCCEEDED', 1),
                   db_action('b', 'cams_host_balloon', 'FAILED', 2,
                             host='cmp-b'),
                   db_action('c', 'cams_host_balloon', 'SUCCEEDED', 3,
                             host='cmp-c'),
                   db_action('d', 'cams_balloon', 'SUCCEEDED', 0,
                             host='cmp-b')]
        self.run_plan(actions)
        self.assertEqual(['b', 'd'], self.reverted)
        # A failed action of Watcher's own (no host of ours): all of it.
        del self.reverted[:]
        actions[1] = db_action('m', 'migrate', 'FAILED', 2, host=None)
        self.run_plan(actions)
        self.assertEqual(['c', 'a', 'd'], self.reverted)

    def test_a_change_the_agent_never_made_keeps_its_failure(self):
        actions = [db_action('a', 'cams_balloon', 'SUCCEEDED', 1),
                   db_action('c', 'cams_balloon', 'FAILED', 2,
                             message='below the floor')]

        def make(action):
            loaded = mock.Mock()
            loaded.revert.side_effect = lambda: self.reverted.append(
                action.uuid) or ({'not_applied': 'c'} if action.uuid == 'c'
                                 else {'actual_mb': 512})
            return loaded
        self.engine._action_factory.make_action.side_effect = make
        self.run_plan(actions)
        self.assertEqual(['c', 'a'], self.reverted)
        self.assertEqual(
            ['a'], [c.args[0].uuid
                    for c in self.engine.notify.call_args_list])

    def test_agent_actions_carry_their_uuid_as_change_id(self):
        engine = workflow_engine.RevertingWorkFlowEngine(config={})
        balloon = mock.Mock(
            uuid='0f6e4c44-3b0e-4f0e-9d59-5c3f1c0e7a11',
            action_type='cams_balloon', input_parameters={
                'resource_id': '11111111-1111-4111-8111-111111111111',
                'host': 'cmp-a', 'target_mb': 512})
        action = engine.action_factory.make_action(balloon)
        self.assertEqual(balloon.uuid, action.change_id)
        nop = mock.Mock(uuid='u', action_type='nop',
                        input_parameters={'message': 'hi'})
        self.assertFalse(hasattr(engine.action_factory.make_action(nop),
                                 'change_id'))

    def test_a_cancelled_plan_reverts_and_stays_cancelled(self):
        actions = [db_action('a', 'cams_balloon', 'SUCCEEDED', 1),
                   db_action('b', 'cams_balloon', 'CANCELLED', 0)]
        self.assertRaises(
            exception.ActionPlanCancelled, self.run_plan, actions,
            exception.ActionPlanCancelled(uuid='p'))
        self.assertEqual(['a'], self.reverted)

    def test_an_agent_that_cannot_revert_is_reported_not_raised(self):
        actions = [db_action('a', 'cams_balloon', 'SUCCEEDED', 1),
                   db_action('b', 'cams_balloon', 'SUCCEEDED', 2),
                   db_action('c', 'cams_balloon', 'FAILED', 3)]

        def make(action):
            loaded = mock.Mock()
            if action.uuid == 'b':
                loaded.revert.side_effect = rpcapi.AgentUnreachable(
                    'cmp-a', 'timed out')
            else:
                loaded.revert.side_effect = lambda: self.reverted.append(
                    action.uuid)
            return loaded
        self.engine._action_factory.make_action.side_effect = make
        self.run_plan(actions)
        self.assertEqual(['c', 'a'], self.reverted)
        self.assertEqual(
            ['Reverted: an action of the plan failed',
             'Not reverted after an action of the plan failed: '
             'watcher-cams-agent on cmp-a did not answer: timed out',
             'Reverted: an action of the plan failed'],
            [c.kwargs['status_message']
             for c in self.engine.notify.call_args_list])


class FakeContainer:
    """Records the phases taskflow would call, in one shared log."""

    log = []

    def __init__(self, db_action, engine):
        self.uuid = db_action.uuid

    def pre_execute(self):
        if self.uuid == 'cancel-me':
            raise exception.ActionPlanCancelled(uuid='p')
        self.log.append(('pre', self.uuid))

    def execute(self):
        self.log.append(('run', self.uuid))
        return True

    def post_execute(self):
        self.log.append(('post', self.uuid))


class TestLayeredPlans(base.TestCase):
    """Large plans run step by step, without taskflow's graph."""

    def setUp(self):
        super().setUp()
        self.engine = workflow_engine.RevertingWorkFlowEngine(
            config={'max_workers': 4})
        self.engine.config = mock.Mock(max_workers=4)
        self.engine.get_execution_rule = lambda actions: None
        self.engine.revert_applied = mock.Mock()
        self.useFixture(fixtures.MockPatchObject(
            workflow_engine, 'LAYERED_FROM', 3))
        self.useFixture(fixtures.MockPatchObject(
            default, 'TaskFlowActionContainer', FakeContainer))
        FakeContainer.log = []

    def run_plan(self, actions):
        by_uuid = {a.uuid: a for a in actions}
        with mock.patch('watcher.objects.Action.get_by_uuid',
                        lambda ctx, uuid: by_uuid[uuid]), \
                mock.patch.object(default.DefaultWorkFlowEngine, 'execute',
                                  side_effect=AssertionError('taskflow')):
            return self.engine.execute(actions)

    def test_each_step_after_the_one_before(self):
        first = [plan_action('a%d' % i, []) for i in range(3)]
        second = [plan_action('b%d' % i, ['a0', 'a1', 'a2'])
                  for i in range(3)]
        self.run_plan(second + first)
        log = FakeContainer.log
        self.assertEqual(18, len(log))
        last_of_first = max(log.index(('post', a.uuid)) for a in first)
        first_of_second = min(log.index(('pre', b.uuid)) for b in second)
        self.assertLess(last_of_first, first_of_second)
        for uuid in ('a0', 'b2'):
            self.assertLess(log.index(('pre', uuid)),
                            log.index(('run', uuid)))
            self.assertLess(log.index(('run', uuid)),
                            log.index(('post', uuid)))

    def test_a_long_chain_and_a_cycle(self):
        chain = [plan_action('c0', [])] + [
            plan_action('c%d' % i, ['c%d' % (i - 1)]) for i in range(1, 3000)]
        self.assertEqual([[a] for a in chain],
                         workflow_engine._layers(chain[::-1]))
        loop = [plan_action('x', ['y']), plan_action('y', ['x'])]
        self.assertRaises(exception.WorkflowExecutionException,
                          workflow_engine._layers, loop)

    def test_a_cancel_stops_the_steps_after_it_and_reverts(self):
        actions = [plan_action('a0', []), plan_action('cancel-me', []),
                   plan_action('a2', []),
                   plan_action('b0', ['a0', 'cancel-me', 'a2'])]
        self.assertRaises(exception.ActionPlanCancelled, self.run_plan,
                          actions)
        self.assertNotIn(('pre', 'b0'), FakeContainer.log)
        self.engine.revert_applied.assert_called_once_with(
            actions, 'the action plan was cancelled')


def plan_action(uuid, parents):
    return mock.Mock(uuid=uuid, parents=parents, action_type='nop',
                     state='SUCCEEDED', input_parameters={})
