"""Watcher's taskflow engine, plus the revert of a failed or cancelled plan.

Watcher 17's engine catches a failing action inside its task, so taskflow
never reverts anything, and ``[watcher_applier]
rollback_when_actionplan_failed`` is deprecated as not working; a cancel
reverts nothing by design. This engine runs a plan as Watcher's does:
through taskflow, or, for a plan of LAYERED_FROM actions or more, step by
step with Watcher's own task containers (taskflow could not start a plan
of 5,000 actions). When an action failed, it then reverts the
watcher-cams actions of the plan on that action's host that succeeded or
failed, newest first, each through its agent (which restores what it
recorded before the change); when the plan was cancelled or failed as a
whole, those of every host.
Other actions (migrations, resizes) are Watcher's own and stay as they are.

Each watcher-cams action passes its Watcher uuid to the agent as the change
id, which the agent records with the change. A revert names it, so the
agent undoes exactly that change: a FAILED action whose agent recorded and
made the change but died before replying is undone too, and one the agent
never recorded (refused, or lost) undoes nothing else in its place.

A reverted action keeps its state (Watcher has no state for it) and says
``Reverted: ...`` in its status message.
"""

from concurrent import futures

from oslo_log import log
from watcher.applier.actions import factory
from watcher.applier.workflow_engine import default
from watcher.common import exception
from watcher import objects

from watcher_cams.actions import base as actions_base
from watcher_cams import rpcapi

LOG = log.getLogger(__name__)

KINDS = ('cams_balloon', 'cams_host_balloon', 'cams_pin_vcpus',
         'cams_host_pin')
# Plans of at least this many actions run layer by layer, not by taskflow.
LAYERED_FROM = 200
REVERTED = 'Reverted: '
REVERTIBLE = (objects.action.State.SUCCEEDED, objects.action.State.FAILED)


def _host(db_action):
    return (db_action.input_parameters or {}).get('host')


def _hosts(failed):
    """The hosts whose changes the failed actions call back, None: all.

    An action that names no host (not the plugin's) fails the plan as a
    whole, as before: everything of the plan is reverted.
    """
    hosts = {_host(a) for a in failed}
    return None if None in hosts else hosts


def _layers(actions):
    """The actions by step: each after all its parents, in plan order.

    Kahn's order, level by level (a chain of thousands of one-at-a-time
    actions is as deep as it is long: no recursion, no rescans).
    """
    order = {a.uuid: n for n, a in enumerate(actions)}
    children = {uuid: [] for uuid in order}
    missing = {}
    for action in actions:
        parents = {p for p in action.parents if p in order}
        missing[action.uuid] = len(parents)
        for parent in parents:
            children[parent].append(action)
    layer = [a for a in actions if not missing[a.uuid]]
    layers = []
    while layer:
        layers.append(layer)
        ready = []
        for action in layer:
            for child in children[action.uuid]:
                missing[child.uuid] -= 1
                if not missing[child.uuid]:
                    ready.append(child)
        layer = sorted(ready, key=lambda a: order[a.uuid])
    if sum(map(len, layers)) < len(actions):
        raise exception.WorkflowExecutionException(
            error="the plan's actions depend on each other in a cycle")
    return layers


def _run_task(container):
    """One action as taskflow runs its task: the three phases."""
    container.pre_execute()
    container.execute()
    container.post_execute()


class ChangeIdActionFactory(factory.ActionFactory):
    """Watcher's action factory; agent actions get their uuid as change id."""

    def make_action(self, object_action, osc=None):
        action = super().make_action(object_action, osc=osc)
        if isinstance(action, actions_base.AgentAction):
            action.change_id = object_action.uuid
        return action


class RevertingWorkFlowEngine(default.DefaultWorkFlowEngine):
    """Taskflow as Watcher runs it; what failed or was cancelled reverts."""

    def __init__(self, config, context=None, applier_manager=None):
        super().__init__(config, context, applier_manager)
        self._action_factory = ChangeIdActionFactory()

    def execute(self, actions):
        try:
            flow = self._run(actions)
        except exception.ActionPlanCancelled:
            self.revert_applied(actions, 'the action plan was cancelled')
            raise
        except Exception:
            self.revert_applied(actions, 'the action plan failed')
            raise
        failed = [a for a in map(self._reload, actions)
                  if a.state == objects.action.State.FAILED]
        if failed:
            self.revert_applied(actions, 'an action of the plan failed',
                                _hosts(failed))
        return flow

    def _run(self, actions):
        """Taskflow, or layer after layer for a large plan.

        The weight planner links every action of a step to every action of
        the step before; taskflow compiled that graph for minutes, in
        gigabytes, before the first of 5,000 actions ran. A large plan
        without an execution rule runs the same steps in the same order
        instead, each action through Watcher's own task container (its
        checks, states and notifications), max_workers at a time.
        """
        if len(actions) < LAYERED_FROM:
            return super().execute(actions)
        self.execution_rule = self.get_execution_rule(actions)
        if self.execution_rule:
            return super().execute(actions)
        containers = {a.uuid: default.TaskFlowActionContainer(a, self)
                      for a in actions}
        with futures.ThreadPoolExecutor(
                max_workers=self.config.max_workers,
                thread_name_prefix='cams-applier') as pool:
            for layer in _layers(actions):
                # list(): wait for the layer; a cancel raises from here.
                list(pool.map(_run_task, [containers[a.uuid]
                                          for a in layer]))
        return None

    def _reload(self, action):
        return objects.Action.get_by_uuid(self.context, action.uuid)

    def revert_applied(self, actions, why, hosts=None):
        """Revert the plan's run watcher-cams actions, newest first.

        Only those on ``hosts`` when given: a host whose action failed is
        put back as it was, and the other hosts keep their changes, which
        went through and do not depend on it.
        """
        order = {a.uuid: n for n, a in enumerate(actions)}
        done = [self._reload(a) for a in actions if a.action_type in KINDS]
        done = [a for a in done
                if a.state in REVERTIBLE
                and (hosts is None or _host(a) in hosts)
                and not (a.status_message or '').startswith(REVERTED)]
        done.sort(key=lambda a: (a.updated_at is not None, a.updated_at,
                                 order[a.uuid]), reverse=True)
        for db_action in done:
            try:
                action = self.action_factory.make_action(db_action)
                answer = action.revert()
            except (rpcapi.AgentUnreachable, rpcapi.AgentError,
                    exception.WatcherException) as exc:
                # The guest keeps the change; the guards held when it was
                # made and the next audit sees it.
                LOG.error('%s %s of the plan was not reverted after %s: %s',
                          db_action.action_type, db_action.uuid, why, exc)
                self.notify(db_action, db_action.state,
                            status_message='Not reverted after %s: %s'
                            % (why, exc))
                continue
            if isinstance(answer, dict) and 'not_applied' in answer:
                # Refused or lost before the agent recorded it: its state
                # and message (the failure) stay as they are.
                LOG.info('%s %s: the agent never applied it, nothing to '
                         'revert', db_action.action_type, db_action.uuid)
                continue
            LOG.warning('%s %s reverted after %s: %s', db_action.action_type,
                        db_action.uuid, why, answer)
            self.notify(db_action, db_action.state,
                        status_message=REVERTED + why)
