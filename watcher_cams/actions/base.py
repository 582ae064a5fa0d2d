"""Common part of the actions: parameters, agent client, revert."""

import abc

from oslo_log import log
from watcher.applier.actions import base
from watcher.common import exception

from watcher_cams import rpc_common
from watcher_cams import rpcapi

LOG = log.getLogger(__name__)

UUID_PATTERN = ('^([a-fA-F0-9]){8}-([a-fA-F0-9]){4}-([a-fA-F0-9]){4}-'
                '([a-fA-F0-9]){4}-([a-fA-F0-9]){12}$')

COMMON_PROPERTIES = {
    'resource_id': {'type': 'string', 'pattern': UUID_PATTERN},
    'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    'reason': {'type': 'string', 'maxLength': 255},
}


class AgentUnavailable(exception.WatcherException):
    msg_fmt = 'watcher-cams-agent unavailable: %(reason)s'


class AgentAction(rpcapi.UsesAgent, base.BaseAction, metaclass=abc.ABCMeta):
    """An action carried out by the watcher-cams-agent of ``host``."""

    KIND = None

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self.result = None
        # Set by the plugin's workflow engine (the Watcher action's uuid):
        # the agent records it with the change, so a revert undoes exactly
        # this change, even one whose reply never came back.
        self.change_id = None

    @property
    def host(self):
        return self.input_parameters['host']

    @property
    def instance(self):
        return self.resource_id

    @property
    def reason(self):
        return self.input_parameters.get('reason', '')

    @abc.abstractmethod
    def apply(self):
        """Ask the agent to make the change; returns its answer."""

    def running_instances(self):
        """The uuids of the instances running on the host, says its agent."""
        try:
            state = self.agent.get_state(self.host)
        except (rpcapi.AgentUnreachable, rpcapi.AgentError) as exc:
            raise AgentUnavailable(reason=str(exc))
        return state.get('running', []) if isinstance(state, dict) else []

    def pre_condition(self):
        """Skip when the instance no longer runs on the host."""
        if self.instance not in self.running_instances():
            raise exception.ActionSkipped(
                'instance %s is not running on %s' % (self.instance,
                                                      self.host))

    def execute(self):
        try:
            self.result = self.apply()
        except (rpcapi.AgentUnreachable, rpcapi.AgentError) as exc:
            LOG.error('%s of %s on %s failed: %s', self.KIND, self.instance,
                      self.host, exc)
            return False
        LOG.info('%s of %s on %s done: %s (%s)', self.KIND, self.instance,
                 self.host, self.result, self.reason)
        return True

    def revert(self):
        """Restore what the agent recorded before this action."""
        answer = self.agent.revert(self.host, self.instance, self.KIND,
                                   change_id=self.change_id)
        LOG.warning('%s of %s on %s reverted: %s', self.KIND, self.instance,
                    self.host, answer)
        return answer

    def abort(self):
        """Let a change in flight finish; Watcher then counts it as done.

        One agent call takes seconds and leaves the guest within the
        guards, and interrupting it could leave the agent's record and the
        guest apart. The plugin's workflow engine (cams_taskflow) then
        reverts it with the rest of the cancelled plan.
        """
        LOG.info('%s of %s on %s cannot be interrupted; it finishes',
                 self.KIND, self.instance, self.host)
        return False

    def post_condition(self):
        pass


class NotAllReverted(exception.WatcherException):
    msg_fmt = '%(count)d of %(total)d %(kind)s changes not reverted: %(why)s'


class HostAction(AgentAction, metaclass=abc.ABCMeta):
    """Several instances' changes on one host, as one action.

    A plan of one action per guest grows with the cloud (200,000 actions
    for 5,000 hosts of 40 guests) and Watcher stores and schedules each of
    them. A host action carries the host's changes in the order the policy
    gave them under ``LIST_KEY`` (at most ``rpc_common.MAX_BATCH``), is
    applied in that order and reverted as one. ``resource_id`` is the
    compute node. Actions on different hosts are independent, so the
    applier runs them in parallel (etc/watcher-cams/watcher.conf.d).
    """

    LIST_KEY = None
    # Fields every entry needs besides ``instance``.
    ENTRY_REQUIRED = ()

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self._running = None

    @abc.abstractmethod
    def entry_properties(self):
        """JSON schema properties of one entry (besides ``instance``)."""

    @property
    def schema(self):
        props = dict(COMMON_PROPERTIES)
        props['resource_id'] = {'type': 'string', 'minLength': 1,
                                'maxLength': 255}
        entry = {'type': 'object',
                 'properties': dict(self.entry_properties(), instance={
                     'type': 'string', 'pattern': UUID_PATTERN}),
                 'required': ['instance', *self.ENTRY_REQUIRED],
                 'additionalProperties': False}
        props[self.LIST_KEY] = {'type': 'array', 'items': entry,
                                'minItems': 1,
                                'maxItems': rpc_common.MAX_BATCH}
        return {'type': 'object', 'properties': props,
                'required': ['resource_id', 'host', self.LIST_KEY],
                'additionalProperties': False}

    @property
    def entries(self):
        return self.input_parameters[self.LIST_KEY]

    @property
    def instance(self):
        # Who the base class's log lines name.
        return '%d instances' % len(self.entries)

    def running_entries(self):
        """The entries whose instance ran at pre_condition (or all)."""
        return self._running if self._running is not None else self.entries

    def pre_condition(self):
        """Skip when none of the instances still runs on the host."""
        running = set(self.running_instances())
        self._running = [e for e in self.entries if e['instance'] in running]
        if not self._running:
            raise exception.ActionSkipped(
                'none of the %d instances runs on %s any more'
                % (len(self.entries), self.host))

    def reverted(self, answers):
        """The revert's result from the agent's {uuid: answer}.

        Raises NotAllReverted when any guest's revert failed.
        """
        failed = {u: a['error'] for u, a in answers.items()
                  if isinstance(a, dict) and 'error' in a}
        if failed:
            raise NotAllReverted(count=len(failed), total=len(answers),
                                 kind=self.KIND,
                                 why=rpcapi.some_errors(failed))
        undone = sorted(u for u, a in answers.items()
                        if not (isinstance(a, dict) and 'not_applied' in a))
        LOG.warning('%s of %d of %d instances on %s reverted', self.KIND,
                    len(undone), len(answers), self.host)
        if not undone:
            return {'not_applied': self.change_id}
        return {'reverted': undone}
