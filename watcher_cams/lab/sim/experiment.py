"""Run scenarios point by point and strategy by strategy; rows out.

A row is one (scenario, point, strategy) with application and disk reads,
the IO reduction (1 - disk / application reads, the CAMS paper's metric),
per-guest figures and what the paper reports for it. Runs of the memory
scenarios are kept (``runs``) for the timeline plots.
"""

from concurrent import futures
import dataclasses

from watcher_cams.lab.sim import oracle
from watcher_cams.lab.sim import simulate

KB = 1024
MEMORY_MB_S = 2000.0  # page-cache read speed for the read-time model


@dataclasses.dataclass
class Point:
    label: str
    params: dict
    spec: dict


def guest_figures(app_kb, disk_kb):
    return {'app_read_bytes': int(app_kb * KB),
            'disk_read_bytes': int(disk_kb * KB),
            'io_reduction': round(1 - disk_kb / app_kb, 4) if app_kb else 0.0}


def read_time_s(app_kb, disk_kb, disk_mb_s):
    """Time to serve the reads: memory speed for all, disk for misses."""
    return app_kb / KB / MEMORY_MB_S + disk_kb / KB / disk_mb_s


def row(scenario, point, strategy, app_kb, disk_kb, paper, **extra):
    """One results row; ``extra`` adds scenario-specific figures."""
    out = {'scenario': scenario, 'point': point, 'strategy': strategy}
    out.update(guest_figures(app_kb, disk_kb))
    out['paper'] = paper
    out.update(extra)
    return out


def by_point(rows, scenario=None):
    """Rows keyed by (point, strategy), of one scenario if given."""
    return {(r['point'], r['strategy']): r for r in rows
            if scenario is None or r['scenario'] == scenario}


def vm1_io_reduction(r):
    """VM1's IO reduction in a row of the CAMS scenarios (None: no row)."""
    return r['guests']['vm1']['io_reduction'] if r else None


def hotcold_miss(r):
    """The real-lab hot/cold guest's disk over its reads (None: no row)."""
    return 1 - r['guests']['hotcold']['io_reduction'] if r else None


def workload(guest_spec):
    """What a guest runs: its phases' patterns in order ('idle, then scan').

    Kept in each guest's figures, so that what a strategy reads more or
    less than another can be summed by the kind of guest that read it
    (compare.by_workload) without the scenario at hand.
    """
    return ', then '.join(p['pattern'] for p in guest_spec['phases'])


def memory_row(scenario, point, label, app, disk, paper, sizes=None,
               **extra):
    """A results row from per-guest application and disk KiB.

    ``sizes``: each guest's mean size over the measured window (MiB;
    :func:`mean_sizes_mb`), where a run has one.
    """
    app_kb, disk_kb = sum(app.values()), sum(disk.values())
    guests = {n: guest_figures(app[n], disk[n]) for n in app}
    for n, mb in (sizes or {}).items():
        guests[n]['mean_size_mb'] = mb
    for g in point.spec.get('guests', ()):
        if g['name'] in guests:
            guests[g['name']]['workload'] = workload(g)
    return row(scenario, point.label, label, app_kb, disk_kb, paper,
               guests=guests,
               read_time_s=round(read_time_s(
                   app_kb, disk_kb, point.spec['host']['disk_mb_s']), 3),
               **extra)


# The oracle's splits held in a run (oracle.replay), resizes' refills paid.
REPLAY = 'oracle-replay'


def run_memory_point(scenario, point, strategies, paper, progress):
    """Rows (and runs) of every strategy at one point of a scenario."""
    rows, runs, result = [], {}, None
    for label in strategies:
        if label == 'oracle':
            result = oracle.solve(point.spec)
            rows.append(memory_row(
                scenario, point, label, result.app_kb, result.disk_kb,
                paper(point.params, label) if paper else None,
                splits=[{'from_s': s, 'size_mb': sizes}
                        for s, sizes in result.splits]))
        else:
            # The replay holds the oracle's splits, solved once a point.
            run = oracle.replay(point.spec, result) if label == REPLAY else (
                simulate.Simulation(point.spec, label).run())
            runs[label] = run
            rows.append(memory_row(
                scenario, point, label,
                {n: t.app_kb for n, t in run.traffic.items()},
                {n: t.disk_kb for n, t in run.traffic.items()},
                paper(point.params, label) if paper else None,
                sizes=mean_sizes_mb(run, point.spec['warmup_s']),
                moves=run.moves, moved_mb=run.moved_mb,
                overcommit_mb=round(max(0.0, run.overcommit_mb), 1),
                host_hit_ratio=(round(run.host_hit_ratio, 4)
                                if point.spec['host']['host_cache_mb']
                                else None)))
        progress.step('%s %s %s' % (scenario, point.label, label))
    return rows, runs


def mean_sizes_mb(run, warmup_s):
    """Each guest's balloon size (MiB) over the measured cycles, averaged."""
    kept = [x['size_mb'] for x in run.series if x['t'] > warmup_s]
    return {n: round(sum(x[n] for x in kept) / len(kept), 1)
            for n in (kept[0] if kept else ())}


def run_memory_points(scenario, points, strategies, paper, progress,
                      jobs=1):
    """[(rows, runs)] of each of ``points`` in order (run_memory_point).

    ``jobs`` processes at once: every run is deterministic (its spec seeds
    every draw) and independent of the others, so a pool changes only how
    long a sweep over hundreds of random hosts takes.
    """
    if jobs <= 1 or len(points) < 2:
        return [run_memory_point(scenario, p, strategies, paper, progress)
                for p in points]
    with futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        pending = {pool.submit(run_memory_point, scenario, p, strategies,
                               paper, _Uncounted()): p for p in points}
        for done in futures.as_completed(pending):
            for label in strategies:
                progress.step('%s %s %s' % (scenario, pending[done].label,
                                            label))
        return [f.result() for f in pending]


class _Uncounted:
    """A worker process's progress: its parent counts the finished points."""

    def step(self, what):
        pass


def gain_kept(static, agent, without):
    """Share (percent) of ``agent``'s saving over ``static`` ``without`` kept.

    Disk reads of static, of a mode with guest agents and without; None
    when the mode saved nothing with them.
    """
    saved = static - agent
    return 100.0 * (static - without) / saved if saved > 0 else None


# The label of a point's run without guest agents (scenario agentless).
NO_AGENT = ' no agent'


def agentless_reads(by, point):
    """(static, utility, utility without agents) disk read bytes of a point.

    ``by``: rows by (point, strategy) (:func:`by_point`).
    """
    return (by[(point, 'static')]['disk_read_bytes'],
            by[(point, 'utility')]['disk_read_bytes'],
            by[(point + NO_AGENT, 'utility')]['disk_read_bytes'])
