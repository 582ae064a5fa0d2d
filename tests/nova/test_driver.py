"""The driver extension on Nova 34's LibvirtDriver with Nova's fake libvirt."""

from unittest import mock

import fixtures
from lxml import etree
from nova.compute import provider_tree
from nova.tests import fixtures as nova_fixtures
from nova.virt import driver as virt_driver
from nova.virt import fake as fake_virt
from nova.virt.libvirt import driver as libvirt_driver
import os_resource_classes as orc
from oslo_utils.fixture import uuidsentinel as uuids

from nova_driver_ext import driver as ext_driver
from nova_driver_ext import inventory
from tests.nova import base
from watcher_cams import changes as state_store

MIB_PAGES = 256  # 4 KiB pages per MiB


class FakeLibvirtTestCase(base.DriverTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(nova_fixtures.LibvirtFixture())
        self.useFixture(nova_fixtures.CGroupsFixture())
        self.flags(virt_type='kvm', group='libvirt')


class TestLoading(FakeLibvirtTestCase):

    def test_nova_loads_it_through_compute_driver(self):
        drvr = virt_driver.load_compute_driver(
            fake_virt.FakeVirtAPI(), 'watcher_cams.CamsLibvirtDriver')
        self.assertIsInstance(drvr, ext_driver.CamsLibvirtDriver)
        self.assertIsInstance(drvr, libvirt_driver.LibvirtDriver)


class TestGuestConfig(FakeLibvirtTestCase):

    def devices(self, drvr, **properties):
        xml = self.guest_xml(drvr, base.instance(kernel=False),
                             base.image_meta(**properties))
        return etree.fromstring(xml).find('devices')

    @staticmethod
    def agent_channels(devices):
        return devices.findall(
            "channel/target[@name='org.qemu.guest_agent.0']")

    def test_every_instance_gets_the_balloon_and_the_agent_channel(self):
        # Nova alone: no balloon stats at period 0, no channel unless the
        # image asks for one.
        self.flags(mem_stats_period_seconds=0, group='libvirt')
        plain = libvirt_driver.LibvirtDriver(fake_virt.FakeVirtAPI(), False)
        devices = self.devices(plain)
        self.assertEqual('none', devices.find('memballoon').get('model'))
        self.assertEqual([], self.agent_channels(devices))

        devices = self.devices(self.driver())
        balloons = devices.findall('memballoon')
        self.assertEqual(1, len(balloons))
        self.assertEqual({'model': 'virtio', 'autodeflate': 'off',
                          'freePageReporting': 'off'},
                         dict(balloons[0].attrib))
        self.assertEqual('10', balloons[0].find('stats').get('period'))
        self.assertEqual(1, len(self.agent_channels(devices)))
        self.assertEqual(
            '/var/lib/libvirt/qemu/org.qemu.guest_agent.0.instance-00000001'
            '.sock', devices.find('channel/source').get('path'))

    def test_an_image_with_the_agent_gets_one_channel(self):
        devices = self.devices(self.driver(), hw_qemu_guest_agent='yes')
        self.assertEqual(1, len(self.agent_channels(devices)))

    def test_options(self):
        self.flags(balloon_stats_period=3, balloon_autodeflate=True,
                   balloon_free_page_reporting=True,
                   guest_agent_channel=False, group='watcher_cams_nova')
        devices = self.devices(self.driver())
        balloon = devices.find('memballoon')
        self.assertEqual('on', balloon.get('autodeflate'))
        self.assertEqual('on', balloon.get('freePageReporting'))
        self.assertEqual('3', balloon.find('stats').get('period'))
        self.assertEqual([], self.agent_channels(devices))

    def test_balloon_off_leaves_nova_s_own(self):
        self.flags(memory_balloon=False, group='watcher_cams_nova')
        self.flags(mem_stats_period_seconds=7, group='libvirt')
        balloon = self.devices(self.driver()).find('memballoon')
        self.assertEqual('on', balloon.get('autodeflate'))
        self.assertEqual('7', balloon.find('stats').get('period'))


def ksm_counters(saved_mb):
    return {'pages_shared': 1, 'pages_sharing': saved_mb * MIB_PAGES,
            'pages_unshared': 0, 'pages_volatile': 0, 'run': 1,
            'full_scans': 3, 'page_size': 4096}


class TestKsmInventory(FakeLibvirtTestCase):
    memory_mb = 8192

    def setUp(self):
        super().setUp()
        self.drvr = None  # made on first use, after the test's flags
        self.now = 0.0
        self.counters = ksm_counters(0)
        # The KSM counters are the boundary faked here; the functional test
        # reads the real /sys/kernel/mm/ksm.
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.agent.collectors.ksm.host_counters',
            lambda root='/': self.counters))
        for name, value in (
                ('_get_local_gb_info', {'total': 100}),
                ('_get_vcpu_available', range(2)),
                ('_get_pcpu_available', range(0)),
                ('_get_cpu_feature_traits', {}),
                ('_get_gpu_inventories', {})):
            self.useFixture(fixtures.MockPatch(
                'nova.virt.libvirt.driver.LibvirtDriver.' + name,
                mock.Mock(return_value=value)))
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.host.Host.get_memory_mb_total',
            mock.Mock(return_value=self.memory_mb)))
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.driver.LibvirtDriver.'
            '_update_provider_tree_for_pcpu', mock.Mock()))

    def memory(self, saved_mb=None, ratio=None):
        if saved_mb is not None:
            self.counters = ksm_counters(saved_mb)
        tree = provider_tree.ProviderTree()
        tree.new_root('cams-node', uuids.cn, generation=0)
        if ratio is not None:
            self.flags(ram_allocation_ratio=ratio)
        if self.drvr is None:
            self.drvr = self.driver(read_only=True)
            self.drvr.ksm_savings.clock = lambda: self.now
        self.drvr.update_provider_tree(tree, 'cams-node')
        return tree.data(uuids.cn).inventory[orc.MEMORY_MB]

    def test_off_by_default(self):
        memory = self.memory(saved_mb=2048)
        self.assertEqual(self.memory_mb, memory['total'])

    def test_counts_safe_savings_in_steps_rising_late_falling_at_once(self):
        self.flags(ksm_inventory=True, ksm_inventory_rise_after=600,
                   group='watcher_cams_nova')
        # 1100 MiB saved, half promised (the guards' safety factor): 550,
        # in steps of 256: 512 - after it held for 600 s.
        self.assertEqual(self.memory_mb, self.memory(saved_mb=1100)['total'])
        self.now = 300.0
        self.assertEqual(self.memory_mb, self.memory(saved_mb=1100)['total'])
        self.now = 600.0
        memory = self.memory(saved_mb=1100)
        self.assertEqual(self.memory_mb + 512, memory['total'])
        self.assertEqual(self.memory_mb, memory['max_unit'])
        self.assertEqual(512, memory['reserved'])
        # A small change stays within the step: nothing to update.
        self.now = 660.0
        self.assertEqual(self.memory_mb + 512,
                         self.memory(saved_mb=1060)['total'])
        # Savings gone: reported at once.
        self.now = 720.0
        self.assertEqual(self.memory_mb + 256,
                         self.memory(saved_mb=600)['total'])
        self.assertEqual(self.memory_mb, self.memory(saved_mb=0)['total'])

    def test_never_more_than_ram_plus_safe_savings(self):
        self.flags(ksm_inventory=True, ksm_inventory_rise_after=0,
                   ksm_inventory_step_mb=1, group='watcher_cams_nova')
        self.flags(ksm_safety_factor=0.25, group='watcher_cams_guards')
        for saved in (0, 1, 333, 4096, 100000):
            extra = self.memory(saved_mb=saved)['total'] - self.memory_mb
            self.assertLessEqual(extra, saved * 0.75)
            self.assertGreaterEqual(extra, saved * 0.75 - 1)

    def test_ignored_with_memory_overcommit(self):
        self.flags(ksm_inventory=True, ksm_inventory_rise_after=0,
                   group='watcher_cams_nova')
        memory = self.memory(saved_mb=4096, ratio=1.5)
        self.assertEqual(self.memory_mb, memory['total'])
        self.assertEqual(1.5, memory['allocation_ratio'])


class TestKsmSavings(base.test.NoDBTestCase):

    def test_a_rise_takes_the_lowest_level_that_held(self):
        now = [0.0]
        savings = inventory.KsmSavings(100, 60, clock=lambda: now[0])
        for t, safe in ((0, 450), (30, 320), (59, 990)):
            now[0] = t
            self.assertEqual(0, savings.update(safe))
        now[0] = 60
        self.assertEqual(300, savings.update(990))
        now[0] = 61
        self.assertEqual(300, savings.update(990))  # a new wait begins
        now[0] = 121
        self.assertEqual(900, savings.update(990))

    def test_negative_or_nonsense_savings_count_as_none(self):
        savings = inventory.KsmSavings(100, 0)
        self.assertEqual(0, savings.update(-5))
        self.assertEqual(0, savings.update(99))


class TestAgentRecords(FakeLibvirtTestCase):
    """Nova's operations and the targets the agent recorded."""

    def setUp(self):
        super().setUp()
        self.drvr = self.driver()
        self.agent = state_store.StateStore(self.state_dir)
        self.inst = base.instance()
        self.record()

    def record(self):
        self.agent.record(self.inst.uuid, 'balloon',
                          {'target_mb': 384, 'max_mb': 512})
        self.agent.record(self.inst.uuid, 'affinity',
                          {'pinned': {'vcpus': [[0]], 'emulator': [0]}})
        self.agent.record(self.inst.uuid, 'policy_state', {'utility': {}})

    def nova_does(self, method, result=None, side_effect=None):
        return self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.driver.LibvirtDriver.' + method,
            mock.Mock(return_value=result, side_effect=side_effect))).mock

    def assertForgotten(self):
        self.assertEqual({'policy_state': {'utility': {}}},
                         self.agent.get(self.inst.uuid))

    def assertKept(self):
        self.assertEqual({'balloon', 'affinity', 'policy_state'},
                         set(self.agent.get(self.inst.uuid)))

    def test_rebuild_evacuate_unshelve_spawn_anew(self):
        self.nova_does('spawn')
        self.drvr.spawn(None, self.inst, None, [], None, {})
        self.assertForgotten()

    def test_hard_reboot_keeps_them_even_if_the_agent_looked_meanwhile(self):
        def redefine(*args, **kwargs):
            # The agent's reconcile ran while the domain was undefined.
            state_store.StateStore(self.state_dir).forget(self.inst.uuid)
        self.nova_does('_hard_reboot', side_effect=redefine)
        self.drvr._hard_reboot(None, self.inst, [], None)
        self.assertKept()

    def test_a_failed_hard_reboot_keeps_them_too(self):
        def fail(*args, **kwargs):
            state_store.StateStore(self.state_dir).forget(self.inst.uuid)
            raise RuntimeError('domain did not start')
        self.nova_does('_hard_reboot', side_effect=fail)
        self.assertRaises(RuntimeError, self.drvr._hard_reboot, None,
                          self.inst, [], None)
        self.assertKept()

    def test_resize_or_cold_migration_forgets_on_both_hosts(self):
        self.nova_does('migrate_disk_and_power_off', result='{}')
        self.drvr.migrate_disk_and_power_off(None, self.inst, 'dest',
                                             base.flavor(1024), [])
        self.assertForgotten()
        self.record()  # an old record on the destination
        self.nova_does('finish_migration')
        self.drvr.finish_migration(None, None, self.inst, '{}', [], None,
                                   True, {})
        self.assertForgotten()
        self.record()
        self.nova_does('finish_revert_migration')
        self.drvr.finish_revert_migration(None, self.inst, [], None)
        self.assertForgotten()

    def test_a_failed_resize_keeps_them(self):
        self.nova_does('migrate_disk_and_power_off',
                       side_effect=RuntimeError('disk copy failed'))
        self.assertRaises(RuntimeError, self.drvr.migrate_disk_and_power_off,
                          None, self.inst, 'dest', base.flavor(1024), [])
        self.assertKept()

    def test_live_migration_forgets_at_the_source(self):
        self.nova_does('post_live_migration')
        self.drvr.post_live_migration(None, self.inst, None)
        self.assertForgotten()

    def test_live_migration_clears_what_the_guest_brought_along(self):
        self.nova_does('post_live_migration_at_destination')
        guest = mock.Mock()
        guest.get_config.return_value.cpuset = {0, 1}
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.host.Host.get_guest',
            mock.Mock(return_value=guest)))
        clear = self.useFixture(fixtures.MockPatch(
            'nova_driver_ext.records.clear_carried')).mock
        self.drvr.post_live_migration_at_destination(None, self.inst, [])
        self.assertForgotten()
        clear.assert_called_once_with(guest._domain, 512,
                                      allowed_cpus={0, 1}, affinity=True)

    def test_an_unwritable_state_does_not_fail_nova(self):
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.changes.StateStore.forget',
            side_effect=PermissionError('read-only state dir')))
        self.nova_does('post_live_migration')
        self.drvr.post_live_migration(None, self.inst, None)
        self.assertKept()
