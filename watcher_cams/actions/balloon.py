"""Action ``cams_balloon``: resize one instance's virtio balloon."""

from watcher_cams.actions import base
from watcher_cams import changes


class CamsBalloon(base.AgentAction):
    """Set the memory an instance has through its virtio balloon.

    The agent applies its own guards (floor, flavor memory, host capacity),
    waits until the balloon reaches the target or times out, and records
    the previous size so that ``revert`` restores it. ``current_mb`` is the
    size the plan saw, kept for operators.
    """

    KIND = changes.BALLOON

    @property
    def schema(self):
        props = dict(base.COMMON_PROPERTIES)
        props['target_mb'] = {'type': 'integer', 'minimum': 1}
        props['current_mb'] = {'type': 'integer', 'minimum': 0}
        return {'type': 'object', 'properties': props,
                'required': ['resource_id', 'host', 'target_mb'],
                'additionalProperties': False}

    def apply(self):
        return self.agent.set_balloon(self.host, self.instance,
                                      self.input_parameters['target_mb'],
                                      self.reason, change_id=self.change_id)

    def get_description(self):
        return 'Resize the virtio balloon of an instance (watcher-cams).'
