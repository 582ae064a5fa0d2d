"""Guest agents for domains that run no OS, for bench-agent's large runs.

Forty real guests booting Linux under TCG do not fit on a 2-core machine,
so ``bench-agent --fake-agents N`` boots one real guest and N domains that
run no operating system (QEMU halts in its firmware: real libvirt domains,
real QEMU processes, balloon and block devices, next to no CPU). Their
guest agents are these fakes: each answers the commands the collector
sends with the files the real guest's agent gave, after a latency drawn
from what the real guest agent took per command in the same run (the
collector, its threads and timeouts are the real ones). A hung fake never
answers: each command waits its timeout and fails as libvirt does.
"""

import base64
import contextlib
import itertools
import json
import random
import threading
import time

import libvirt
import libvirt_qemu

from watcher_cams.agent.collectors import guest_agent

FILES = ('/proc/meminfo', '/proc/vmstat', guest_agent.PSI_PATH)

SHELL_XML = """<domain type='{dtype}'>
  <name>{name}</name>
  <memory unit='MiB'>{memory_mb}</memory>
  <vcpu placement='static'>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <bios rebootTimeout='-1'/>
  </os>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' cache='none'/>
      <source file='{disk}'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <channel type='unix'>
      <target type='virtio' name='org.qemu.guest_agent.0'/>
    </channel>
    <memballoon model='virtio'><stats period='1'/></memballoon>
  </devices>
</domain>
"""


class AgentHung(libvirt.libvirtError):
    """What libvirt raises when a guest agent does not answer in time."""

    def get_error_code(self):
        return libvirt.VIR_ERR_AGENT_UNRESPONSIVE


class FakeGuestAgent:
    """One guest's agent: ``files`` {path: bytes}, ``latencies_s``.

    ``hung``: every command waits its timeout, then fails.
    """

    def __init__(self, files, latencies_s, hung=False, seed=0):
        self.files = files
        self.latencies_s = latencies_s
        self.hung = hung
        self._random = random.Random(seed)
        self._open = {}  # handle: [path, offset]
        self._handles = itertools.count(1000)
        self._lock = threading.Lock()
        self._answers = {'guest-file-open': self._open_file,
                         'guest-file-read': self._read_file,
                         'guest-file-close': self._close_file}

    def command(self, cmd, timeout):
        """The JSON answer to ``cmd``, as qemuAgentCommand returns it."""
        if self.hung:
            time.sleep(timeout)
            raise AgentHung('Guest agent is not responding: fake hung '
                            'agent')
        time.sleep(self._random.choice(self.latencies_s))
        request = json.loads(cmd)
        args = request.get('arguments', {})
        with self._lock:
            answer = self._answers[request['execute']](args)
        return json.dumps({'return': answer})

    def _open_file(self, args):
        handle = next(self._handles)
        self._open[handle] = [args['path'], 0]
        return handle

    def _read_file(self, args):
        path, offset = self._open[args['handle']]
        data = self.files.get(path, b'')[offset:offset + args['count']]
        self._open[args['handle']][1] += len(data)
        return {'count': len(data), 'buf-b64': base64.b64encode(
            data).decode('ascii'), 'eof': offset + len(data) >= len(
                self.files.get(path, b''))}

    def _close_file(self, args):
        self._open.pop(args['handle'], None)
        return {}


@contextlib.contextmanager
def answering(fakes, timings=None):
    """libvirt's guest-agent calls go to ``fakes`` {uuid: FakeGuestAgent}.

    Other domains reach their real agent; ``timings`` (a list), if given,
    gets the seconds each real command took.
    """
    real = libvirt_qemu.qemuAgentCommand

    def command(dom, cmd, timeout, flags):
        fake = fakes.get(dom.UUIDString())
        if fake is not None:
            return fake.command(cmd, timeout)
        start = time.monotonic()
        try:
            return real(dom, cmd, timeout, flags)
        finally:
            if timings is not None:
                timings.append(time.monotonic() - start)

    libvirt_qemu.qemuAgentCommand = command
    try:
        yield
    finally:
        libvirt_qemu.qemuAgentCommand = real


def real_files(dom, timeout=10):
    """The files the collector reads, as ``dom``'s real agent gives them."""
    agent = guest_agent.GuestAgent(dom, timeout)
    return {path: agent.read_file(path) for path in FILES}
