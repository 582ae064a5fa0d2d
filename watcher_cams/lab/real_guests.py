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
"""

import dataclasses
import os
import tempfile
import time

import libvirt
from oslo_log import log

from watcher_cams.agent.collectors import host as host_collector
from watcher_cams.agent import manager as agent_manager
from watcher_cams import conf as cams_conf
from watcher_cams.lab import guests as lab_guests
from watcher_cams.lab import progress as progress_mod
from watcher_cams.lab import results as results_mod
from watcher_cams.lab import runner
from watcher_cams.lab.sim import experiment
from watcher_cams.lab import tables

LOG = log.getLogger(__name__)
PREFIX = 'cams-lab-'
HOST = 'cams-lab'
MB = 1 << 20
READERS = ('hotcold', 'uniform')
STATUS = '/tmp/reader.status'
# label -> (strategy, audit parameters); static runs no strategy.
STRATEGIES = {
    'static': None,
    'utility': ('cache_aware_balloon', {'mode': 'utility'}),
    'cams-paper': ('cache_aware_balloon', {'mode': 'paper'}),
    'margin-paper': ('margin_balloon', {}),
}
# The target: the hot/cold guest reads at least this many times
# less from disk than under static.
TARGET_REDUCTION = 2.0


class LabError(Exception):
    """The lab cannot run as asked (bad parameters, missing image...)."""


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
        names = [g.name for g in self.guests]
        if len(names) < 2 or len(set(names)) != len(names):
            raise LabError('need at least two guests with distinct names')
        for g in self.guests:
            if g.reader not in READERS:
                raise LabError('guest %s: reader must be one of %s'
                               % (g.name, ', '.join(READERS)))
            if not 256 <= g.boot_mb <= g.max_mb:
                raise LabError('guest %s: need 256 <= boot_mb (%d) <= '
                               'max_mb (%d)' % (g.name, g.boot_mb, g.max_mb))
        if self.strategies[:1] != ('static',) or any(
                s not in STRATEGIES for s in self.strategies):
            raise LabError('strategies must start with static and be among '
                           '%s' % ', '.join(STRATEGIES))
        if self.data_mb * 1024 < 64 * self.block_kib or self.block_kib < 4:
            raise LabError('the data file must hold at least 64 blocks of '
                           'at least 4 KiB')
        if not 0 < self.hot_prob < 1:
            raise LabError('hot_prob must be within (0, 1)')
        if self.reads_per_s <= 0 or self.cycle_s < 5:
            raise LabError('need reads_per_s > 0 and cycle_s >= 5')
        if not 0 <= self.measure_from_s < self.duration_s:
            raise LabError('need 0 <= measure_from_s < duration_s')
        if self.domain_type not in ('qemu', 'kvm'):
            raise LabError('domain_type must be qemu or kvm')

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


def parse_status(text):
    """The reader's status line: (reads, bytes, seconds, done)."""
    fields = text.split()
    if len(fields) != 4:
        raise ValueError('reader status %r is not "reads bytes seconds '
                         'done"' % text[:80])
    return (int(fields[0]), int(fields[1]), float(fields[2]),
            fields[3] == '1')


def reader_command(spec, exp, seed, path='/lab/data'):
    """The guest's shell command that starts its reader over ``path``."""
    return ('cams-reader %s %s -b %d -n %d -r %g -P %g -s %d -o %s '
            '</dev/null >/tmp/reader.log 2>&1 &'
            % (spec.reader, path, exp.block_kib, exp.reads, exp.reads_per_s,
               exp.hot_prob, seed, STATUS))


class GuestRun:
    """One booted lab guest and its reader."""

    def __init__(self, dom, spec, data_path='/lab/data', data_disk='vdb'):
        self.dom = dom
        self.spec = spec
        self.uuid = dom.UUIDString()
        self.data_path = data_path
        self.data_disk = data_disk
        self.last_status = (0, 0, 0.0, False)

    def start_reader(self, exp, seed):
        code, _ = lab_guests.guest_exec(
            self.dom, 'rm -f %s; %s' % (STATUS, reader_command(
                self.spec, exp, seed, self.data_path)), timeout=30)
        if code != 0:
            raise LabError('guest %s: the reader did not start'
                           % self.spec.name)

    def status(self):
        """The reader's (reads, bytes, seconds, done).

        A guest agent too busy to answer in time gives the last status
        again; the next cycle asks anew.
        """
        try:
            code, out = lab_guests.guest_exec(self.dom, 'cat %s' % STATUS,
                                              timeout=30)
        except (libvirt.libvirtError, TimeoutError) as exc:
            LOG.warning('guest %s: reader status not read (%s)',
                        self.spec.name, exc)
            return self.last_status
        if code != 0:
            _, log = lab_guests.guest_exec(self.dom, 'cat /tmp/reader.log')
            raise LabError('guest %s: no reader status (%s)'
                           % (self.spec.name, log.strip()[:200]))
        self.last_status = parse_status(out)
        return self.last_status

    def disk_read_bytes(self):
        return self.dom.blockStats(self.data_disk)[1]


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
    a strategy runs: here in this process (:class:`LocalLab`), or through
    Nova and Watcher (:class:`watcher_cams.lab.cloud.CloudLab`).
    """

    def __init__(self, exp, out=print, progress=None):
        self.exp = exp
        self.out = out
        self.progress = progress

    def boot(self):
        """Fresh guests at their boot sizes, agents answering: GuestRuns."""
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
        guests = self.boot()
        run = Run(label)
        try:
            self.begin(label, guests)
            for seed, g in enumerate(guests, 1):
                g.start_reader(exp, seed)
            finished = self._sample_until_done(label, guests, run)
        finally:
            self.end(label, guests, run)
        if not finished:
            raise LabError('%s: the readers did not finish in %.0f s'
                           % (label, run.series[-1]['t']))
        return run

    def _sample_until_done(self, label, guests, run):
        exp = self.exp
        start = time.monotonic()
        run.started = time.time()
        deadline = start + 2 * exp.duration_s + 300
        number = 0
        while True:
            samples = self.samples(guests)
            t = time.monotonic() - start
            point = {'t': round(t, 1), 'size_mb': {}, 'disk_mb': {},
                     'app_mb': {}, 'cached_mb': {}, 'counters': {},
                     'done': {}}
            for g in guests:
                _, nbytes, _, done = g.status()
                point['size_mb'][g.spec.name] = g.dom.info()[2] // 1024
                point['disk_mb'][g.spec.name] = g.disk_read_bytes() / MB
                point['app_mb'][g.spec.name] = nbytes / MB
                counters = guest_counters(samples.get(g.uuid))
                point['counters'][g.spec.name] = counters
                point['cached_mb'][g.spec.name] = (
                    counters['cached_mb'] if counters else None)
                point['done'][g.spec.name] = done
            run.series.append(point)
            if self.progress:
                self.progress.step('%s %4.0fs %s' % (label, t, '  '.join(
                    '%s %d MiB' % kv for kv in point['size_mb'].items())))
            if all(point['done'].values()):
                return True
            if time.monotonic() > deadline:
                return False
            self.cycle(label, guests, run, t, number)
            number += 1
            time.sleep(max(0.0, start + number * exp.cycle_s
                           - time.monotonic()))


class LocalLab(Lab):
    """Guests booted on libvirt here; agent and strategies in-process."""

    def __init__(self, exp, image_dir, uri='qemu:///system', out=print,
                 progress=None):
        super().__init__(exp, out, progress)
        self.uri = uri
        try:
            self.image = lab_guests.GuestImage(image_dir)
            self.image.lab_data(exp.data_mb)
        except FileNotFoundError as exc:
            raise LabError(str(exc))
        # libvirt prints every error on stderr by default, and waiting for
        # a booting guest's agent is a stream of them; they are handled.
        libvirt.registerErrorHandler(lambda *args: None, None)
        self.conn = libvirt.open(uri)
        self.workdir = tempfile.mkdtemp(prefix=PREFIX)
        os.chmod(self.workdir, 0o755)  # QEMU runs as libvirt-qemu
        self.agent = None
        self.report = None

    def close(self):
        lab_guests.destroy_all(self.conn, PREFIX)

    def boot(self):
        lab_guests.destroy_all(self.conn, PREFIX)
        guests = [GuestRun(lab_guests.boot(
            self.conn, PREFIX + g.name, self.image, self.workdir,
            memory_mb=g.max_mb, current_mb=g.boot_mb,
            dtype=self.exp.domain_type, lab_data_mb=self.exp.data_mb), g)
            for g in self.exp.guests]
        for g in guests:
            lab_guests.wait_for_agent(g.dom, timeout=300)
            # Every run starts from the same sizes, static included.
            lab_guests.wait_for_balloon(g.dom, g.spec.boot_mb, timeout=300)
        return guests

    def begin(self, label, guests):
        # The guests may hold the lab's budget and whatever else runs on
        # this host now, nothing more: the capacity guard sees exactly the
        # memory the static run has.
        others = sum(d.info()[2] // 1024 for d in self.conn.listAllDomains(
                         libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)
                     if not d.name().startswith(PREFIX))
        total_mb = host_collector.meminfo_kb()['MemTotal'] // 1024
        conf = cams_conf.isolated(
            host=HOST, connection_uri=self.uri,
            state_dir=tempfile.mkdtemp(prefix=PREFIX + 'state-'),
            reserved_host_memory_mb=max(
                0, total_mb - self.exp.budget_mb - others),
            min_rate_interval=max(1, self.exp.cycle_s // 3),
            collect_sharing=False)
        self.agent = runner.LocalAgent(agent_manager.AgentManager(conf), HOST)

    def samples(self, guests):
        self.report = self.agent.get_report(HOST)
        return {g['uuid']: g.get('sample') for g in self.report['guests']}

    def cycle(self, label, guests, run, t, number):
        if STRATEGIES[label] is None:
            return
        name, params = STRATEGIES[label]
        model = runner.compute_model([self.report],
                                     only={g.uuid for g in guests})
        _, solution = runner.run(name, model, self.agent, params)
        for spec, outcome in runner.apply_actions(solution.actions,
                                                  self.agent):
            p = spec['input_parameters']
            run.actions.append({
                't': round(t, 1), 'cycle': number,
                'action': spec['action_type'],
                'guest': next(g.spec.name for g in guests
                              if g.uuid == p['resource_id']),
                'from_mb': p.get('current_mb'),
                'to_mb': p.get('target_mb'), 'outcome': outcome,
                'reason': p.get('reason', '')})

    def end(self, label, guests, run):
        self.close()


def _window(run, name, key, since):
    """Growth of series ``key`` of guest ``name`` from ``since`` s on."""
    first = next(p for p in run.series if p['t'] >= since)
    return run.series[-1][key][name] - first[key][name]


def rows(exp, runs, scenario='guests'):
    """results.json rows: whole-run and measured-window figures."""
    out = []
    for label, run in runs.items():
        guests = {}
        for g in exp.guests:
            app = run.series[-1]['app_mb'][g.name]
            disk = run.series[-1]['disk_mb'][g.name]
            w_app = _window(run, g.name, 'app_mb', exp.measure_from_s)
            w_disk = _window(run, g.name, 'disk_mb', exp.measure_from_s)
            guests[g.name] = dict(
                experiment.guest_figures(app * 1024, disk * 1024),
                reader=g.reader, final_mb=run.series[-1]['size_mb'][g.name],
                window_app_read_bytes=int(w_app * MB),
                window_disk_read_bytes=int(w_disk * MB),
                window_miss_ratio=round(w_disk / w_app, 4) if w_app else 0.0)
        app_kb = sum(v['app_read_bytes'] for v in guests.values()) / 1024
        disk_kb = sum(v['disk_read_bytes'] for v in guests.values()) / 1024
        out.append(experiment.row(
            scenario, exp.point, label, app_kb, disk_kb, None, guests=guests,
            seconds=run.series[-1]['t'],
            actions=sum(1 for a in run.actions
                        if a['outcome'] == 'SUCCEEDED')))
    return out


def checks(exp, result_rows):
    """The target: the hot/cold guests read >= 2x less than under static."""
    by = {r['strategy']: r for r in result_rows}
    found = []
    for label in exp.strategies[1:]:
        for g in exp.guests:
            if g.reader != 'hotcold':
                continue
            static = by['static']['guests'][g.name]['window_miss_ratio']
            ours = by[label]['guests'][g.name]['window_miss_ratio']
            factor = static / ours if ours else float('inf')
            found.append((
                '%s: %s reads >= %.0fx less than static' % (
                    label, g.name, TARGET_REDUCTION),
                factor >= TARGET_REDUCTION,
                'disk/app reads from %d s on: static %.3f, %s %.3f (%.2fx)'
                % (exp.measure_from_s, static, label, ours, factor)))
    return found


def summary(exp, result_rows):
    headers = ('strategy', 'guest', 'reader', 'final MiB', 'app MiB',
               'disk MiB', 'miss ratio', 'window miss', 'vs static')
    by = {r['strategy']: r for r in result_rows}
    table_rows = []
    for r in result_rows:
        for name, g in r['guests'].items():
            static = by['static']['guests'][name]['window_miss_ratio']
            table_rows.append((
                r['strategy'], name, g['reader'], g['final_mb'],
                g['app_read_bytes'] // MB, g['disk_read_bytes'] // MB,
                '%.3f' % (1 - g['io_reduction']),
                '%.3f' % g['window_miss_ratio'],
                '%.2fx' % (static / g['window_miss_ratio'])
                if g['window_miss_ratio'] else '-'))
    return tables.table(headers, table_rows)


def _print_tables(exp, scenario, result_rows, actions, found, out):
    """The summary, the actions the strategies ran and the targets."""
    out('\n== %s: %s' % (scenario, exp.point))
    out(summary(exp, result_rows))
    if actions:
        out('\n== actions')
        out(tables.table(('strategy', 't (s)', 'guest', 'MiB', 'outcome'), [
            (a['strategy'], a['t'], a['guest'],
             '%s -> %s' % (a['from_mb'], a['to_mb']), a['outcome'])
            for a in actions]))
    out('\n== targets')
    out(tables.checks(found))


def _plots(scenario, result_rows, runs, outdir):
    """The PNG plots: reads per strategy, memory, disk and cache over time.

    Imported here: matplotlib is the 'lab' extra, and the tempest plugin
    uses this module's guests where it is not installed.
    """
    from watcher_cams.lab.sim import plots
    return [plots.reads_bars(scenario, result_rows, outdir),
            plots.timeline(scenario, 'lab', runs, outdir),
            plots.timeline(scenario, 'lab', runs, outdir, key='disk_mb',
                           what='MiB read from disk', suffix='disk'),
            plots.timeline(scenario, 'lab', runs, outdir, key='cached_mb',
                           what='page cache (Cached, MiB)', suffix='cache')]


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
    result_rows = rows(exp, runs, scenario)
    found = checks(exp, result_rows)
    actions = [dict(a, strategy=label) for label, r in runs.items()
               for a in r.actions]
    _print_tables(exp, scenario, result_rows, actions, found, out)
    pngs = _plots(scenario, result_rows, runs, outdir)
    path = results_mod.write(outdir, {
        'run': scenario, 'seconds': round(time.monotonic() - started, 1),
        'experiment': dataclasses.asdict(exp), 'rows': result_rows,
        'series': {label: r.series for label, r in runs.items()},
        'actions': actions}, found)
    out('\nwrote %s and %d plots in %s' % (
        os.path.basename(path), len([p for p in pngs if p]), outdir))
    return result_rows, found
