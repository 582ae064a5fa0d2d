"""Action ``cams_host_balloon``: one host's balloon changes, as one action.

A host action (:class:`base.HostAction`): the host's targets in the order
the policy gave them (shrinks before grows), applied by the agent in one
call (API 1.4 ``set_balloons``) and reverted as one.
"""

from watcher_cams.actions import base
from watcher_cams import changes
from watcher_cams import rpc_common


class CamsHostBalloon(base.HostAction):
    """Set the balloons of several instances of one host, in order.

    ``resource_id`` is the compute node; ``targets`` lists each instance's
    ``target_mb`` (``current_mb``, the size the plan saw, is kept for
    operators) and the reason for it. The agent applies its guards to each
    change against what the changes before it left, skips instances gone
    since the plan, and records every change under the action's uuid, so
    that ``revert`` undoes exactly them.
    """

    KIND = changes.BALLOON
    LIST_KEY = 'targets'
    ENTRY_REQUIRED = ('target_mb',)

    def entry_properties(self):
        return {'target_mb': {'type': 'integer', 'minimum': 1},
                'current_mb': {'type': 'integer', 'minimum': 0},
                'reason': {'type': 'string',
                           'maxLength': rpc_common.MAX_BATCH_REASON}}

    @property
    def targets(self):
        return self.entries

    def apply(self):
        targets = [{'instance': t['instance'], 'target_mb': t['target_mb'],
                    'reason': t.get('reason', '')}
                   for t in self.running_entries()]
        return self.agent.set_balloons(self.host, targets, self.reason,
                                       change_id=self.change_id)

    def revert(self):
        """Undo this action's changes on every guest that has one."""
        return self.reverted(self.agent.revert_balloons(
            self.host, [t['instance'] for t in self.targets],
            self.change_id))

    def get_description(self):
        return ('Resize the virtio balloons of instances of one host, in '
                'order (watcher-cams).')
