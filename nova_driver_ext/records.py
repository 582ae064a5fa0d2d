"""What Nova's operations mean for the targets the agent recorded.

The agent re-applies its recorded balloon target and vCPU affinity when a
guest's QEMU restarts (watcher_cams.agent.manager.reconcile). That is right
when Nova regenerates the domain of the same instance on the same host
(hard reboot, power on, host boot), and wrong when Nova moves or changes
it. The driver extension therefore:

- keeps the records through a hard reboot (the agent may look while the
  domain is undefined and forget them; they are put back, with the
  strategies' measurements in policy_state);
- forgets them where a record no longer describes the instance: rebuild,
  evacuation or unshelve (spawn), resize and cold migration (source and
  destination), resize revert, live migration (source, and destination,
  where an old record of an earlier stay may linger);
- clears what a live migration carries in the running guest: QEMU migrates
  the balloon's size and libvirt the live vCPU pinning, which the
  destination's agent has no record of. The guest gets its flavor's full
  memory (Placement allocated all of it there) and the vCPU placement Nova
  gave it; the next audit decides anew.
"""

import contextlib

import libvirt
from oslo_log import log

from watcher_cams import changes as state_store

LOG = log.getLogger(__name__)


class AgentRecords:
    def __init__(self, state_dir):
        self.store = state_store.StateStore(state_dir)

    def forget(self, uuid, why):
        """Forget the targets of instance ``uuid`` (its policy state stays).

        Never fails Nova's operation: a state that cannot be written is
        logged; the agent's own check of the flavor size still applies.
        """
        try:
            entry = self.store.get(uuid)
            for kind in state_store.KINDS:
                if kind in entry:
                    self.store.forget(uuid, kind)
                    LOG.info('Instance %s: %s, forgetting the agent\'s %s '
                             'record', uuid, why, kind)
        except OSError as exc:
            LOG.error('Instance %s: %s, but the agent\'s state in %s could '
                      'not be changed: %s', uuid, why,
                      self.store.directory, exc)

    @contextlib.contextmanager
    def kept(self, uuid):
        """Put back records that vanish while Nova redefines ``uuid``.

        Also when Nova's reboot fails: the instance is still this host's.
        """
        try:
            before = self.store.get(uuid)
        except OSError as exc:
            LOG.error('Instance %s: the agent\'s state is unreadable: %s',
                      uuid, exc)
            before = {}
        try:
            yield
        finally:
            try:
                for kind in before:
                    if not self.store.get(uuid, kind):
                        LOG.info('Instance %s: keeping the agent\'s %s '
                                 'record through the reboot', uuid, kind)
                        self.store.record(uuid, kind, before[kind])
            except OSError as exc:
                LOG.error('Instance %s: the agent\'s records could not be '
                          'put back after the reboot: %s', uuid, exc)


def clear_carried(dom, max_mb, allowed_cpus=None, affinity=True):
    """Give a live-migrated guest its full memory and Nova's vCPU placement.

    ``allowed_cpus`` are the host CPUs Nova let the guest use (its <vcpu
    cpuset>), None for all. ``affinity=False`` leaves the pinning alone, for
    instances Nova pinned itself (a NUMA topology) and rewrote on the move.
    """
    uuid = dom.UUIDString()
    actual_mb = dom.info()[2] // 1024
    if actual_mb < max_mb:
        LOG.info('Instance %s arrived with a %d MiB balloon target from its '
                 'old host: giving it its full %d MiB', uuid, actual_mb,
                 max_mb)
        dom.setMemoryFlags(max_mb * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    if not affinity:
        return
    current = dom.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)
    mask = tuple(allowed_cpus is None or cpu in allowed_cpus
                 for cpu in range(len(current[0])))
    if any(tuple(pins) != mask for pins in current):
        LOG.info('Instance %s arrived with the vCPU affinity of its old '
                 'host: back to %s', uuid,
                 'all CPUs' if allowed_cpus is None else
                 'CPUs %s' % sorted(allowed_cpus))
        for vcpu in range(len(current)):
            dom.pinVcpuFlags(vcpu, mask, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        dom.pinEmulator(mask, libvirt.VIR_DOMAIN_AFFECT_LIVE)
