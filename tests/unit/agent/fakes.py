"""Fakes of the libvirt boundary for the agent's unit tests.

The real boundary is exercised in tests/functional against real guests;
here a domain is a small object answering the calls the agent makes, and
its guest agent serves files from a dict, so tests can hand the agent any
malformed, huge or hostile output a tenant could produce.
"""

import base64
import json

import libvirt

MEMINFO = """MemTotal:         468524 kB
MemFree:          300000 kB
MemAvailable:     425124 kB
Buffers:               0 kB
Cached:           109220 kB
Active(file):      20000 kB
Inactive(file):    80000 kB
Committed_AS:      19956 kB
"""
VMSTAT = """nr_free_pages 75000
pgpgin 98324
pgpgout 0
pgmajfault 12
workingset_refault_file 5
workingset_activate_file 3
"""
PSI = """some avg10=1.50 avg60=0.00 avg300=0.00 total=1234
full avg10=0.25 avg60=0.00 avg300=0.00 total=99
"""


def libvirt_error(code, message='fake libvirt error'):
    exc = libvirt.libvirtError(message)
    exc.err = (code, 0, message, 0, '', '', '', -1, -1)
    return exc


class FakeDomain:
    def __init__(self, uuid, name='g', max_mb=1024, actual_mb=None,
                 vcpus=1, host_cpus=2, files=None, pid=None):
        self.uuid = uuid
        self._name = name
        self.max_mb = max_mb
        self.actual_kib = (actual_mb or max_mb) * 1024
        self.vcpus = vcpus
        self.pins = [tuple([True] * host_cpus) for _ in range(vcpus)]
        self.emulator = tuple([True] * host_cpus)
        self.files = dict(files if files is not None else {
            '/proc/meminfo': MEMINFO.encode(),
            '/proc/vmstat': VMSTAT.encode(),
            '/proc/pressure/memory': PSI.encode()})
        self.agent_error = None      # a libvirtError every command raises
        self.gone = False            # the domain vanished
        self.balloon_follows = True  # the guest reaches its target
        self.replies = {}            # command name -> raw reply override
        self.read_bytes = None       # bytes per guest-file-read (None: all)
        self.endless = False         # file reads never reach the end
        self.vanish_after = None     # agent commands answered before gone
        self.commands = 0            # agent commands asked
        self.clock = None            # a FakeClock each command advances
        self.command_s = 0.0         # by this many seconds
        self.handles = {}
        self.pid = pid
        self.disk_cache = 'none'     # vda's cache mode
        self.rd_bytes = 4096         # vda's bytes read by the guest
        self.rd_req = 1              # and its read requests
        self.balloon_stats = {}      # more memoryStats (major_fault...)
        self.cpu_ns = 0              # CPU time it ran (virDomainGetInfo)

    def _check(self):
        if self.gone:
            raise libvirt_error(libvirt.VIR_ERR_NO_DOMAIN, 'no domain')

    def UUIDString(self):
        return self.uuid

    def name(self):
        return self._name

    def XMLDesc(self, flags=0):
        self._check()
        return ("<domain><name>%s</name><devices><disk device='disk'>"
                "<driver cache='%s'/><target dev='vda'/></disk></devices>"
                "</domain>" % (self._name, self.disk_cache))

    def info(self):
        self._check()
        return [1, self.max_mb * 1024, self.actual_kib, self.vcpus,
                self.cpu_ns]

    def memoryStats(self):
        self._check()
        return dict({'usable': 1000}, **self.balloon_stats,
                    actual=self.actual_kib)

    def vcpuPinInfo(self, flags):
        self._check()
        return list(self.pins)

    def emulatorPinInfo(self, flags):
        self._check()
        return self.emulator

    def blockStats(self, dev):
        self._check()
        return (self.rd_req, self.rd_bytes, 0, 0, -1)

    def setMemoryFlags(self, kib, flags):
        self._check()
        if self.balloon_follows:
            self.actual_kib = kib

    def pinVcpuFlags(self, vcpu, mask, flags):
        self._check()
        self.pins[vcpu] = tuple(mask)

    def pinEmulator(self, mask, flags):
        self._check()
        self.emulator = tuple(mask)

    # The guest agent, as libvirt_qemu.qemuAgentCommand sees it.
    def agent(self, raw):
        self.commands += 1
        if self.clock is not None:
            self.clock.now += self.command_s
        if self.vanish_after is not None and \
                self.commands > self.vanish_after:
            self.gone = True
        self._check()
        if self.agent_error is not None:
            raise self.agent_error
        cmd = json.loads(raw)
        name, args = cmd['execute'], cmd.get('arguments', {})
        if name in self.replies:
            return self.replies[name]
        if name == 'guest-file-open':
            if args['path'] not in self.files:
                raise libvirt_error(libvirt.VIR_ERR_INTERNAL_ERROR,
                                    'failed to open file')
            handle = len(self.handles) + 1
            self.handles[handle] = [self.files[args['path']], 0]
            return json.dumps({'return': handle})
        if name == 'guest-file-read':
            return self._read(args['handle'], args['count'])
        if name == 'guest-file-close':
            self.handles.pop(args['handle'], None)
            return json.dumps({'return': {}})
        raise libvirt_error(libvirt.VIR_ERR_INTERNAL_ERROR, 'unknown')

    def _read(self, handle, count):
        data, pos = self.handles[handle]
        if self.endless:
            data = data * (pos // max(1, len(data)) + 2)
        chunk = data[pos:pos + min(count, self.read_bytes or count)]
        self.handles[handle][1] = pos + len(chunk)
        eof = not self.endless and pos + len(chunk) >= len(data)
        return json.dumps({'return': {
            'count': len(chunk), 'eof': eof,
            'buf-b64': base64.b64encode(chunk).decode()}})


class FakeClock:
    """A monotonic clock that moves only when told (FakeDomain.command_s)."""

    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class FakeConn:
    def __init__(self, domains=()):
        self.domains = list(domains)

    def listAllDomains(self, flags):
        return list(self.domains)

    def lookupByUUIDString(self, uuid):
        for dom in self.domains:
            if dom.uuid == uuid and not dom.gone:
                return dom
        raise libvirt_error(libvirt.VIR_ERR_NO_DOMAIN, 'no domain')

    def isAlive(self):
        return 1


def agent_command(dom, raw, timeout, flags):
    """Stand-in for libvirt_qemu.qemuAgentCommand."""
    return dom.agent(raw)
