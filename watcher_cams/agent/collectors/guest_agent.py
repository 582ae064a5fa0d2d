"""Counters from inside a guest, read through the QEMU guest agent.

The agent reads /proc/meminfo, /proc/vmstat and /proc/pressure/memory with
guest-file-open/read/close: no guest changes beyond qemu-ga. Everything that
comes back is controlled by the tenant, so reads are bounded in size and
time (each command, and all of one sample's commands together: a guest
that answers a byte at a time must not hold the host's collection), and
the parsers accept only ``name value`` lines with sane numbers.
A failure is a GuestAgentError whose ``status`` says which kind it was;
the agent reports that status instead of logging an error per poll.
"""

import base64
import binascii
import json
import math
import time

import libvirt
import libvirt_qemu

from watcher_cams.policy import report

# Statuses a guest's "agent" field can carry in a report.
OK = 'ok'
MISSING = report.MISSING_AGENT  # no agent channel or qemu-ga not running
TIMEOUT = 'timeout'        # the agent did not answer in time
BAD_DATA = 'bad-data'      # the agent answered with something unusable
FAILED = 'error'           # any other libvirt/agent failure

MAX_LINES = 4096
MAX_LINE = 256
READ_CHUNK = 16384

PSI_PATH = '/proc/pressure/memory'


class GuestAgentError(Exception):
    def __init__(self, status, detail):
        self.status = status
        super().__init__(detail)


def _status_of(exc):
    msg = str(exc).lower()
    if 'not configured' in msg or 'not connected' in msg:
        return MISSING
    if exc.get_error_code() in (libvirt.VIR_ERR_AGENT_UNRESPONSIVE,
                                libvirt.VIR_ERR_AGENT_UNSYNCED,
                                libvirt.VIR_ERR_OPERATION_TIMEOUT):
        return TIMEOUT
    return FAILED


class GuestAgent:
    """One guest's agent, with bounded commands.

    ``timeout`` bounds each command, ``total_s`` all of them together
    (None: no total), both in seconds of ``monotonic``.
    """

    def __init__(self, dom, timeout=3.0, max_bytes=65536, total_s=None,
                 monotonic=None):
        self.dom = dom
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.monotonic = monotonic or time.monotonic
        self.deadline = (None if total_s is None
                         else self.monotonic() + total_s)

    def _command_timeout(self, execute):
        """Whole seconds this command may take (libvirt takes an int)."""
        limit = self.timeout
        if self.deadline is not None:
            left = self.deadline - self.monotonic()
            if left <= 0:
                raise GuestAgentError(TIMEOUT, '%s: the sample took longer '
                                      'than its total time' % execute)
            limit = min(limit, left)
        return max(1, int(math.ceil(limit)))

    def command(self, execute, **arguments):
        cmd = {'execute': execute}
        if arguments:
            cmd['arguments'] = arguments
        timeout = self._command_timeout(execute)
        try:
            raw = libvirt_qemu.qemuAgentCommand(
                self.dom, json.dumps(cmd), timeout, 0)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise
            raise GuestAgentError(_status_of(exc),
                                  '%s: %s' % (execute, exc)) from exc
        if raw is None or len(raw) > 4 * self.max_bytes + 4096:
            raise GuestAgentError(BAD_DATA, '%s: reply missing or too large'
                                  % execute)
        try:
            reply = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            # RecursionError: JSON nested deeper than Python's stack.
            raise GuestAgentError(BAD_DATA, '%s: reply is not JSON or '
                                  'nested too deep' % execute) from exc
        if not isinstance(reply, dict) or 'return' not in reply:
            raise GuestAgentError(BAD_DATA, '%s: reply without "return"'
                                  % execute)
        return reply['return']

    def read_file(self, path):
        """The file's bytes; at most ``max_bytes`` or GuestAgentError."""
        handle = self.command('guest-file-open', path=path, mode='r')
        if type(handle) is not int:
            raise GuestAgentError(BAD_DATA, 'guest-file-open %s: handle %r'
                                  % (path, str(handle)[:32]))
        chunks, size = [], 0
        try:
            while True:
                part = self.command('guest-file-read', handle=handle,
                                    count=READ_CHUNK)
                if not isinstance(part, dict):
                    raise GuestAgentError(BAD_DATA, 'guest-file-read %s: '
                                          'not an object' % path)
                try:
                    data = base64.b64decode(part.get('buf-b64', ''),
                                            validate=True)
                except (binascii.Error, TypeError, ValueError) as exc:
                    raise GuestAgentError(BAD_DATA, 'guest-file-read %s: '
                                          'bad base64' % path) from exc
                size += len(data)
                if size > self.max_bytes:
                    raise GuestAgentError(BAD_DATA, '%s: more than %d bytes'
                                          % (path, self.max_bytes))
                chunks.append(data)
                if part.get('eof') is True or not data:
                    break
        finally:
            try:
                self.command('guest-file-close', handle=handle)
            except GuestAgentError:
                pass  # the read's own outcome is what matters
        return b''.join(chunks)

    def read_text(self, path):
        try:
            return self.read_file(path).decode('ascii')
        except UnicodeDecodeError as exc:
            raise GuestAgentError(BAD_DATA, '%s: not ASCII text'
                                  % path) from exc


def _lines(text, what):
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise GuestAgentError(BAD_DATA, '%s: %d lines' % (what, len(lines)))
    return lines


def _number(token, what):
    if not token.isdigit() or len(token) > 19:
        raise GuestAgentError(BAD_DATA, '%s: %r is not a counter'
                              % (what, token[:32]))
    value = int(token)
    if value > report.MAX_COUNTER:
        raise GuestAgentError(BAD_DATA, '%s: counter too large' % what)
    return value


def parse_meminfo(text, keys=tuple(report.MEMINFO_KEYS)):
    """{key: KiB} for ``keys`` from /proc/meminfo; every key is required."""
    found = {}
    for line in _lines(text, 'meminfo'):
        if len(line) > MAX_LINE:
            raise GuestAgentError(BAD_DATA, 'meminfo: line too long')
        name, sep, rest = line.partition(':')
        if not sep or name not in keys:
            continue
        fields = rest.split()
        unit_ok = len(fields) == 1 or (len(fields) == 2
                                       and fields[1] == 'kB')
        if not fields or not unit_ok:
            raise GuestAgentError(BAD_DATA, 'meminfo: malformed %s' % name)
        if name in found:
            raise GuestAgentError(BAD_DATA, 'meminfo: %s twice' % name)
        found[name] = _number(fields[0], 'meminfo ' + name)
    missing = [k for k in keys if k not in found]
    if missing:
        raise GuestAgentError(BAD_DATA, 'meminfo: missing %s'
                              % ', '.join(missing))
    return found


def parse_vmstat(text, keys=tuple(report.VMSTAT_KEYS)):
    """{key: value} for ``keys`` found in /proc/vmstat (absent ones: 0)."""
    found = {}
    for line in _lines(text, 'vmstat'):
        if len(line) > MAX_LINE:
            raise GuestAgentError(BAD_DATA, 'vmstat: line too long')
        fields = line.split()
        if len(fields) != 2 or fields[0] not in keys:
            continue
        if fields[0] in found:
            raise GuestAgentError(BAD_DATA, 'vmstat: %s twice' % fields[0])
        found[fields[0]] = _number(fields[1], 'vmstat ' + fields[0])
    if 'pgpgin' not in found:
        raise GuestAgentError(BAD_DATA, 'vmstat: no pgpgin')
    return {k: found.get(k, 0) for k in keys}


def parse_psi(text):
    """some_avg10, full_avg10 (percent) and some_total (us) of PSI memory."""
    out = {}
    for line in _lines(text, 'psi'):
        fields = line.split()
        if not fields or fields[0] not in ('some', 'full'):
            continue
        values = dict(f.partition('=')[::2] for f in fields[1:])
        try:
            avg10 = float(values['avg10'])
        except (KeyError, ValueError) as exc:
            raise GuestAgentError(BAD_DATA, 'psi: no avg10') from exc
        if not math.isfinite(avg10) or not 0.0 <= avg10 <= 100.0:
            raise GuestAgentError(BAD_DATA, 'psi: avg10 out of range')
        out['%s_avg10' % fields[0]] = avg10
        if fields[0] == 'some':
            out['some_total'] = _number(values.get('total', ''), 'psi total')
    return out


def collect(dom, timeout=3.0, max_bytes=65536, clock=time.time,
            total_s=None, monotonic=None):
    """One sample dict in report format (see watcher_cams.policy.report).

    ``timeout`` bounds each guest-agent command and ``total_s`` the whole
    sample (seconds); past either it raises GuestAgentError(TIMEOUT).
    """
    agent = GuestAgent(dom, timeout, max_bytes, total_s, monotonic)
    sample = {'timestamp': clock(),
              'meminfo': parse_meminfo(agent.read_text('/proc/meminfo')),
              'vmstat': parse_vmstat(agent.read_text('/proc/vmstat'))}
    try:
        sample['psi'] = parse_psi(agent.read_text(PSI_PATH))
    except GuestAgentError as exc:
        if exc.status not in (BAD_DATA, FAILED):
            raise
        # Kernels without PSI (or booted with psi=0) have no such file;
        # the policies work without it.
        sample['psi'] = {}
    return sample
