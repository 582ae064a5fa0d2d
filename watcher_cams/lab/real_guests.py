"""``watcher-cams-lab guests``: the lab on real guests.

Boots tiny guests (TCG by default) with the lab's data disk
(``tools/guest-image.sh --lab-data MB``), starts one reader in each through
the guest agent (``cams-reader``: 64 KiB blocks of a file larger than the
guests' memory, hot/cold 80/20 or uniform, paced so that every run does the
same reads in the same time) and runs audit cycles: the agent (in this
process, on the real guests) reports, the real Watcher strategy plans from
its report, and the real Watcher actions resize balloons through the
agent. Each strategy runs on freshly booted guests; ``static`` keeps the
boot sizes, the same total memory the strategies share out.

Per guest and run: the bytes the reader read, the bytes QEMU read from the
data disk (block stats), cache counters and memory over time.

This module holds the experiment (its spec, the readers, one run's
sampling loop in :class:`Lab` and :func:`run` over every strategy). Where
the guests run is a :class:`Lab` subclass:
:class:`watcher_cams.lab.local_lab.LocalLab` on this host,
:class:`watcher_cams.lab.cloud.CloudLab` through Nova and Watcher. The
figures, tables and plots are :mod:`watcher_cams.lab.guest_results`; what
every real-guest lab shares is :mod:`watcher_cams.lab.core`.
"""

import dataclasses
import os
import time

from watcher_cams.lab import core
from watcher_cams.lab import guest_results
from watcher_cams.lab import progress as progress_mod
from watcher_cams.lab import results as results_mod

READERS = ('hotcold', 'uniform')
# label -> (strategy, audit parameters); static runs no strategy.
STRATEGIES = {
    'static': None,
    'utility': ('cache_aware_balloon', {'mode': 'utility'}),
    'cams-paper': ('cache_aware_balloon', {'mode': 'paper'}),
    'margin-paper': ('margin_balloon', {}),
    # The default mode on guests booted without libvirt's guest-agent
    # channel: the agent manages them from host-side signals alone.
    'utility-agentless': ('cache_aware_balloon', {'mode': 'utility'}),
}
AGENTLESS = ('utility-agentless',)


@dataclasses.dataclass(frozen=True)
class GuestSpec:
    name: str
    reader: str
    max_mb: int
    boot_mb: int


@dataclasses.dataclass(frozen=True)
class Experiment:
    """What one ``guests`` run does; the defaults are the built-in lab."""

    # Sizes: a guest's page cache is about its size - 170 MiB here, so at
    # the static 640 MiB the hot/cold guest holds about 3/4 of its hot set
    # (614 MiB, a fifth of the data file); given the random guest's memory
    # down to its floor it holds all of it. With 80/20 reads even that
    # split (the simulator's oracle: 938/298 MiB) reads only 1.85x less
    # than static, since a fifth of the reads go to the cold data; with
    # 90/10 the oracle reads 3x less, so a 2x target can be met.
    guests: tuple = (GuestSpec('hotcold', 'hotcold', 1280, 640),
                     GuestSpec('random', 'uniform', 1280, 640))
    data_mb: int = 3072
    block_kib: int = 64
    reads_per_s: float = 100.0
    # Share of the hot/cold reader's reads that go to the hot fifth.
    hot_prob: float = 0.9
    duration_s: int = 600
    cycle_s: int = 30
    measure_from_s: int = 360
    strategies: tuple = ('static', 'cams-paper', 'utility')
    domain_type: str = 'qemu'

    def __post_init__(self):
        problem = self._problem()
        if problem:
            raise core.LabError(problem)

    def _problem(self):
        """Why this experiment cannot run as asked, or None."""
        names = [g.name for g in self.guests]
        if len(names) < 2 or len(set(names)) != len(names):
            return 'need at least two guests with distinct names'
        for g in self.guests:
            if g.reader not in READERS:
                return ('guest %s: reader must be one of %s'
                        % (g.name, ', '.join(READERS)))
            if not 256 <= g.boot_mb <= g.max_mb:
                return ('guest %s: need 256 <= boot_mb (%d) <= max_mb (%d)'
                        % (g.name, g.boot_mb, g.max_mb))
        if self.strategies[:1] != ('static',) or any(
                s not in STRATEGIES for s in self.strategies):
            return ('strategies must start with static and be among %s'
                    % ', '.join(STRATEGIES))
        if self.data_mb * 1024 < 64 * self.block_kib or self.block_kib < 4:
            return ('the data file must hold at least 64 blocks of at least '
                    '4 KiB')
        if not 0 < self.hot_prob < 1:
            return 'hot_prob must be within (0, 1)'
        if self.reads_per_s <= 0 or self.cycle_s < 5:
            return 'need reads_per_s > 0 and cycle_s >= 5'
        if not 0 <= self.measure_from_s < self.duration_s:
            return 'need 0 <= measure_from_s < duration_s'
        if self.domain_type not in ('qemu', 'kvm'):
            return 'domain_type must be qemu or kvm'
        return None

    @property
    def budget_mb(self):
        return sum(g.boot_mb for g in self.guests)

    @property
    def reads(self):
        return int(self.reads_per_s * self.duration_s)

    @property
    def point(self):
        return '%d guests, %d MiB' % (len(self.guests), self.budget_mb)


@dataclasses.dataclass
class Run:
    """One strategy's run: samples per cycle and the actions applied."""

    label: str
    series: list = dataclasses.field(default_factory=list)
    actions: list = dataclasses.field(default_factory=list)
    # Wall-clock time of the first sample (actions elsewhere carry dates).
    started: float = 0.0


def reader_command(spec, exp, seed, path='/lab/data'):
    """The guest's shell command that starts its reader over ``path``."""
    return core.in_background(core.reader_command(
        spec.reader, path, (exp.block_kib, exp.reads, exp.reads_per_s),
        seed, exp.hot_prob))


def start_reader(guest, exp, seed):
    """Start the reader ``guest.spec`` says in ``guest`` (a core.GuestRun)."""
    guest.start(reader_command(guest.spec, exp, seed, guest.data_path))


def guest_counters(sample):
    """Cache counters of one guest's sample (report format), or None."""
    if not sample:
        return None
    mem, vm = sample['meminfo'], sample['vmstat']
    return {'cached_mb': mem.get('Cached', 0) // 1024,
            'active_file_mb': mem.get('Active(file)', 0) // 1024,
            'inactive_file_mb': mem.get('Inactive(file)', 0) // 1024,
            'refaults': vm.get('workingset_refault_file', 0),
            'activations': vm.get('workingset_activate_file', 0)}


class Lab:
    """Runs readers in fresh guests and samples them, one strategy a run.

    Subclasses say how guests boot, where their counters come from and how
    a strategy runs: here in this process
    (:class:`watcher_cams.lab.local_lab.LocalLab`), or through
    Nova and Watcher (:class:`watcher_cams.lab.cloud.CloudLab`).
    """

    def __init__(self, exp, out=print, progress=None):
        self.exp = exp
        self.out = out
        self.progress = progress

    def boot(self, agent=True):
        """Fresh guests at their boot sizes, agents answering.

        Without ``agent``, libvirt has no guest-agent channel for them (the
        lab reaches them through its own, lab_guests.LAB_CHANNEL).

        A list of :class:`watcher_cams.lab.core.GuestRun` with their spec.
        """
        raise NotImplementedError

    def begin(self, label, guests):
        """Start strategy ``label`` on ``guests`` (static: nothing)."""

    def samples(self, guests):
        """{uuid: sample in report format, or None} for this cycle."""
        raise NotImplementedError

    def cycle(self, label, guests, run, t, number):
        """What runs each cycle after sampling (a local audit)."""

    def end(self, label, guests, run):
        """Stop the strategy and clean up after run ``label``."""

    def close(self):
        """Remove whatever the lab still holds."""

    def run(self, label):
        """Boot fresh guests, run ``label`` for the duration: a Run."""
        exp = self.exp
        guests = self.boot(agent=label not in AGENTLESS)
        run = Run(label)
        try:
            self.begin(label, guests)
            for seed, g in enumerate(guests, 1):
                start_reader(g, exp, seed)
            finished = self._sample_until_done(label, guests, run)
        finally:
            self.end(label, guests, run)
        if not finished:
            raise core.LabError('%s: the readers did not finish in %.0f s'
                                % (label, run.series[-1]['t']))
        return run

    def _sample_until_done(self, label, guests, run):
        schedule = core.Schedule(self.exp.cycle_s,
                                 2 * self.exp.duration_s + 300)
        run.started = time.time()
        while True:
            point = self._point(guests, schedule.elapsed())
            run.series.append(point)
            if self.progress:
                self.progress.step('%s %4.0fs %s' % (
                    label, point['t'], '  '.join(
                        '%s %d MiB' % kv for kv in point['size_mb'].items())))
            if all(point['done'].values()):
                return True
            if schedule.expired():
                return False
            self.cycle(label, guests, run, point['t'], schedule.ticks)
            schedule.wait()

    def _point(self, guests, t):
        """One sample of every guest: sizes, reads, cache counters."""
        samples = self.samples(guests)
        point = {'t': round(t, 1), 'size_mb': {}, 'disk_mb': {},
                 'app_mb': {}, 'cached_mb': {}, 'counters': {}, 'done': {}}
        for g in guests:
            _, nbytes, _, done = g.status()
            point['size_mb'][g.name] = g.dom.info()[2] // 1024
            point['disk_mb'][g.name] = g.disk_read_bytes() / core.MB
            point['app_mb'][g.name] = nbytes / core.MB
            counters = guest_counters(samples.get(g.uuid))
            point['counters'][g.name] = counters
            point['cached_mb'][g.name] = (
                counters['cached_mb'] if counters else None)
            point['done'][g.name] = done
        return point


def run(exp, lab, outdir, out=print, stream=None, where=None,
        scenario='guests'):
    """Run every strategy of ``exp`` in ``lab``; write results.json, plots.

    ``where`` says in the first line where the guests run (default: their
    domain type on this host's libvirt). Returns (rows, checks).
    """
    os.makedirs(outdir, exist_ok=True)
    cycles = exp.duration_s // exp.cycle_s + 1
    lab.progress = progress_mod.Progress(cycles * len(exp.strategies), stream)
    out('real-guest lab: %s, %s guests, %d reads of %d KiB per guest at '
        '%g/s (hot/cold: %.0f%% of them on a fifth of the data), audit '
        'every %d s, measured from %d s' % (
            exp.point, where or exp.domain_type, exp.reads, exp.block_kib,
            exp.reads_per_s, exp.hot_prob * 100, exp.cycle_s,
            exp.measure_from_s))
    started = time.monotonic()
    runs = {}
    try:
        for label in exp.strategies:
            runs[label] = lab.run(label)
    finally:
        lab.close()
    result_rows = guest_results.rows(exp, runs, scenario)
    actions = [dict(a, strategy=label) for label, r in runs.items()
               for a in r.actions]
    found = guest_results.checks(exp, result_rows, actions)
    guest_results.print_tables(exp, scenario, result_rows, actions, found,
                               out)
    pngs = guest_results.plots(scenario, result_rows, runs, outdir)
    path = results_mod.write(outdir, {
        'run': scenario, 'seconds': round(time.monotonic() - started, 1),
        'experiment': dataclasses.asdict(exp), 'rows': result_rows,
        'series': {label: r.series for label, r in runs.items()},
        'actions': actions}, found)
    out('\nwrote %s and %d plots in %s' % (
        os.path.basename(path), len([p for p in pngs if p]), outdir))
    return result_rows, found
