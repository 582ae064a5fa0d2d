"""Live vCPU and emulator affinity, recorded and reversible.

Only instances of the shared CPU policy are moved, and only inside the
shared CPU set: an instance with dedicated CPUs (Nova's hw:cpu_policy
dedicated) is refused, whoever asks.
"""

import time

import libvirt
from oslo_log import log

from watcher_cams.agent import controllers
from watcher_cams import changes

LOG = log.getLogger(__name__)
KIND = changes.AFFINITY


def is_dedicated(domain, dedicated_cpus, recorded=False):
    """Whether a guest's vCPUs are pinned the way Nova pins dedicated ones.

    Either every vCPU sits inside the configured dedicated set, or (when the
    agent never changed this guest) each vCPU is pinned to its own single
    host CPU, which is how Nova places dedicated instances.
    """
    vcpus = [set(c) for c in domain.vcpu_cpus]
    if not vcpus:
        return False
    dedicated = set(dedicated_cpus)
    if dedicated and all(c and c <= dedicated for c in vcpus):
        return True
    if recorded:
        return False
    singles = [c for c in vcpus if len(c) == 1]
    return (len(singles) == len(vcpus) and len(vcpus) > 0
            and len(set().union(*singles)) == len(vcpus)
            and domain.host_cpus > 1)


class PinningController:
    def __init__(self, state, shared_cpus, dedicated_cpus=()):
        self.state = state
        self.shared_cpus = set(shared_cpus)
        self.dedicated_cpus = set(dedicated_cpus)

    def dedicated(self, domain):
        return is_dedicated(domain, self.dedicated_cpus,
                            recorded=bool(self.state.get(domain.uuid, KIND)))

    def check(self, domain, cpus):
        if self.dedicated(domain):
            raise controllers.Refused('%s has dedicated CPUs: never re-pinned'
                                      % domain.uuid)
        if (not isinstance(cpus, list) or not cpus
                or any(type(c) is not int for c in cpus)):
            raise controllers.Refused('cpus must be a non-empty list of '
                                      'CPU numbers')
        outside = sorted(set(cpus) - self.shared_cpus)
        if outside:
            raise controllers.Refused(
                'CPUs %s are outside the shared CPU set %s'
                % (outside, sorted(self.shared_cpus)))

    @staticmethod
    def apply(dom, vcpu_cpus, emulator_cpus, host_cpus):
        def mask(cpus):
            return tuple(cpu in cpus for cpu in range(host_cpus))
        try:
            for vcpu, cpus in enumerate(vcpu_cpus):
                dom.pinVcpuFlags(vcpu, mask(set(cpus)),
                                 libvirt.VIR_DOMAIN_AFFECT_LIVE)
            dom.pinEmulator(mask(set(emulator_cpus)),
                            libvirt.VIR_DOMAIN_AFFECT_LIVE)
        except libvirt.libvirtError as exc:
            raise controllers.ChangeFailed('libvirt refused to pin %s: %s'
                                           % (dom.UUIDString(), exc))

    def set(self, domain, cpus, reason='', change_id=None):
        self.check(domain, cpus)
        entry = self.state.get(domain.uuid, KIND) or {}
        now = {'vcpus': domain.vcpu_cpus, 'emulator': domain.emulator_cpus}
        cpus = sorted(set(cpus))
        pinned = {'vcpus': [cpus] * domain.vcpus, 'emulator': cpus}
        earlier, ids = controllers.with_undo(entry, 'earlier', 'previous',
                                             now, change_id)
        self.state.record(domain.uuid, KIND, {
            'pinned': pinned, 'previous': now, 'earlier': earlier,
            'change_ids': ids,
            'original': entry.get('original', now),
            'reason': str(reason)[:255], 'time': time.time(),
            'qemu_pid': domain.qemu_pid})
        LOG.info('Affinity %s: %s -> %s (%s)', domain.uuid,
                 domain.vcpu_cpus, cpus, reason)
        self.apply(domain.dom, pinned['vcpus'], pinned['emulator'],
                   domain.host_cpus)
        return {'previous': now, 'cpus': cpus}

    def revert(self, domain, change_id=None):
        """Undo the newest change, or the one ``change_id`` names.

        As for balloons, a change never recorded is answered
        ``not_applied``.
        """
        entry = self.state.get(domain.uuid, KIND)
        if not controllers.check_newest(entry, 'earlier', 'previous',
                                        change_id):
            return controllers.not_applied(change_id)
        if not entry:
            raise controllers.Refused('no affinity change of %s to revert'
                                      % domain.uuid)
        # Newest change first, as for balloons.
        earlier = controllers.undo_history(entry, 'earlier', 'previous')
        ids = controllers.change_ids(entry, 'earlier', 'previous')[:-1]
        back = earlier.pop() if earlier else entry['original']
        LOG.warning('Affinity %s: reverting to %s', domain.uuid, back)
        self.apply(domain.dom, back['vcpus'], back['emulator'],
                   domain.host_cpus)
        if not earlier and back == entry['original']:
            self.state.forget(domain.uuid, KIND)
        else:
            entry.update(previous=earlier[-1] if earlier
                         else entry['original'], earlier=earlier,
                         change_ids=ids,
                         pinned=back, reason='revert', time=time.time(),
                         qemu_pid=domain.qemu_pid)
            self.state.record(domain.uuid, KIND, entry)
        return {'previous': {'vcpus': domain.vcpu_cpus,
                             'emulator': domain.emulator_cpus},
                'restored': back}

    def restore(self, domain):
        entry = self.state.get(domain.uuid, KIND)
        if entry:
            back = entry['original']
            self.apply(domain.dom, back['vcpus'], back['emulator'],
                       domain.host_cpus)
            self.state.forget(domain.uuid, KIND)
