"""Common part of the actions: parameters, agent client, revert."""

import abc

from oslo_log import log
from watcher.applier.actions import base
from watcher.common import exception

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
