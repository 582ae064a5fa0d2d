"""Action ``cams_host_balloon``: one host's balloon changes, as one action.

A plan of one action per guest grows with the cloud (200,000 actions for
5,000 hosts of 40 guests) and Watcher stores and schedules each of them.
This action carries a host's whole plan instead: its targets in the order
the policy gave them (shrinks before grows), applied by the agent in one
call and reverted as one. Actions on different hosts are independent, so
the applier runs them in parallel (etc/watcher-cams/watcher.conf.d).
"""

from oslo_log import log
from watcher.common import exception

from watcher_cams.actions import base
from watcher_cams import changes
from watcher_cams import rpc_common
from watcher_cams import rpcapi

LOG = log.getLogger(__name__)


class NotAllReverted(exception.WatcherException):
    msg_fmt = '%(count)d of %(total)d balloon changes not reverted: %(why)s'


class CamsHostBalloon(base.AgentAction):
    """Set the balloons of several instances of one host, in order.

    ``resource_id`` is the compute node; ``targets`` lists each instance's
    ``target_mb`` (``current_mb``, the size the plan saw, is kept for
    operators) and the reason for it. The agent applies its guards to each
    change against what the changes before it left, skips instances gone
    since the plan, and records every change under the action's uuid, so
    that ``revert`` undoes exactly them.
    """

    KIND = changes.BALLOON

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self._running = None

    @property
    def schema(self):
        props = dict(base.COMMON_PROPERTIES)
        props['resource_id'] = {'type': 'string', 'minLength': 1,
                                'maxLength': 255}
        target = {
            'type': 'object',
            'properties': {
                'instance': {'type': 'string', 'pattern': base.UUID_PATTERN},
                'target_mb': {'type': 'integer', 'minimum': 1},
                'current_mb': {'type': 'integer', 'minimum': 0},
                'reason': {'type': 'string',
                           'maxLength': rpc_common.MAX_BATCH_REASON}},
            'required': ['instance', 'target_mb'],
            'additionalProperties': False}
        props['targets'] = {'type': 'array', 'items': target, 'minItems': 1,
                            'maxItems': rpc_common.MAX_BATCH}
        return {'type': 'object', 'properties': props,
                'required': ['resource_id', 'host', 'targets'],
                'additionalProperties': False}

    @property
    def targets(self):
        return self.input_parameters['targets']

    @property
    def instance(self):
        # Who the base class's log lines name.
        return '%d instances' % len(self.targets)

    def pre_condition(self):
        """Skip when none of the instances still runs on the host."""
        running = set(self.running_instances())
        self._running = [t for t in self.targets if t['instance'] in running]
        if not self._running:
            raise exception.ActionSkipped(
                'none of the %d instances runs on %s any more'
                % (len(self.targets), self.host))

    def apply(self):
        targets = [{'instance': t['instance'], 'target_mb': t['target_mb'],
                    'reason': t.get('reason', '')}
                   for t in (self._running or self.targets)]
        return self.agent.set_balloons(self.host, targets, self.reason,
                                       change_id=self.change_id)

    def revert(self):
        """Undo this action's changes on every guest that has one."""
        instances = [t['instance'] for t in self.targets]
        answers = self.agent.revert_balloons(self.host, instances,
                                             self.change_id)
        failed = {u: a['error'] for u, a in answers.items()
                  if isinstance(a, dict) and 'error' in a}
        if failed:
            raise NotAllReverted(count=len(failed), total=len(instances),
                                 why=rpcapi.some_errors(failed))
        undone = sorted(u for u, a in answers.items()
                        if not (isinstance(a, dict) and 'not_applied' in a))
        LOG.warning('%s of %d of %d instances on %s reverted', self.KIND,
                    len(undone), len(instances), self.host)
        if not undone:
            return {'not_applied': self.change_id}
        return {'reverted': undone}

    def get_description(self):
        return ('Resize the virtio balloons of instances of one host, in '
                'order (watcher-cams).')
