"""Tiny real guests for the functional tests and the real-guest lab.

The image comes from ``tools/guest-image.sh`` (a kernel, an initramfs that
runs qemu-ga, and an ext4 data disk). Each guest gets its own qcow2 overlay
over the shared data disk, a virtio balloon with a stats period, and a guest
agent channel: the devices lab-notes.md found to work. KVM is used only when
it really boots a guest; otherwise TCG (``<domain type='qemu'>``).
"""

import os
import subprocess
import time
import uuid as uuidlib
from xml.sax import saxutils

import libvirt
import libvirt_qemu

DOMAIN_XML = """<domain type='{dtype}'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  <metadata>
    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
      <nova:name>{name}</nova:name>
    </nova:instance>
  </metadata>
  <memory unit='MiB'>{memory_mb}</memory>
  <currentMemory unit='MiB'>{memory_mb}</currentMemory>
  <vcpu placement='static'>{vcpus}</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>console=ttyS0 quiet psi=1</cmdline>
  </os>
  <on_poweroff>destroy</on_poweroff>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' cache='none'/>
      <source file='{disk}'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <channel type='unix'>
      <target type='virtio' name='org.qemu.guest_agent.0'/>
    </channel>
    <serial type='file'><source path='{console}'/></serial>
    <memballoon model='virtio'><stats period='{stats_period}'/></memballoon>
  </devices>
</domain>
"""


class GuestImage:
    """Paths of a built guest image directory."""

    def __init__(self, directory):
        self.directory = directory
        self.kernel = os.path.join(directory, 'vmlinuz')
        self.initrd = os.path.join(directory, 'initrd.gz')
        self.data = os.path.join(directory, 'data.img')
        for path in (self.kernel, self.initrd, self.data):
            if not os.path.exists(path):
                raise FileNotFoundError(
                    '%s is missing: run tools/guest-image.sh %s'
                    % (path, directory))

    def overlay(self, name, workdir):
        """A fresh qcow2 overlay of the data disk for guest ``name``."""
        path = os.path.join(workdir, '%s.qcow2' % name)
        if os.path.exists(path):
            os.unlink(path)
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'raw',
                        '-b', self.data, path], check=True)
        return path


def domain_xml(name, image, disk, console, memory_mb=512, vcpus=1,
               dtype='qemu', uuid=None, stats_period=1):
    def esc(value):
        return saxutils.escape(str(value), {"'": '&apos;'})
    return DOMAIN_XML.format(
        dtype=esc(dtype), name=esc(name), uuid=esc(uuid or uuidlib.uuid4()),
        memory_mb=int(memory_mb), vcpus=int(vcpus), kernel=esc(image.kernel),
        initrd=esc(image.initrd), disk=esc(disk), console=esc(console),
        stats_period=int(stats_period))


def agent_command(dom, command, timeout=5):
    return libvirt_qemu.qemuAgentCommand(dom, command, timeout, 0)


def wait_for_agent(dom, timeout=90.0):
    """Wait until the guest agent answers guest-ping; raise on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            agent_command(dom, '{"execute": "guest-ping"}', timeout=2)
            return
        except libvirt.libvirtError as exc:
            last = exc
            time.sleep(0.5)
    raise TimeoutError('guest %s: agent did not answer in %.0f s (%s)'
                       % (dom.name(), timeout, last))


def boot(conn, name, image, workdir, memory_mb=512, vcpus=1, dtype='qemu',
         uuid=None):
    """Create (transient) and return a guest; its agent may not be up yet."""
    disk = image.overlay(name, workdir)
    console = os.path.join(workdir, '%s.console.log' % name)
    xml = domain_xml(name, image, disk, console, memory_mb, vcpus, dtype,
                     uuid)
    return conn.createXML(xml, 0)


def destroy(conn, name):
    try:
        conn.lookupByName(name).destroy()
    except libvirt.libvirtError:
        pass
