"""``watcher-cams-lab double-caching``: LFU Cache FS on a real guest.

The LFU Cache FS evaluation (papers.md, section 3) at a TCG-friendly scale:
one guest reads a data file at random, in 1 MiB reads, through a disk whose
cache mode is writeback, so the host's page cache sits under the guest's.
The file is larger than the guest's cache and the host cache this guest may
use is capped below the file too: libvirt's hard limit on the guest's
memory cgroup is set to what its QEMU uses itself plus ``host_cache_mb``,
once the guest's memory is in use.

Each strategy runs on a freshly booted guest with both caches cold:

``plain``
    the reader alone, over the guest's own page cache;
``lfu-paper``
    the reader under cams-lfu (tools/guest) with the paper's policy
    (a check every 10 misses, a history of 100 accesses), its blocks and
    hot set scaled with the data;
``lfu-ours``
    the same with the simulator's ``lfu-ours`` parameters (a history of
    2,000 and a 4-sigma swap margin).

From the end of the warm-up on, the agent's own measurement
(:mod:`watcher_cams.policy.host_cache`) gives what the guest read from the
disk and what QEMU read from storage: the host cache's hit ratio, the
paper's figure (0% -> 92%).
"""

import dataclasses
import os
import time

import libvirt
from oslo_log import log

from watcher_cams.agent.collectors import domains as domains_collector
from watcher_cams.agent.collectors import guest_agent
from watcher_cams.agent.collectors import process_io
from watcher_cams.lab import core
from watcher_cams.lab import guests as lab_guests
from watcher_cams.lab import progress as progress_mod
from watcher_cams.lab import results as results_mod
from watcher_cams.lab.sim import lfu as sim_lfu
from watcher_cams.lab import tables
from watcher_cams.policy import host_cache
from watcher_cams.policy import lfu

LOG = log.getLogger(__name__)
PREFIX = 'cams-lab-dc-'
DATA = '/lab/data'
LFU_STATUS = '/tmp/lfu.status'
# How far above its target a guest's MemAvailable may settle (MiB).
FIT_SLACK_MB = 16
# label -> LFU parameters (None: the plain guest cache).
STRATEGIES = {
    'plain': None,
    'lfu-paper': lfu.PAPER,
    'lfu-ours': sim_lfu.OURS,
}
# The comparison: LFU must raise the host's hit ratio by this much.
TARGET_GAIN = 0.3


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One run per strategy; defaults: the paper's setup divided by 8.

    Paper: a 4 GiB file, a 3 GiB guest, 2.625 GiB of LFU hot set in
    128 MiB blocks, a 2.5 GiB host cache. Here: 512 MiB of data, a guest
    whose page cache may hold 368 MiB, 336 MiB of hot set in 16 MiB
    blocks (21 of 32 blocks, as in the paper), 320 MiB of host cache.

    ``guest_cache_mb`` is what the guest can cache, measured: how much
    memory the guest's kernel, initramfs and agent keep for themselves
    depends on the kernel the image was built from, so each guest boots
    with ``guest_mb`` and is ballooned down until its MemAvailable is
    ``guest_cache_mb`` (:func:`fit_guest_cache`). The plain guest cache
    then cannot hold the data, whatever the kernel.
    """

    guest_mb: int = 640
    guest_cache_mb: int = 368
    data_mb: int = 512
    block_mb: int = 16
    lfu_cache_mb: int = 336
    host_cache_mb: int = 320
    reads: int = 6000
    warm_reads: int = 2000
    # The reader's pace (0: as fast as it can). Unpaced, a reader served
    # by the host cache did 500 reads/s on a 2-core machine, and the few
    # seconds it takes to see the warm-up and sample again cost most of
    # the reads meant to be measured (a CI run measured 969 of its
    # 4,000); paced, they cost a few hundred.
    reads_per_s: int = 100
    chunk_kib: int = 1024
    strategies: tuple = ('plain', 'lfu-paper', 'lfu-ours')
    domain_type: str = 'qemu'

    def __post_init__(self):
        if any(s not in STRATEGIES for s in self.strategies):
            raise core.LabError('strategies must be among %s'
                                % ', '.join(STRATEGIES))
        if not 0 < self.warm_reads < self.reads:
            raise core.LabError('need 0 < warm_reads < reads')
        if self.reads_per_s < 0:
            raise core.LabError('need reads_per_s >= 0')
        if not (self.block_mb <= self.lfu_cache_mb <= self.guest_cache_mb
                < self.data_mb):
            raise core.LabError(
                'need block_mb <= lfu_cache_mb <= guest_cache_mb < data_mb: '
                'the hot set holds whole blocks and fits in the guest\'s '
                'cache, which cannot hold all of the data')
        if self.guest_mb < 256 or self.host_cache_mb < 1:
            raise core.LabError('need guest_mb >= 256 and host_cache_mb >= 1')


def reader_command(exp, strategy, seed=1):
    """The guest's shell command for one run."""
    reader = core.reader_command(
        'uniform', DATA, (exp.chunk_kib, exp.reads, exp.reads_per_s), seed)
    params = STRATEGIES[strategy]
    if params is not None:
        reader = ('cams-lfu -c %d -b %d -k %d -H %d -C %g -s %s %s %s' % (
            exp.lfu_cache_mb, exp.block_mb, params.check_every,
            params.history, params.confidence, LFU_STATUS, DATA, reader))
    return core.in_background(reader)


def memory_cgroup(pid, root='/'):
    """The cgroup directory holding ``pid``'s memory (v1 or v2), or None."""
    try:
        with open(os.path.join(root, 'proc', str(pid), 'cgroup')) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(':', 2)
        if 'memory' in controllers.split(','):
            return os.path.join(root, 'sys/fs/cgroup/memory',
                                path.lstrip('/'))
    for line in lines:
        if line.startswith('0::'):
            return os.path.join(root, 'sys/fs/cgroup', line[3:].lstrip('/'))
    return None


def cgroup_memory(directory):
    """(bytes in use, of which page cache) of a memory cgroup."""
    def read(name):
        with open(os.path.join(directory, name)) as f:
            return f.read()
    stat = dict(line.split() for line in read('memory.stat').splitlines()
                if len(line.split()) == 2)
    if os.path.exists(os.path.join(directory, 'memory.usage_in_bytes')):
        return int(read('memory.usage_in_bytes')), int(stat['cache'])
    return int(read('memory.current')), int(stat['file'])


def cap_host_cache(dom, pid, budget_mb):
    """Let ``dom``'s QEMU (``pid``) keep at most ``budget_mb`` of page cache.

    Sets libvirt's hard limit on the guest's memory cgroup to what QEMU
    uses itself now plus the budget; returns (QEMU's own MiB, limit MiB).
    Call it once the guest's memory is in use (QEMU allocates it lazily).
    """
    directory = memory_cgroup(pid)
    if directory is None or not os.path.isdir(directory):
        raise core.LabError(
            'no memory cgroup for QEMU (pid %d): the host cache cannot be '
            'capped' % pid)
    used, cache = cgroup_memory(directory)
    limit = used - cache + budget_mb * core.MB
    dom.setMemoryParameters({libvirt.VIR_DOMAIN_MEMORY_HARD_LIMIT:
                             limit // 1024}, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    return (used - cache) // core.MB, limit // core.MB


def drop_host_cache(path):
    """Evict a file's clean pages from the host's page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def fit_guest_cache(dom, cache_mb, timeout_s=120.0):
    """Balloon ``dom`` until its MemAvailable is about ``cache_mb``.

    Returns (balloon MiB, MemAvailable MiB) once the guest reports it.
    What the guest keeps outside its page cache (kernel, initramfs, agent)
    is measured, not assumed; the guest must have booted with room for
    it plus ``cache_mb``.
    """
    total_mb, available_mb = _guest_memory_mb(dom)
    actual_mb = dom.memoryStats()['actual'] // 1024
    target_mb = actual_mb - (available_mb - cache_mb)
    if available_mb < cache_mb:
        raise core.LabError(
            '%s: only %d MiB of %d MiB available for the page cache, not '
            '%d: boot it with more memory (guest_mb)'
            % (dom.name(), available_mb, total_mb, cache_mb))
    dom.setMemoryFlags(target_mb * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    lab_guests.wait_for_balloon(dom, target_mb, timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    # The guest's MemTotal follows its balloon driver, which lags QEMU.
    _, available_mb = _guest_memory_mb(dom)
    while available_mb > cache_mb + FIT_SLACK_MB:
        if time.monotonic() > deadline:
            raise core.LabError(
                '%s: MemAvailable %d MiB, not %d, %.0f s after the balloon '
                'reached %d MiB' % (dom.name(), available_mb, cache_mb,
                                    timeout_s, target_mb))
        time.sleep(1)
        _, available_mb = _guest_memory_mb(dom)
    return target_mb, available_mb


def _guest_memory_mb(dom):
    """(MemTotal, MemAvailable) of the guest in MiB, read in the guest."""
    code, text = lab_guests.guest_exec(dom, 'cat /proc/meminfo', timeout=60)
    if code != 0:
        raise core.LabError('%s: cat /proc/meminfo exited with %s'
                            % (dom.name(), code))
    try:
        info = guest_agent.parse_meminfo(text, ('MemTotal', 'MemAvailable'))
    except guest_agent.GuestAgentError as exc:
        raise core.LabError('%s: /proc/meminfo: %s'
                            % (dom.name(), exc))
    return info['MemTotal'] // 1024, info['MemAvailable'] // 1024


def parse_lfu_status(text):
    """cams-lfu's status file: counters and the hot blocks."""
    lines = text.splitlines()
    fields = lines[0].split() if lines else []
    if len(fields) != 7:
        raise ValueError('cams-lfu status %r is not seven counters'
                         % text[:80])
    names = ('accesses', 'hits', 'misses', 'swaps', 'slots', 'hot', 'done')
    status = dict(zip(names, map(int, fields)))
    status['blocks'] = [int(b) for b in lines[1].split(',')] \
        if len(lines) > 1 and lines[1] else []
    return status


class Run:
    """One strategy's guest, its counters and the host cache it may use."""

    def __init__(self, lab, strategy):
        self.lab = lab
        self.exp = lab.exp
        self.strategy = strategy
        self.dom = None
        self.guest = None  # core.GuestRun once booted
        self.series = []
        self.measured = None
        self.lfu = None
        self.fitted = None

    def boot(self):
        lab, exp = self.lab, self.exp
        name = PREFIX + self.strategy
        lab_guests.destroy_all(lab.conn, name)
        self.dom = lab_guests.boot(
            lab.conn, name, lab.image, lab.workdir,
            memory_mb=exp.guest_mb, dtype=exp.domain_type,
            lab_data_mb=exp.data_mb, disk_cache='writeback')
        # Cold host caches: what an earlier run read must not hit now.
        for path in (lab.image.data, lab.image.lab_data(exp.data_mb),
                     os.path.join(lab.workdir, name + '.qcow2'),
                     os.path.join(lab.workdir, name + '-lab.qcow2')):
            drop_host_cache(path)
        lab_guests.wait_for_agent(self.dom, timeout=300)
        self.fitted = fit_guest_cache(self.dom, exp.guest_cache_mb)
        self.guest = core.GuestRun(self.dom, data_path=DATA)

    def counters(self):
        """The agent's io_sample of the guest now, with the reads done."""
        domain = domains_collector.describe(self.dom)
        sample = host_cache.io_sample(
            time.time(), domain.qemu_pid, domain.disks,
            process_io.read_bytes(domain.qemu_pid))
        # cams-lfu reads its hot set before it starts the reader: no
        # status file for a while is no error.
        reads, read_bytes, _, done = self.guest.status(missing_ok=True)
        return sample, reads, read_bytes, done, domain.qemu_pid

    def run(self, progress, out):
        """Boot, read until done, measure from the warm-up on; the figures."""
        self.boot()
        self._start_reader()
        first, last = self._sample_until_done(progress, out)
        sample, read_bytes = last
        svc = host_cache.service(sample, first[0], 0)
        self.measured = {
            'app_mb': (read_bytes - first[2]) / core.MB,
            'guest_read_mb': svc.guest_read_mb,
            'storage_read_mb': svc.storage_read_mb,
            'host_hit_ratio': svc.hit_ratio,
            'seconds': svc.window_s,
            'balloon_mb': self.fitted[0],
            'available_mb': self.fitted[1]}
        if STRATEGIES[self.strategy] is not None:
            code, text = lab_guests.guest_exec(self.dom, 'cat %s'
                                               % LFU_STATUS)
            self.lfu = parse_lfu_status(text) if code == 0 else None
        self.dom.destroy()
        return self.measured

    def _start_reader(self):
        self.guest.start(reader_command(self.exp, self.strategy), LFU_STATUS)

    def _sample_until_done(self, progress, out):
        """Sample every 2 s until the reader is done.

        Returns the first sample after the warm-up, when the host cache
        is capped, as (sample, reads, read bytes), and the last one as
        (sample, read bytes).
        """
        exp = self.exp
        schedule = core.Schedule(2, 3600)
        first = None
        while True:
            schedule.wait()
            sample, reads, read_bytes, done, pid = self.counters()
            t = schedule.elapsed()
            if first is None and reads >= exp.warm_reads:
                self._cap(pid, reads, t, out)
                # The cap trims the host cache to its budget: measure
                # from a fresh sample after it.
                sample, reads, read_bytes, done, pid = self.counters()
                first = (sample, reads, read_bytes)
            self._record(t, reads, sample)
            progress.step('%s %d/%d reads' % (self.strategy, reads,
                                              exp.reads))
            if done:
                break
            if schedule.expired():
                raise core.LabError('%s: the reader did not finish within '
                                    'an hour' % self.strategy)
        if first is None:
            raise core.LabError('%s: the reader finished before its '
                                'warm-up' % self.strategy)
        return first, (sample, read_bytes)

    def _cap(self, pid, reads, t, out):
        # The guest is paused while the cap trims the host cache: a fast
        # reader would otherwise spend reads meant to be measured before
        # the measurement starts (a CI run lost 1,100 of its 2,085 so).
        self.dom.suspend()
        try:
            qemu_mb, limit_mb = cap_host_cache(self.dom, pid,
                                               self.exp.host_cache_mb)
        finally:
            self.dom.resume()
        out('%s: warm after %d reads (%.0f s); QEMU uses %d MiB itself, '
            'hard limit %d MiB' % (self.strategy, reads, t, qemu_mb,
                                   limit_mb))

    def _record(self, t, reads, sample):
        """One point of the hit-ratio timeline (None for the first)."""
        if sample is None:
            return
        svc = (host_cache.service(sample, self.series[-1]['sample'], 1)
               if self.series else None)
        self.series.append({'t': t, 'reads': reads, 'sample': sample,
                            'hit_ratio': svc and svc.hit_ratio})


class Lab(core.LabHost):
    """This host's libvirt, the lab image and a work dir for ``exp``."""

    def __init__(self, exp, image_dir, uri='qemu:///system'):
        super().__init__(image_dir, exp.data_mb, PREFIX, uri)
        self.exp = exp


def checks(rows):
    """The targets: LFU raises the host cache's hit ratio over plain."""
    by = {r['strategy']: r for r in rows}
    found = []
    plain = by.get('plain')
    for label in ('lfu-paper', 'lfu-ours'):
        if plain and label in by:
            gain = by[label]['host_hit_ratio'] - plain['host_hit_ratio']
            found.append((
                '%s raises the host hit ratio over plain by >= %.0f points'
                % (label, 100 * TARGET_GAIN), gain >= TARGET_GAIN,
                '%.0f%% -> %.0f%%' % (100 * plain['host_hit_ratio'],
                                      100 * by[label]['host_hit_ratio'])))
    return found


def run(exp, lab, outdir, out=print, stream=None):
    """Every strategy of ``exp``; table, results.json and a plot."""
    os.makedirs(outdir, exist_ok=True)
    out('== double caching: a guest (max %d MiB) ballooned to %d MiB '
        'available for its page cache, %d MiB of data (writeback), host '
        'cache %d MiB, LFU hot set %d MiB in %d MiB blocks; %d reads of '
        '%d KiB (%s), measured after %d' % (
            exp.guest_mb, exp.guest_cache_mb, exp.data_mb, exp.host_cache_mb,
            exp.lfu_cache_mb, exp.block_mb, exp.reads, exp.chunk_kib,
            '%d a second' % exp.reads_per_s if exp.reads_per_s
            else 'unpaced', exp.warm_reads))
    # One progress step per 2 s: at the reader's pace, or at the 30 reads
    # a second once estimated for TCG where it is unpaced.
    per_run = max(1, exp.reads // (2 * (exp.reads_per_s or 30)))
    progress = progress_mod.Progress(per_run * len(exp.strategies), stream)
    rows, runs = [], {}
    try:
        for strategy in exp.strategies:
            runs[strategy] = r = Run(lab, strategy)
            m = r.run(progress, out)
            rows.append(dict(m, strategy=strategy, lfu=r.lfu))
    finally:
        lab.close()
    out('\n' + tables.table(
        ('strategy', 'guest MiB (available)', 'app MiB', 'guest -> host MiB',
         'from storage MiB', 'host hit ratio', 'swaps', 'paper'),
        [(r['strategy'], '%d (%d)' % (r['balloon_mb'], r['available_mb']),
          '%.0f' % r['app_mb'], '%.0f' % r['guest_read_mb'],
          '%.0f' % r['storage_read_mb'],
          '%.0f%%' % (100 * r['host_hit_ratio']),
          r['lfu']['swaps'] if r['lfu'] else '-',
          {'plain': '0%', 'lfu-paper': '92%'}.get(r['strategy'], '-'))
         for r in rows]))
    found = checks(rows)
    out('\n' + tables.checks(found))
    # Imported here: matplotlib is the 'lab' extra.
    from watcher_cams.lab.sim import plots
    png = plots.hit_ratio_timeline(
        {label: [(p['reads'], p['hit_ratio']) for p in r.series
                 if p['hit_ratio'] is not None] for label, r in runs.items()},
        outdir)
    path = results_mod.write(outdir, {
        'experiment': dataclasses.asdict(exp), 'rows': rows,
        'series': {s: [{'t': round(p['t'], 1), 'reads': p['reads'],
                        'hit_ratio': p['hit_ratio']} for p in r.series]
                   for s, r in runs.items()}}, found)
    out('wrote %s and %s' % (path, png))
    return rows, found
