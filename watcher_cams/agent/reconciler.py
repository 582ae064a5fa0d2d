"""Keeps the agent's recorded changes true after QEMU restarts.

A reboot, a migration back or Nova regenerating the domain XML gives a
guest its full size and default affinity again; the state store says what
the last audit decided. The reconciler re-applies that through the same
controllers (and guards) a fresh change goes through, forgets records a
flavor change made stale or whose instance is gone, and gives every guest
back its full size and affinity when the agent is disabled.
"""

import libvirt
from oslo_log import log

from watcher_cams.agent import controllers
from watcher_cams.agent.controllers import balloon
from watcher_cams.agent.controllers import pinning

LOG = log.getLogger(__name__)


class Reconciler:
    """Re-applies, drops and restores recorded changes; see the module."""

    def __init__(self, state, balloons, pins, problems, tolerance_mb):
        self.state = state
        self.balloons = balloons  # controllers.balloon.BalloonController
        self.pins = pins  # controllers.pinning.PinningController
        self.problems = problems
        self.tolerance_mb = tolerance_mb

    def reconcile(self, conn, domains, lookup):
        """Re-apply recorded targets to guests whose QEMU was restarted.

        ``lookup(uuid)`` gives a fresh (GuestView, HostAccount) for the
        balloon's guards; it raises controllers.UnknownInstance if the
        guest is gone by then.
        """
        for domain, entry in self._recorded(conn, domains):
            try:
                self._reapply(domain, entry, lookup)
            except (controllers.Refused, controllers.ChangeFailed,
                    controllers.UnknownInstance) as exc:
                self.problems.update(domain.uuid, 're-applying: %s' % exc)

    def restore_all(self, conn, domains):
        """Give every guest the agent changed its full size and affinity."""
        for domain, entry in self._recorded(conn, domains):
            uuid = domain.uuid
            try:
                if entry.get(balloon.KIND):
                    self.balloons.restore(domain.dom, uuid, domain.max_mb)
                if entry.get(pinning.KIND):
                    self.pins.restore(domain)
            except (controllers.ChangeFailed, libvirt.libvirtError) as exc:
                LOG.error('Restoring %s failed: %s', uuid, exc)

    def _reapply(self, domain, entry, lookup):
        entry = self._drop_stale(domain, entry)
        recorded = entry.get(balloon.KIND)
        if recorded and recorded.get('qemu_pid') != domain.qemu_pid:
            self._reapply_balloon(domain, recorded['target_mb'], lookup)
            recorded['qemu_pid'] = domain.qemu_pid
            self.state.record(domain.uuid, balloon.KIND, recorded)
        recorded = entry.get(pinning.KIND)
        if recorded and recorded.get('qemu_pid') != domain.qemu_pid:
            self._reapply_affinity(domain, recorded['pinned'])
            recorded['qemu_pid'] = domain.qemu_pid
            self.state.record(domain.uuid, pinning.KIND, recorded)

    def _reapply_balloon(self, domain, target_mb, lookup):
        if abs(domain.actual_mb - target_mb) <= self.tolerance_mb:
            return
        guest, account = lookup(domain.uuid)
        self.balloons.check(guest, account, target_mb, step=False)
        LOG.info('Guest %s restarted: re-applying balloon %d MiB',
                 domain.uuid, target_mb)
        self.balloons.resize(domain.dom, target_mb)

    def _reapply_affinity(self, domain, pinned):
        if pinned['vcpus'] == domain.vcpu_cpus:
            return
        LOG.info('Guest %s restarted: re-applying affinity %s',
                 domain.uuid, pinned['emulator'])
        self.pins.apply(domain.dom, pinned['vcpus'], pinned['emulator'],
                        domain.host_cpus)

    def _drop_stale(self, domain, entry):
        """``entry`` without records a flavor change made stale.

        A resize gives the guest another size or vCPU count; a target chosen
        for the old flavor must not be applied to the new one. (The Nova
        driver extension forgets them itself; this covers nodes without it.)
        """
        entry = dict(entry)
        recorded = entry.get(balloon.KIND)
        if recorded and recorded.get('max_mb', domain.max_mb) \
                != domain.max_mb:
            LOG.info('Guest %s now has %d MiB, not %d: forgetting its '
                     'balloon target %d MiB', domain.uuid, domain.max_mb,
                     recorded['max_mb'], recorded['target_mb'])
            self.state.forget(domain.uuid, balloon.KIND)
            del entry[balloon.KIND]
        recorded = entry.get(pinning.KIND)
        if recorded and len(recorded['pinned']['vcpus']) != domain.vcpus:
            LOG.info('Guest %s now has %d vCPUs: forgetting its affinity',
                     domain.uuid, domain.vcpus)
            self.state.forget(domain.uuid, pinning.KIND)
            del entry[pinning.KIND]
        return entry

    def _recorded(self, conn, domains):
        """(Domain, record) of running guests the agent has a record of.

        Records of instances libvirt no longer knows are dropped on the way.
        """
        for uuid, entry in self.state.all().items():
            domain = domains.get(uuid)
            if domain is None:
                self._forget_if_gone(conn, uuid)
            else:
                yield domain, entry

    def _forget_if_gone(self, conn, uuid):
        try:
            conn.lookupByUUIDString(uuid)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                LOG.info('Instance %s no longer exists; forgetting its '
                         'state', uuid)
                self.state.forget(uuid)
