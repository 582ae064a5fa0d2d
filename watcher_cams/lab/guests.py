"""Tiny real guests for the functional tests and the real-guest lab.

The image comes from ``tools/guest-image.sh`` (a kernel, an initramfs that
runs qemu-ga, and an ext4 data disk). Each guest gets its own qcow2 overlay
over the shared data disk, a virtio balloon with a stats period, and a guest
agent channel: the devices lab-notes.md found to work. The domain type is a
parameter: TCG (``qemu``) by default, because the /dev/kvm of these machines
is nested paravirtual KVM that does not boot stock kernels.
"""

import base64
import json
import os
import socket
import subprocess
import time
import uuid as uuidlib
from xml.sax import saxutils

import libvirt
import libvirt_qemu

AGENT_CHANNEL = """    <channel type='unix'>
      <target type='virtio' name='org.qemu.guest_agent.0'/>
    </channel>
"""

# Without libvirt's guest-agent channel (a guest the watcher-cams agent
# must manage from host-side signals alone) the lab still controls its
# reader: qemu-ga runs on this port instead, over a socket only the lab
# talks to (libvirt knows no agent for the guest).
LAB_PORT = 'org.watcher_cams.lab.0'
LAB_CHANNEL = """    <channel type='unix'>
      <source mode='bind' path='{path}'/>
      <target type='virtio' name='""" + LAB_PORT + """'/>
    </channel>
"""
# {domain uuid: LabChannel} of the guests booted without an agent.
_LAB_CHANNELS = {}

DOMAIN_XML = """<domain type='{dtype}'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  <metadata>
    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
      <nova:name>{name}</nova:name>
    </nova:instance>
  </metadata>
  <memory unit='MiB'>{memory_mb}</memory>
  <currentMemory unit='MiB'>{current_mb}</currentMemory>
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
{disks}{channel}    <serial type='file'><source path='{console}'/></serial>
    <memballoon model='virtio'><stats period='{stats_period}'/></memballoon>
  </devices>
</domain>
"""


DISK_XML = """    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' cache='{cache}'/>
      <source file='{path}'/>
      <target dev='{dev}' bus='virtio'/>
    </disk>
"""


class GuestImage:
    """Paths of a built guest image directory."""

    def __init__(self, directory):
        self.directory = directory = os.path.abspath(directory)
        self.kernel = os.path.join(directory, 'vmlinuz')
        self.initrd = os.path.join(directory, 'initrd.gz')
        self.data = os.path.join(directory, 'data.img')
        for path in (self.kernel, self.initrd, self.data):
            if not os.path.exists(path):
                raise FileNotFoundError(
                    '%s is missing: run tools/guest-image.sh %s'
                    % (path, directory))

    def lab_data(self, size_mb):
        """The lab's data disk of ``size_mb`` MiB (built on request only)."""
        path = os.path.join(self.directory, 'lab-data-%d.img' % size_mb)
        if not os.path.exists(path):
            raise FileNotFoundError(
                '%s is missing: run tools/guest-image.sh --lab-data %d %s'
                % (path, size_mb, self.directory))
        return path

    def overlay(self, name, workdir, base=None):
        """A fresh qcow2 overlay of ``base`` (the data disk) for ``name``."""
        base = base or self.data
        path = os.path.join(workdir, '%s.qcow2' % name)
        if os.path.exists(path):
            os.unlink(path)
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'raw',
                        '-b', base, path], check=True)
        return path


def domain_xml(name, image, disks, console, memory_mb=512, vcpus=1,
               dtype='qemu', uuid=None, stats_period=1, agent=True,
               current_mb=None, disk_cache='none', lab_socket=None):
    """The domain XML; ``disks`` are image paths, attached as vda, vdb...

    Without ``agent``, ``lab_socket`` is the path of the lab's own channel
    (LAB_CHANNEL), if any.

    ``disk_cache`` is the disks' cache mode: ``none`` keeps the host's page
    cache out of the lab's measurements, ``writeback`` puts it under the
    guest's (double caching).
    """
    def esc(value):
        return saxutils.escape(str(value), {"'": '&apos;'})
    disk_xml = ''.join(
        DISK_XML.format(cache=esc(disk_cache), path=esc(path),
                        dev='vd' + chr(97 + i))
        for i, path in enumerate(disks))
    return DOMAIN_XML.format(
        dtype=esc(dtype), name=esc(name), uuid=esc(uuid or uuidlib.uuid4()),
        memory_mb=int(memory_mb), current_mb=int(current_mb or memory_mb),
        vcpus=int(vcpus), kernel=esc(image.kernel),
        initrd=esc(image.initrd), disks=disk_xml, console=esc(console),
        stats_period=int(stats_period),
        channel=AGENT_CHANNEL if agent else (
            LAB_CHANNEL.format(path=esc(lab_socket)) if lab_socket else ''))


def agent_command(dom, command, timeout=5):
    """qemu-ga's answer to ``command``: through libvirt, or the lab channel.

    Raises libvirt.libvirtError when it does not answer.
    """
    channel = _LAB_CHANNELS.get(dom.UUIDString())
    if channel is None:
        return libvirt_qemu.qemuAgentCommand(dom, command, timeout, 0)
    try:
        return channel.command(command, timeout)
    except (OSError, ValueError) as exc:
        channel.close()
        raise libvirt.libvirtError('lab channel %s: %s' % (channel.path, exc))


class LabChannel:
    """qemu-ga over the lab channel's socket, one connection kept open.

    The connection stays open from boot on: qemu-ga answering while no
    client is connected can leave the port stuck. Each command follows a
    sync: a byte 0xFF resets qemu-ga's JSON parser, and
    guest-sync-delimited answers after a 0xFF of its own, past whatever
    an earlier command that timed out still had to say.
    """

    def __init__(self, path):
        self.path = path
        self._sock = self._lines = None

    def close(self):
        if self._sock is not None:
            self._lines.close()
            self._sock.close()
        self._sock = self._lines = None

    def command(self, command, timeout):
        if self._sock is None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(self.path)
            self._lines = self._sock.makefile('rb')
        self._sock.settimeout(timeout)
        self._sync()
        self._sock.sendall(command.encode() + b'\n')
        answer = json.loads(self._line())
        if 'error' in answer:
            raise ValueError(str(answer['error'])[:200])
        return json.dumps(answer)

    def _sync(self):
        sync_id = int.from_bytes(os.urandom(4), 'big')
        self._sock.sendall(b'\xff' + json.dumps({
            'execute': 'guest-sync-delimited',
            'arguments': {'id': sync_id}}).encode() + b'\n')
        while True:
            byte = self._lines.read(1)
            if not byte:
                raise ValueError('the channel closed')
            if byte == b'\xff' and json.loads(
                    self._line()).get('return') == sync_id:
                return

    def _line(self):
        line = self._lines.readline()
        if not line:
            raise ValueError('the channel closed')
        return line


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


def wait_for_balloon(dom, target_mb, slack_mb=8, timeout=120.0):
    """Wait until the balloon holds the guest near ``target_mb``.

    Raise on timeout; near is within ``slack_mb``.

    A guest booted below its maximum starts with all of it and gives the
    rest back only once its balloon driver has inflated, which under TCG
    on a busy host takes seconds after the agent already answers.
    """
    deadline = time.monotonic() + timeout
    while True:
        # 'actual' asks QEMU; the size libvirt reports in info() follows
        # QEMU's rate-limited balloon events and lags by a second or more.
        actual_mb = dom.memoryStats().get('actual', 0) // 1024
        if max(abs(actual_mb - target_mb),
               abs(dom.info()[2] // 1024 - target_mb)) <= slack_mb:
            return
        if time.monotonic() > deadline:
            raise TimeoutError('guest %s: balloon at %d MiB, not %d MiB, '
                               'after %.0f s' % (dom.name(), actual_mb,
                                                 target_mb, timeout))
        time.sleep(0.5)


def guest_exec(dom, command, timeout=120.0):
    """Run ``command`` with /bin/sh in the guest; (exit code, stdout)."""
    started = json.loads(agent_command(dom, json.dumps({
        'execute': 'guest-exec',
        'arguments': {'path': '/bin/sh', 'arg': ['-c', command],
                      'capture-output': True}})))
    pid = started['return']['pid']
    deadline = time.monotonic() + timeout
    while True:
        status = json.loads(agent_command(dom, json.dumps({
            'execute': 'guest-exec-status', 'arguments': {'pid': pid}})))
        status = status['return']
        if status.get('exited'):
            out = base64.b64decode(status.get('out-data', '')).decode(
                'utf-8', 'replace')
            return status.get('exitcode'), out
        if time.monotonic() > deadline:
            raise TimeoutError('guest %s: %r still running after %.0f s'
                               % (dom.name(), command, timeout))
        time.sleep(0.2)


def boot(conn, name, image, workdir, memory_mb=512, vcpus=1, dtype='qemu',
         uuid=None, agent=True, lab_data_mb=None, current_mb=None,
         disk_cache='none'):
    """Create (transient) and return a guest; its agent may not be up yet.

    Without ``agent`` libvirt has no guest-agent channel for it; the lab
    reaches its qemu-ga through LAB_CHANNEL (agent_command).

    With ``lab_data_mb`` the guest also gets an overlay of the lab's data
    disk of that size as vdb (mounted at /lab). ``current_mb`` boots it
    ballooned below ``memory_mb``.
    """
    disks = [image.overlay(name, workdir)]
    if lab_data_mb:
        disks.append(image.overlay(name + '-lab', workdir,
                                   image.lab_data(lab_data_mb)))
    console = os.path.join(workdir, '%s.console.log' % name)
    lab_socket = (None if agent
                  else os.path.join(workdir, '%s.lab.sock' % name))
    xml = domain_xml(name, image, disks, console, memory_mb, vcpus, dtype,
                     uuid, agent=agent, current_mb=current_mb,
                     disk_cache=disk_cache, lab_socket=lab_socket)
    dom = conn.createXML(xml, 0)
    if lab_socket:
        _LAB_CHANNELS[dom.UUIDString()] = LabChannel(lab_socket)
    return dom


def destroy_all(conn, prefix):
    """Destroy every running domain whose name starts with ``prefix``."""
    for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
        try:
            if dom.name().startswith(prefix):
                channel = _LAB_CHANNELS.pop(dom.UUIDString(), None)
                if channel is not None:
                    channel.close()
                dom.destroy()
        except libvirt.libvirtError:
            pass  # already gone
