"""Action ``cams_host_pin``: one host's vCPU pinnings, as one action.

A host action (:class:`base.HostAction`): sharing_aware_pinning may re-pin
every guest of a host (40 actions per host of 40 guests, 200,000 for
5,000 hosts, when it was one action per guest). The agent pins each guest
in the order given, each change recorded under the action's uuid, and a
revert undoes them, the last first.
"""

from watcher_cams.actions import base
from watcher_cams import changes
from watcher_cams import rpcapi

UNKNOWN = 'UnknownInstance'


class CamsHostPin(base.HostAction):
    """Pin the vCPUs and emulator threads of instances of one host.

    ``resource_id`` is the compute node; ``pins`` lists each instance's
    ``cpus`` (of one last-level cache, ``llc``) and the reason. The agent
    refuses instances with dedicated CPUs and CPUs outside the host's
    cpu_shared_set; instances gone since the plan are skipped.
    """

    KIND = changes.AFFINITY
    LIST_KEY = 'pins'
    ENTRY_REQUIRED = ('cpus',)

    def entry_properties(self):
        return {'cpus': {'type': 'array', 'minItems': 1, 'maxItems': 4096,
                         'uniqueItems': True,
                         'items': {'type': 'integer', 'minimum': 0}},
                'llc': {'type': 'string', 'maxLength': 255},
                'reason': {'type': 'string', 'maxLength': 255}}

    def apply(self):
        changed, gone = {}, []
        for pin in self.running_entries():
            try:
                changed[pin['instance']] = self.agent.set_affinity(
                    self.host, pin['instance'], pin['cpus'],
                    pin.get('reason') or self.reason,
                    change_id=self.change_id)
            except rpcapi.AgentError as exc:
                if exc.exc_type != UNKNOWN:
                    raise
                gone.append(pin['instance'])
        return {'changed': changed, 'gone': gone}

    def revert(self):
        """Undo this action's pinning of every guest, the last first."""
        answers = {}
        for pin in reversed(self.entries):
            uuid = pin['instance']
            try:
                answers[uuid] = self.agent.revert(self.host, uuid, self.KIND,
                                                  change_id=self.change_id)
            except rpcapi.AgentError as exc:
                answers[uuid] = ({'not_applied': self.change_id}
                                 if exc.exc_type == UNKNOWN
                                 else {'error': str(exc)})
        return self.reverted(answers)

    def get_description(self):
        return ('Pin the vCPUs of instances of one host, each to one '
                'last-level cache (watcher-cams).')
