"""Nova's libvirt driver for nodes whose memory watcher-cams manages.

Each override calls Nova's method and adds one thing; what that thing is
lives in its own module: guest_config (devices), records (the agent's
targets across Nova's operations), inventory (KSM savings in Placement).
"""

import libvirt
import nova.conf
from nova.virt.libvirt import driver as libvirt_driver
import os_resource_classes as orc
from oslo_log import log

from nova_driver_ext import conf as ext_conf
from nova_driver_ext import guest_config
from nova_driver_ext import inventory
from nova_driver_ext import records
from watcher_cams.conf import guards as guards_conf

LOG = log.getLogger(__name__)
CONF = nova.conf.CONF
ext_conf.register_opts(CONF)


class CamsLibvirtDriver(libvirt_driver.LibvirtDriver):

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only)
        self.cams = CONF.watcher_cams_nova
        self.agent_records = records.AgentRecords(self.cams.agent_state_dir)
        self.ksm_savings = inventory.KsmSavings(
            self.cams.ksm_inventory_step_mb,
            self.cams.ksm_inventory_rise_after)
        self._warned_ratio = False

    # -- guest config ----------------------------------------------------
    def _get_guest_config(self, instance, *args, **kwargs):
        guest = super()._get_guest_config(instance, *args, **kwargs)
        guest_config.apply(guest, self.cams, CONF.libvirt.virt_type,
                           lambda g: self._add_qga_device(g, instance))
        return guest

    # -- the agent's records across Nova's operations --------------------
    def spawn(self, context, instance, *args, **kwargs):
        # A new guest under a known uuid: rebuild, evacuation, unshelve.
        self.agent_records.forget(instance.uuid, 'spawned anew')
        return super().spawn(context, instance, *args, **kwargs)

    def _hard_reboot(self, context, instance, *args, **kwargs):
        with self.agent_records.kept(instance.uuid):
            return super()._hard_reboot(context, instance, *args, **kwargs)

    def migrate_disk_and_power_off(self, context, instance, *args, **kwargs):
        result = super().migrate_disk_and_power_off(context, instance,
                                                    *args, **kwargs)
        self.agent_records.forget(instance.uuid, 'resizing or migrating')
        return result

    def finish_migration(self, context, migration, instance, *args,
                         **kwargs):
        self.agent_records.forget(instance.uuid, 'resized or migrated here')
        return super().finish_migration(context, migration, instance,
                                        *args, **kwargs)

    def finish_revert_migration(self, context, instance, *args, **kwargs):
        self.agent_records.forget(instance.uuid, 'resize reverted')
        return super().finish_revert_migration(context, instance,
                                               *args, **kwargs)

    def post_live_migration(self, context, instance, *args, **kwargs):
        result = super().post_live_migration(context, instance,
                                             *args, **kwargs)
        self.agent_records.forget(instance.uuid, 'live-migrated away')
        return result

    def post_live_migration_at_destination(self, context, instance, *args,
                                           **kwargs):
        result = super().post_live_migration_at_destination(
            context, instance, *args, **kwargs)
        self.agent_records.forget(instance.uuid, 'live-migrated here')
        try:
            guest = self._host.get_guest(instance)
            cpuset = guest.get_config().cpuset
            records.clear_carried(
                guest._domain, instance.flavor.memory_mb,
                allowed_cpus=set(cpuset) if cpuset else None,
                affinity=instance.numa_topology is None)
        except libvirt.libvirtError as exc:
            # The migration itself succeeded; the next audit sees the size.
            LOG.error('Instance %s: could not clear the balloon target and '
                      'affinity it brought along: %s', instance.uuid, exc)
        return result

    # -- Placement -------------------------------------------------------
    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        super().update_provider_tree(provider_tree, nodename,
                                     allocations=allocations)
        if not self.cams.ksm_inventory:
            return
        inv = provider_tree.data(nodename).inventory
        memory = inv.get(orc.MEMORY_MB)
        if not memory:
            return
        if memory['allocation_ratio'] != 1.0:
            if not self._warned_ratio:
                LOG.warning('[watcher_cams_nova] ksm_inventory is ignored: '
                            'MEMORY_MB already has allocation ratio %s, and '
                            'KSM savings on top of overcommit would promise '
                            'memory twice', memory['allocation_ratio'])
                self._warned_ratio = True
            return
        safe_mb = inventory.safe_savings_mb(
            memory['total'], memory['reserved'],
            guards_conf.guard_config(CONF))
        extra_mb = self.ksm_savings.update(safe_mb)
        if extra_mb:
            inv = dict(inv)
            inv[orc.MEMORY_MB] = inventory.add_savings(memory, extra_mb)
            provider_tree.update_inventory(nodename, inv)
