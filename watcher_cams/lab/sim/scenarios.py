"""The built-in scenarios, and user scenario files, as runnable objects.

A scenario runs its points and strategies (with progress), returns result
rows (see :mod:`~watcher_cams.lab.sim.experiment`) and knows how to sum
them up in one table: the paper's figure, our reproduction of the paper's
method, our method and the oracle.
"""

from watcher_cams.lab.sim import experiment
from watcher_cams.lab.sim import forged_claims
from watcher_cams.lab.sim import lfu
from watcher_cams.lab.sim import llc
from watcher_cams.lab.sim import memory_scenarios as ms
from watcher_cams.lab.sim import random_hosts
from watcher_cams.lab.sim import spec as spec_mod

KB = 1024
vm1 = experiment.vm1_io_reduction
MEMORY_LABELS = ('static', 'sms', 'cams-paper', 'margin-paper', 'utility',
                 'oracle')


def _fmt(value, pattern='%.2f'):
    return '-' if value is None else pattern % value


class MemoryScenario:
    """Points of specs, every strategy run through the simulator."""

    kind = 'memory'
    # The strategies its summary cannot do without (see only()); None:
    # all it runs.
    required = ()

    def __init__(self, name, title, paper_text, scale, points,
                 strategies=MEMORY_LABELS, paper=None):
        self.name, self.title = name, title
        self.paper_text, self.scale = paper_text, scale
        self.points = points
        self.strategies = strategies
        self.paper = paper
        self.runs = {}

    def units(self):
        return len(self.points) * len(self.strategies)

    def run(self, progress, jobs=1):
        """Result rows of every point; ``jobs`` points at once."""
        rows = []
        for point, (point_rows, runs) in zip(
                self.points, experiment.run_memory_points(
                    self.name, self.points, self.strategies, self.paper,
                    progress, jobs)):
            rows += point_rows
            self.runs[point.label] = runs
        return rows

    def summary(self, rows):
        """Per point: disk reads of each strategy relative to static."""
        by = experiment.by_point(rows)
        headers = ['point'] + ['%s GiB' % s for s in self.strategies] + [
            'utility/oracle']
        out = []
        for p in self.points:
            cells = [p.label]
            for s in self.strategies:
                r = by.get((p.label, s))
                cells.append(_fmt(r and r['disk_read_bytes'] / KB ** 3))
            u, o = by.get((p.label, 'utility')), by.get((p.label, 'oracle'))
            cells.append(_fmt(u and o and o['disk_read_bytes'] and
                              u['disk_read_bytes'] / o['disk_read_bytes'],
                              '%.3f'))
            out.append(cells)
        return headers, out


class CamsScenario(MemoryScenario):
    required = None

    def summary(self, rows):
        by = experiment.by_point(rows)
        headers = ['ratio', 'range', 'VM1 red. sms', 'cams', 'utility',
                   'oracle', 'improv. paper', 'cams', 'utility',
                   'disk util/cams', 'util/oracle']
        out = []
        for p in self.points:
            r = {s: by.get((p.label, s)) for s in self.strategies}
            sms = vm1(r['sms'])
            paper = ms.CAMS_PAPER.get((p.params['ratio'],
                                       p.params['range_gb']), {})

            def improvement(s):
                v = vm1(r[s])
                return v / sms if v is not None and sms and sms > 0 else None

            def ratio(a, b):
                if not (r.get(a) and r.get(b) and r[b]['disk_read_bytes']):
                    return None
                return r[a]['disk_read_bytes'] / r[b]['disk_read_bytes']

            out.append([p.params['ratio'], '%d GB' % p.params['range_gb'],
                        _fmt(sms), _fmt(vm1(r['cams-paper'])),
                        _fmt(vm1(r['utility'])), _fmt(vm1(r['oracle'])),
                        _fmt(paper.get('improvement'), '%.1fx'),
                        _fmt(improvement('cams-paper'), '%.1fx'),
                        _fmt(improvement('utility'), '%.1fx'),
                        _fmt(ratio('utility', 'cams-paper'), '%.3f'),
                        _fmt(ratio('utility', 'oracle'), '%.3f')])
        return headers, out


class MarginScenario(MemoryScenario):
    required = None

    def summary(self, rows):
        by = experiment.by_point(rows)
        shown = [s for s in self.strategies if s != 'static']
        headers = ['working set', 'paper'] + ['%s speed' % s for s in shown]
        out = []
        for p in self.points:
            static = by[(p.label, 'static')]
            paper = ms.margin_paper(p.params, 'margin-paper') or {}
            figure = paper.get('read_speed_vs_static')
            if figure is None and paper:
                figure_text = 'up to %.1fx' % paper[
                    'read_speed_vs_static_up_to']
            else:
                figure_text = _fmt(figure, '%.2fx')
            cells = ['%d MB' % p.params['files'], figure_text]
            for s in shown:
                r = by.get((p.label, s))
                cells.append(_fmt(r and r['read_time_s'] and
                                  static['read_time_s'] / r['read_time_s'],
                                  '%.2fx'))
            out.append(cells)
        return headers, out


def cams(points=ms.CAMS_DEFAULT_POINTS, name='cams', duration_s=7200):
    pts = [experiment.Point('r%d-%dg' % (r, g), {'ratio': r, 'range_gb': g},
                            spec_mod.validate(ms.cams_spec(
                                r, g, duration_s, duration_s // 3)))
           for r, g in points]
    return CamsScenario(
        name, 'CAMS: VM1 hot/cold vs VM2 uniform over 1 TB (host 8 GB)',
        'VM1 IO reduction improvement CAMS/SMS: 1.0x -> 5.8x as the rate '
        'ratio goes 1 -> 8 (80 GB); 2.9x -> 5.8x as the range goes 10 -> '
        '80 GB (ratio 8); at 80 GB, ratio 8: VM1 0.44 (CAMS) vs 0.08 (SMS)',
        ms.CAMS_SCALE, pts, paper=ms.cams_paper)


def cams_grid():
    return cams([(r, g) for r in ms.CAMS_RATIOS for g in ms.CAMS_RANGES_GB],
                name='cams-grid')


def balloon_controller(files=ms.MARGIN_FILES, name='balloon-controller'):
    pts = [experiment.Point('%dfiles' % n, {'files': n},
                            spec_mod.validate(ms.margin_spec(n)))
           for n in files]
    return MarginScenario(
        name, 'Balloon Controller: alternating working sets (host 4 GB)',
        'read speed vs static 1536 MB: up to 9.5x for 1,500-3,000 MB '
        'working sets, 14% slower below 1,500 MB, no gain above 6,000 MB',
        ms.MARGIN_SCALE, pts,
        strategies=('static', 'cams-paper', 'margin-paper', 'utility',
                    'oracle', experiment.REPLAY),
        paper=ms.margin_paper)


class RealLabScenario(MemoryScenario):
    required = None

    def summary(self, rows):
        """The hot/cold guest's disk/app reads, and the factor vs static."""
        by = experiment.by_point(rows)
        headers = ['hot share'] + ['%s hot/cold' % s
                                   for s in self.strategies]
        out = []
        for p in self.points:
            static = experiment.hotcold_miss(by.get((p.label, 'static')))
            cells = [p.label]
            for s in self.strategies:
                miss = experiment.hotcold_miss(by.get((p.label, s)))
                cells.append('-' if miss is None else '%.3f (%.2fx)' % (
                    miss, static / miss if miss else float('inf')))
            out.append(cells)
        return headers, out


def real_lab():
    pts = [experiment.Point('%d%%' % round(p * 100), {'hot_prob': p},
                            spec_mod.validate(ms.real_lab_spec(p)))
           for p in ms.REAL_LAB_HOT_PROBS]
    # Through Watcher (watcher-cams-lab cloud): the agent's own sampling.
    pts.append(experiment.Point(
        'cloud 90%', {'hot_prob': 0.9, 'cloud': True},
        spec_mod.validate(ms.real_lab_spec(0.9, cloud=True))))
    return RealLabScenario(
        'real-lab', 'The real-guest lab (watcher-cams-lab guests), simulated',
        'no paper: the lab issue asks the hot/cold guest to read >= 2x less '
        'than under static', ms.REAL_LAB_SCALE, pts,
        strategies=('static', 'cams-paper', 'utility', 'oracle'))


class AllocatorScenario(MemoryScenario):
    """Reads and memory moved per point, against the oracle and the paper."""

    def summary(self, rows):
        by = experiment.by_point(rows)
        headers = (['point'] + ['%s GiB' % s for s in self.strategies]
                   + ['utility/oracle', 'utility/replay', 'utility/paper',
                      'moved util/paper'])
        out = []
        for p in self.points:
            r = {s: by.get((p.label, s)) for s in self.strategies}

            def ratio(a, b, key='disk_read_bytes'):
                if not (r.get(a) and r.get(b) and r[b][key]):
                    return None
                return r[a][key] / r[b][key]
            out.append([p.label] + [
                _fmt(r[s] and r[s]['disk_read_bytes'] / KB ** 3)
                for s in self.strategies] + [
                _fmt(ratio('utility', 'oracle'), '%.3f'),
                _fmt(ratio('utility', experiment.REPLAY), '%.3f'),
                _fmt(ratio('utility', 'cams-paper'), '%.3f'),
                _fmt(ratio('utility', 'cams-paper', 'moved_mb'), '%.2f')])
        totals = ['total'] + [_fmt(sum(
            by[(p.label, s)]['disk_read_bytes'] for p in self.points)
            / KB ** 3, '%.1f') for s in self.strategies] + [''] * 4
        return headers, out + [_mean_row(headers, out), totals]


def _mean_row(headers, rows):
    """The mean of each ratio column of ``rows`` ('-' cells left out)."""
    out = ['mean'] + [''] * (len(headers) - 1)
    for i in range(len(headers) - 4, len(headers)):
        values = [float(r[i]) for r in rows if r[i] != '-']
        out[i] = _fmt(sum(values) / len(values) if values else None,
                      '%.3f')
    return out


def allocator():
    pts = [experiment.Point(name, {'point': name},
                            spec_mod.validate(ms.allocator_spec(name)))
           for name in ms.ALLOCATOR_POINTS]
    return AllocatorScenario(
        'allocator', 'The allocator on hosts nobody tuned it for',
        'no paper: issue 23 asks the default mode to read at most 1.05x '
        'the oracle, no more than paper mode or static, and to move no '
        'more memory than paper mode', ms.ALLOCATOR_SCALE, pts,
        strategies=('static', 'sms', 'cams-paper', 'utility', 'oracle',
                    experiment.REPLAY))


def random_hosts_scenario(seeds=random_hosts.SEEDS):
    """The allocator's checks on the hosts ``seeds`` draw (random_hosts)."""
    pts = [experiment.Point('seed-%d' % seed, {'seed': seed},
                            spec_mod.validate(random_hosts.spec(seed)))
           for seed in seeds]
    return AllocatorScenario(
        'random-hosts', 'The allocator on random hosts (random_hosts.py)',
        'no paper: the allocator checks on hosts drawn at random',
        random_hosts.scale(seeds), pts,
        strategies=('static', 'cams-paper', 'utility', 'oracle',
                    experiment.REPLAY))


def wide_hosts_scenario(seeds=random_hosts.SEEDS):
    """The allocator's checks on the wide hosts ``seeds`` draw.

    random_hosts.wide_spec: a family drawn otherwise than random-hosts,
    so a policy fitted to one family shows it on the other.
    """
    pts = [experiment.Point('seed-%d' % seed, {'seed': seed},
                            spec_mod.validate(random_hosts.wide_spec(seed)))
           for seed in seeds]
    return AllocatorScenario(
        'wide-hosts', 'The allocator on a wider family of random hosts '
        '(random_hosts.wide_spec)',
        'no paper: the allocator checks on hosts drawn at random',
        random_hosts.wide_scale(seeds), pts,
        strategies=('static', 'cams-paper', 'utility', 'oracle',
                    experiment.REPLAY))


class AgentlessScenario(MemoryScenario):
    """Each point with and without guest agents: the share of gain kept."""

    required = ('static', 'utility')

    def summary(self, rows):
        by = experiment.by_point(rows)
        headers = ['point', 'static GiB', 'utility GiB', 'no agent GiB',
                   'oracle GiB', 'gain kept']
        out = []
        reads = []
        for p in self.points[::2]:
            oracle = by.get((p.label, 'oracle'))
            reads.append(experiment.agentless_reads(by, p.label) + (
                oracle and oracle['disk_read_bytes'],))
            out.append([p.label] + [_fmt(v, '%.2f') for v in _gib(
                reads[-1])] + [_fmt(experiment.gain_kept(*reads[-1][:3]),
                                    '%.0f%%')])
        # Over all points: the share a sweep of random hosts keeps.
        sums = [None if None in v else sum(v) for v in zip(*reads)]
        out.append(['all'] + [_fmt(v, '%.1f') for v in _gib(sums)] + [
            _fmt(experiment.gain_kept(*sums[:3]), '%.0f%%')])
        return headers, out


def _gib(values):
    """Bytes in GiB, None kept."""
    return [None if v is None else v / KB ** 3 for v in values]


def agentless(seeds=None):
    """Each point with its guests' agents, then without.

    ``seeds``: random hosts (random_hosts.spec) instead of the built-in
    points, so the share kept is measured on hosts nobody tuned for.
    """
    names, scale = ms.AGENTLESS_POINTS, ms.AGENTLESS_SCALE
    if seeds is not None:
        names = ['seed-%d' % seed for seed in seeds]
        scale = random_hosts.scale(seeds) + ', each with every guest ' \
            'agent, then without any'
    pts = []
    for name in names:
        for agent, suffix in ((True, ''), (False, experiment.NO_AGENT)):
            pts.append(experiment.Point(
                name + suffix, {'point': name, 'agent': agent},
                spec_mod.validate(_agentless_spec(name, agent))))
    return AgentlessScenario(
        'agentless', 'Guests without a guest agent: host-side signals only',
        'no paper: issue 23 asks guests without an agent to keep at least '
        '70% of the default mode\'s gain over static',
        scale, pts, strategies=('static', 'utility', 'oracle'))


def _agentless_spec(name, agent):
    """ms.agentless_spec, or random host ``seed-N``'s likewise."""
    if not name.startswith('seed-'):
        return ms.agentless_spec(name, agent)
    spec = random_hosts.spec(int(name[len('seed-'):]))
    # Its name kept: the guests' UUIDs, which order ties, stay the same.
    spec['guests'] = [dict(g, agent=agent) for g in spec['guests']]
    return spec


class ForgedScenario(MemoryScenario):
    """Each host with its first guest's claims honest, then forged."""

    required = ('static', 'utility')

    def summary(self, rows):
        by = experiment.by_point(rows)
        headers = ['point', 'neighbours GiB honest', 'forged', 'x',
                   'forger MiB honest', 'forged']
        out = []
        for p in self.points[::2]:
            fig = forged_claims.figures(by, p.label,
                                        forged_claims.forger(p.spec))
            out.append([p.label, '%.2f' % fig[0], '%.2f' % fig[1],
                        '%.3f' % (fig[1] / fig[0] if fig[0] else 1.0),
                        '%.0f' % fig[2], '%.0f' % fig[3]])
        return headers, out


def forged(seeds=random_hosts.SEEDS):
    """Random hosts, their first guest a stream that forges its claims."""
    pts = []
    for seed in seeds:
        for lie, suffix in ((False, ''), (True, forged_claims.FORGED)):
            pts.append(experiment.Point(
                'seed-%d%s' % (seed, suffix), {'seed': seed, 'forged': lie},
                spec_mod.validate(forged_claims.spec(seed, lie))))
    return ForgedScenario(
        'forged-claims', 'A tenant that forges its counters '
        '(forged_claims.py)',
        'no paper: issue 23 asks that a guest\'s claims never move memory '
        'beyond what host-measured reads justify',
        random_hosts.scale(seeds) + ', each with its first guest a stream '
        'whose counters are honest, then forged', pts,
        strategies=('static', 'utility'))


def ksm():
    pts = [experiment.Point(t, {'tenancy': t},
                            spec_mod.validate(ms.ksm_spec(t)))
           for t in ('single', 'multi')]
    return MemoryScenario(
        'ksm', 'KSM savings handed back to guests (3 guests, 2 GB base)',
        'KSM alone: +15% (single tenant) / +22% (multi tenant) throughput; '
        'handing the savings back with balloons: a large further gain on '
        'Cassandra; enlarging guests past host RAM loses',
        ms.KSM_SCALE, pts, strategies=('static', 'ksm-paper', 'utility',
                                       'oracle'), paper=ms.ksm_paper)


class LfuScenario:
    kind = 'lfu'
    name = 'lfu'
    title = 'LFU Cache FS: guest cache over the host page cache'
    paper_text = 'host cache hit ratio: 0% (normal guest cache) -> 92% ' \
        '(LFU Cache FS)'
    scale = lfu.SCALE
    strategies = lfu.STRATEGIES
    POINTS = (('uniform-2.6', 'uniform', 'lru'),
              ('uniform-linux6', 'uniform', 'linux'),
              ('hot-cold-linux6', 'hot_cold', 'linux'))

    def units(self):
        return len(self.POINTS) * len(self.strategies)

    def run(self, progress, jobs=1):
        rows = []
        for label, pattern, kernel in self.POINTS:
            s = lfu.spec(pattern, kernel)
            accesses = lfu.trace(s)
            for strategy in self.strategies:
                r = lfu.run(s, strategy, accesses)
                paper = None
                if label == 'uniform-2.6' and strategy in ('static',
                                                           'lfu-paper'):
                    paper = {'host_hit_ratio':
                             0.0 if strategy == 'static' else 0.92}
                rows.append(experiment.row(
                    self.name, label, strategy, r['app_kb'], r['disk_kb'],
                    paper, host_hit_ratio=round(r['host_hit_ratio'], 4),
                    guest_hit_ratio=round(
                        1 - r['guest_miss_kb'] / r['app_kb'], 4),
                    swaps=r['swaps']))
                progress.step('lfu %s %s' % (label, strategy))
        return rows

    def summary(self, rows):
        by = experiment.by_point(rows)
        headers = ['point', 'paper'] + ['%s host hit' % s
                                        for s in self.strategies]
        out = []
        for label, _, _ in self.POINTS:
            cells = [label, '0% -> 92%' if label == 'uniform-2.6' else '-']
            for s in self.strategies:
                cells.append('%.0f%%' % (100 * by[(label, s)]
                                         ['host_hit_ratio']))
            out.append(cells)
        return headers, out


class LlcScenario:
    kind = 'llc'
    name = 'llc'
    title = 'Sharing-aware vCPU placement on last-level caches'
    paper_text = 'micro benchmark (4 VMs, 15 MB random reads, 20 MB LLC): ' \
        'right vs wrong placement 2.1x'
    scale = llc.SCALE % (120000, llc.DRAM_COST)
    strategies = llc.STRATEGIES
    POINTS = ('paper-4vm', '6vm-3llc')

    def units(self):
        return len(self.POINTS) * len(self.strategies)

    def run(self, progress, jobs=1):
        rows = []
        for label in self.POINTS:
            s = llc.spec(label)
            base = None
            for strategy in self.strategies:
                placement = llc.placement_for(s, strategy)
                counts = llc.measure(s, placement)
                cost = llc.cost(counts)
                base = base or cost
                app = sum(h + m for h, m in counts.values()) * llc.PAGE_KB
                dram = sum(m for _, m in counts.values()) * llc.PAGE_KB
                paper = ({'speed_vs_wrong_placement': 2.1}
                         if label == 'paper-4vm'
                         and strategy == 'pinning-paper' else None)
                rows.append(experiment.row(
                    self.name, label, strategy, app, dram, paper,
                    placement=placement,
                    speed_vs_static=round(base / cost, 3)))
                progress.step('llc %s %s' % (label, strategy))
        return rows

    def summary(self, rows):
        by = experiment.by_point(rows)
        headers = ['point', 'paper'] + ['%s speed' % s
                                        for s in self.strategies]
        return headers, [
            [label, '2.1x' if label == 'paper-4vm' else '-']
            + ['%.2fx' % by[(label, s)]['speed_vs_static']
               for s in self.strategies]
            for label in self.POINTS]


def from_file(path):
    spec = spec_mod.load_file(path)
    strategies = tuple(s for s in spec_mod.LABELS
                       if s in spec['strategies'])
    return MemoryScenario(
        spec['name'], 'scenario file %s' % path, '(none)',
        '1 block = %d KiB; as written in the file' % spec['block_kb'],
        [experiment.Point('default', {}, spec)], strategies=strategies)


BUILT_IN = {
    'cams': cams,
    'cams-grid': cams_grid,
    'balloon-controller': balloon_controller,
    'ksm': ksm,
    'lfu': LfuScenario,
    'llc': LlcScenario,
    'real-lab': real_lab,
    'allocator': allocator,
    'random-hosts': random_hosts_scenario,
    'wide-hosts': wide_hosts_scenario,
    'agentless': agentless,
    'forged-claims': forged,
}
GROUPS = {
    'default': ('cams',),
    'paper-grid': ('cams-grid', 'balloon-controller', 'ksm', 'lfu', 'llc'),
}


# The scenarios whose hosts --seeds may draw instead (random_hosts).
SEEDED = ('random-hosts', 'wide-hosts', 'agentless', 'forged-claims')


def named(name, seeds=None, strategies=None):
    """The scenarios a ``--scenario`` name stands for.

    ``seeds``: the random hosts a SEEDED scenario runs (None: its
    built-in points); for another scenario, an error. ``strategies``: run
    only these of each scenario's (None: all; see :func:`only`).
    """
    if seeds is not None:
        if name not in SEEDED:
            raise spec_mod.ScenarioError(
                'seeds choose the hosts of %s only, not of %r'
                % (', '.join(SEEDED), name))
        chosen = [BUILT_IN[name](seeds)]
    elif name in GROUPS:
        chosen = [BUILT_IN[n]() for n in GROUPS[name]]
    elif name in BUILT_IN:
        chosen = [BUILT_IN[name]()]
    else:
        raise spec_mod.ScenarioError(
            'unknown scenario %r; built-in: %s' % (
                name, ', '.join(sorted(set(BUILT_IN) | set(GROUPS)))))
    return chosen if strategies is None else only(chosen, strategies)


def only(chosen, strategies):
    """``chosen`` memory scenarios, each running only ``strategies``.

    What a sweep over hundreds of random hosts needs without the oracle
    (seconds per host). The targets whose strategies did not run are not
    checked. Raises ScenarioError where that leaves out a strategy a
    scenario's summary needs (its ``required``), or all of them.
    """
    for s in chosen:
        kept = tuple(x for x in s.strategies if x in strategies)
        needed = getattr(s, 'required', None)
        if needed is None:
            needed = s.strategies
        if not kept or not set(needed) <= set(kept):
            raise spec_mod.ScenarioError(
                'scenario %s runs %s and needs %s, not only %s' % (
                    s.name, ', '.join(s.strategies),
                    ', '.join(needed) or 'one of them',
                    ', '.join(strategies)))
        s.strategies = kept
    return chosen
