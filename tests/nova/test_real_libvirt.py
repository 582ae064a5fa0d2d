"""The driver's XML on the real libvirt and QEMU (TCG) of this machine.

Nova 34's LibvirtDriver, extended, writes the domain XML for an instance
whose image is the project's tiny guest (kernel, initramfs with qemu-ga);
libvirt starts it; the balloon and the guest agent channel must work. Needs
tools/host-setup.sh (libvirtd, the guest image), as the functional tests.
"""

import os
import shutil
import subprocess
import tempfile
import time

import fixtures
import libvirt
from lxml import etree
from oslo_utils.fixture import uuidsentinel as uuids

from nova_driver_ext import records
from tests.nova import base
from watcher_cams.lab import guests as lab_guests

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
URI = os.environ.get('CAMS_LIBVIRT_URI', 'qemu:///system')
INSTANCE_ID = 0xca11  # libvirt name instance-0000ca11
GUEST_MB = 512
BALLOON_MB = 384
SLACK_MB = 8

libvirt.registerErrorHandler(lambda *args: None, None)
REAL_UNAME = os.uname  # Nova's test base replaces it: this test is real


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError('%s: not within %.0f s' % (what, timeout))


class TestDriverXmlOnRealLibvirt(base.DriverTestCase):

    def setUp(self):
        super().setUp()
        self.flags(virt_type='qemu', cpu_mode='none', connection_uri=URI,
                   group='libvirt')
        # Nova's event thread is not needed to write XML (and Nova's test
        # base forbids it).
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.host.Host._init_events', lambda host: None))
        self.useFixture(fixtures.MonkeyPatch('os.uname', REAL_UNAME))
        # QEMU (as libvirt-qemu) must reach the instance's files; Nova's
        # test base gives each test a private TMPDIR it cannot enter.
        self.instances_path = tempfile.mkdtemp(prefix='cams-nova-ft-',
                                               dir='/tmp')
        self.addCleanup(shutil.rmtree, self.instances_path, True)
        os.chmod(self.instances_path, 0o755)
        self.flags(instances_path=self.instances_path)
        self.conn = libvirt.open(URI)
        self.addCleanup(self.conn.close)
        self.image = lab_guests.GuestImage(os.environ.get(
            'CAMS_GUEST_DIR', os.path.join(TOP, '.cache', 'guest')))

    def boot(self):
        inst = base.instance(uuid=uuids.real_instance, memory_mb=GUEST_MB)
        inst.id = INSTANCE_ID
        meta = base.image_meta(os_command_line='console=ttyS0 quiet psi=1')
        xml = self.guest_xml(self.driver(), inst, meta)
        # What Nova's image backend would have put in the instance's
        # directory: the kernel, the ramdisk and a root disk.
        directory = os.path.join(self.instances_path, inst.uuid)
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o755)
        shutil.copy(self.image.kernel, os.path.join(directory, 'kernel'))
        shutil.copy(self.image.initrd, os.path.join(directory, 'ramdisk'))
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-F',
                        'raw', '-b', self.image.data,
                        os.path.join(directory, 'disk')], check=True)
        lab_guests.destroy_all(self.conn, 'instance-0000ca11')
        dom = self.conn.createXML(xml, 0)
        self.addCleanup(lab_guests.destroy_all, self.conn,
                        'instance-0000ca11')
        return inst, dom

    def test_balloon_and_agent_channel_work(self):
        inst, dom = self.boot()
        devices = etree.fromstring(dom.XMLDesc(0)).find('devices')
        balloon = devices.find('memballoon')
        self.assertEqual('virtio', balloon.get('model'))
        self.assertEqual('10', balloon.find('stats').get('period'))
        self.assertNotEqual('on', balloon.get('autodeflate'))
        # The image does not ask for the agent; the node's option does.
        self.assertEqual(1, len(devices.findall(
            "channel/target[@name='org.qemu.guest_agent.0']")))

        lab_guests.wait_for_agent(dom, timeout=180)
        stats = wait_for(lambda: 'usable' in dom.memoryStats()
                         and dom.memoryStats(), 60, 'balloon statistics')
        self.assertIn('disk_caches', stats)
        self.assertEqual(GUEST_MB * 1024, stats['actual'])

        dom.setMemoryFlags(BALLOON_MB * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        wait_for(lambda: abs(dom.info()[2] // 1024 - BALLOON_MB) <= SLACK_MB,
                 60, 'balloon to %d MiB' % BALLOON_MB)

        # What a live migration brings along (the old host's balloon size
        # and pinning) is cleared on the new host.
        host_cpus = len(dom.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)[0])
        one = tuple(cpu == 0 for cpu in range(host_cpus))
        dom.pinVcpuFlags(0, one, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        records.clear_carried(dom, GUEST_MB)
        wait_for(lambda: abs(dom.info()[2] // 1024 - GUEST_MB) <= SLACK_MB,
                 60, 'balloon back to %d MiB' % GUEST_MB)
        self.assertEqual([(True,) * host_cpus],
                         dom.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE))
