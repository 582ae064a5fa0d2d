"""Nova objects and a driver for the extension's tests."""

import os

import fixtures
import nova.conf
from nova import objects
from nova import test
from nova.virt import fake as fake_virt
from nova.virt.libvirt import blockinfo
from oslo_utils.fixture import uuidsentinel as uuids

import nova.virt.watcher_cams as shim

CONF = nova.conf.CONF


def flavor(memory_mb=512, vcpus=1):
    return objects.Flavor(
        id=2, flavorid='1', name='cams.tiny', memory_mb=memory_mb,
        vcpus=vcpus, root_gb=1, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
        vcpu_weight=None, extra_specs={})


def instance(uuid=uuids.instance, memory_mb=512, vcpus=1, kernel=True):
    """An instance; with ``kernel`` it boots a kernel and ramdisk image."""
    return objects.Instance(
        id=1, uuid=uuid, display_name='cams-nova', vcpus=vcpus,
        memory_mb=memory_mb, project_id='project', user_id='user',
        image_ref=uuids.image, root_gb=1, ephemeral_gb=0, system_metadata={},
        metadata={}, flavor=flavor(memory_mb, vcpus), new_flavor=None,
        old_flavor=None, pci_devices=objects.PciDeviceList(),
        numa_topology=None, config_drive=None, vm_mode=None,
        kernel_id=uuids.kernel if kernel else None,
        ramdisk_id=uuids.ramdisk if kernel else None, os_type='linux',
        vcpu_model=None, host='cams-node', node='cams-node', task_state=None,
        vm_state=None, trusted_certs=None, resources=None,
        ephemeral_key_uuid=None)


def image_meta(**properties):
    return objects.ImageMeta.from_dict(
        {'disk_format': 'raw', 'properties': properties})


class DriverTestCase(test.NoDBTestCase):
    """A CamsLibvirtDriver with its own instances path and agent state."""

    def setUp(self):
        super().setUp()
        self.instances_path = self.useFixture(fixtures.TempDir()).path
        os.chmod(self.instances_path, 0o755)  # QEMU runs as libvirt-qemu
        self.state_dir = os.path.join(self.instances_path, 'agent-state')
        self.flags(instances_path=self.instances_path)
        self.flags(agent_state_dir=self.state_dir, group='watcher_cams_nova')

    def driver(self, read_only=False):
        return shim.CamsLibvirtDriver(fake_virt.FakeVirtAPI(), read_only)

    @staticmethod
    def guest_xml(drvr, inst, meta):
        disk_info = blockinfo.get_disk_info(CONF.libvirt.virt_type, inst,
                                            meta)
        return drvr._get_guest_xml(None, inst, [], disk_info, meta)
