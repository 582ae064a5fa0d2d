"""The core the labs on real guests share.

The ``guests`` lab (:mod:`~watcher_cams.lab.real_guests` here,
:mod:`~watcher_cams.lab.cloud` through Nova), the double-caching lab
(:mod:`~watcher_cams.lab.double_caching`) and the tempest scenario all boot
guests from the lab image, run ``cams-reader`` in them and sample them on a
schedule: the error they raise, a guest with its reader, the libvirt host
with its image and work directory, and the sampling clock are here once.
"""

import os
import tempfile
import time

import libvirt
from oslo_log import log

from watcher_cams.agent.collectors import host as host_collector
from watcher_cams.lab import guests as lab_guests

LOG = log.getLogger(__name__)
MB = 1 << 20
READER_STATUS = '/tmp/reader.status'
READER_LOG = '/tmp/reader.log'
# (reads, bytes, seconds, done) before the reader's first status line.
NO_STATUS = (0, 0, 0.0, False)


def reader_command(pattern, path, pace, seed, hot_prob=None):
    """``cams-reader``'s command line (tools/guest/cams-reader.c).

    ``pace``: (block KiB, reads, reads a second: 0 unpaced); ``hot_prob``:
    the hot set's share of the reads, for the hotcold pattern. Its status
    goes to READER_STATUS, which GuestRun.status reads.
    """
    block_kib, reads, reads_per_s = pace
    hot = '' if hot_prob is None else ' -P %g' % hot_prob
    return 'cams-reader %s %s -b %d -n %d -r %g%s -s %d -o %s' % (
        pattern, path, block_kib, reads, reads_per_s, hot, seed,
        READER_STATUS)


def in_background(command):
    """``command`` for a guest's shell, in the background, logged."""
    return command + ' </dev/null >%s 2>&1 &' % READER_LOG


class LabError(Exception):
    """The lab cannot run as asked (bad parameters, missing image...)."""


def parse_status(text):
    """The reader's status line: (reads, bytes, seconds, done)."""
    fields = text.split()
    if len(fields) != 4:
        raise ValueError('reader status %r is not "reads bytes seconds '
                         'done"' % text[:80])
    return (int(fields[0]), int(fields[1]), float(fields[2]),
            fields[3] == '1')


class GuestRun:
    """One booted lab guest and the reader it runs.

    ``spec`` is the experiment's description of the guest (its ``name``
    names it in messages; without one, the domain's name does).
    """

    def __init__(self, dom, spec=None, data_path='/lab/data',
                 data_disk='vdb'):
        self.dom = dom
        self.spec = spec
        self.name = spec.name if spec is not None else dom.name()
        self.uuid = dom.UUIDString()
        self.data_path = data_path
        self.data_disk = data_disk
        self.last_status = NO_STATUS

    def start(self, command, *old_files):
        """Run ``command`` (which starts the reader in the background)."""
        code, _ = lab_guests.guest_exec(
            self.dom, 'rm -f %s; %s' % (
                ' '.join((READER_STATUS,) + old_files), command), timeout=30)
        if code != 0:
            raise LabError('guest %s: the reader did not start' % self.name)

    def status(self, missing_ok=False):
        """The reader's (reads, bytes, seconds, done).

        A guest agent too busy to answer in time gives the last status
        again; the next cycle asks anew. No status file yet is an error
        (with the reader's log) unless ``missing_ok``: a reader started
        behind another program (cams-lfu) writes it later.
        """
        try:
            code, out = lab_guests.guest_exec(
                self.dom, 'cat %s' % READER_STATUS, timeout=30)
        except (libvirt.libvirtError, TimeoutError) as exc:
            LOG.warning('guest %s: reader status not read (%s)',
                        self.name, exc)
            return self.last_status
        if code != 0 and missing_ok:
            return self.last_status
        if code != 0:
            _, log_text = lab_guests.guest_exec(self.dom,
                                                'cat %s' % READER_LOG)
            raise LabError('guest %s: no reader status (%s)'
                           % (self.name, log_text.strip()[:200]))
        self.last_status = parse_status(out)
        return self.last_status

    def disk_read_bytes(self):
        return self.dom.blockStats(self.data_disk)[1]


def reserved_for_budget_mb(conn, budget_mb, guests):
    """Host memory (MiB) the lab's ``guests`` may never be promised.

    All but their ``budget_mb`` and what every other running domain holds
    now: every strategy, static included, then has the same memory, and
    none hands out what the host has beyond it.
    """
    mine = {g.uuid for g in guests}
    active = conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)
    others = sum(d.info()[2] // 1024 for d in active
                 if d.UUIDString() not in mine)
    total_mb = host_collector.meminfo_kb()['MemTotal'] // 1024
    return max(0, total_mb - budget_mb - others)


class LabHost:
    """This host's libvirt, the lab image with its data disk, a work dir.

    Every guest the lab boots has a name starting with ``prefix``;
    :meth:`close` destroys them all.
    """

    def __init__(self, image_dir, data_mb, prefix, uri='qemu:///system'):
        try:
            self.image = lab_guests.GuestImage(image_dir)
            self.image.lab_data(data_mb)
        except FileNotFoundError as exc:
            raise LabError(str(exc))
        # libvirt prints every error on stderr by default, and waiting for
        # a booting guest's agent is a stream of them; they are handled.
        libvirt.registerErrorHandler(lambda *args: None, None)
        self.uri = uri
        self.prefix = prefix
        self.conn = libvirt.open(uri)
        self.workdir = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.workdir, 0o755)  # QEMU runs as libvirt-qemu

    def close(self):
        lab_guests.destroy_all(self.conn, self.prefix)


class Schedule:
    """A sampling loop's clock: a tick every ``interval_s`` from now.

    Ticks keep to the schedule however long a sample takes, so samples
    stay ``interval_s`` apart on average; ``timeout_s`` bounds the loop.
    """

    def __init__(self, interval_s, timeout_s):
        self.interval_s = interval_s
        self.start = time.monotonic()
        self.deadline = self.start + timeout_s
        self.ticks = 0

    def elapsed(self):
        return time.monotonic() - self.start

    def expired(self):
        return time.monotonic() > self.deadline

    def wait(self):
        """Sleep until the next tick (not at all if it is past)."""
        self.ticks += 1
        time.sleep(max(0.0, self.start + self.ticks * self.interval_s
                       - time.monotonic()))
