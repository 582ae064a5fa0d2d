"""Action ``cams_pin_vcpus``: pin an instance's vCPUs to one LLC."""

from watcher_cams.actions import base
from watcher_cams import changes


class CamsPinVcpus(base.AgentAction):
    """Pin every vCPU and the emulator thread of an instance to ``cpus``.

    The agent refuses instances with dedicated CPUs and CPUs outside the
    host's cpu_shared_set, and records the previous affinity for revert.
    """

    KIND = changes.AFFINITY

    @property
    def schema(self):
        props = dict(base.COMMON_PROPERTIES)
        props['cpus'] = {'type': 'array', 'minItems': 1, 'maxItems': 4096,
                         'uniqueItems': True,
                         'items': {'type': 'integer', 'minimum': 0}}
        props['llc'] = {'type': 'string', 'maxLength': 255}
        return {'type': 'object', 'properties': props,
                'required': ['resource_id', 'host', 'cpus'],
                'additionalProperties': False}

    def apply(self):
        return self.agent.set_affinity(self.host, self.instance,
                                       self.input_parameters['cpus'],
                                       self.reason,
                                       change_id=self.change_id)

    def get_description(self):
        return 'Pin the vCPUs of an instance to one last-level cache ' \
               '(watcher-cams).'
