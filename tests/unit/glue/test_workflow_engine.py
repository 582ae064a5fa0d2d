"""The workflow engine reverts what a failed or cancelled plan applied."""

import datetime
from unittest import mock

from watcher.applier.loading import default as loading
from watcher.applier.workflow_engine import default
from watcher.common import exception
from watcher.tests.unit import base

from watcher_cams import rpcapi
from watcher_cams import workflow_engine

T0 = datetime.datetime(2026, 11, 23, 12, 0, 0)


def db_action(uuid, action_type, state, second, message=None):
    return mock.Mock(uuid=uuid, action_type=action_type, state=state,
                     status_message=message,
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
                   db_action('c', 'cams_balloon', 'FAILED', 4),
                   db_action('d', 'cams_balloon', 'PENDING', 0),
                   db_action('e', 'cams_balloon', 'SUCCEEDED', 0,
                             message='Reverted: earlier')]
        self.run_plan(actions)
        self.assertEqual(['b', 'a'], self.reverted)
        messages = [c.kwargs['status_message']
                    for c in self.engine.notify.call_args_list]
        self.assertEqual(['Reverted: an action of the plan failed'] * 2,
                         messages)

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
        self.assertEqual(['a'], self.reverted)
        self.assertIn('Not reverted after',
                      self.engine.notify.call_args_list[0].kwargs[
                          'status_message'])
