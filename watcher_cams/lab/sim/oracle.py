"""The offline best memory split: a lower bound on disk reads.

Each guest's miss-ratio curve is measured by running that guest alone at
fixed sizes (its reads never depend on other guests without a host cache),
with the same access sequence as every other run. Then, for every segment of
time between phase changes, the oracle picks the sizes that minimise the
total disk reads of that segment, within the memory the host may promise and
each guest's floor and flavor memory. It knows the future and pays nothing
for resizing at phase changes, so no policy that holds one split between
phase changes can read less from disk with this cache (one that resizes
within a segment can: random hosts 114, by 10%, and 568; so could a
different replacement policy).

Every multiple of ``step_mb`` a guest may hold is searched, and its floor
and flavor maximum. A coarse grid refined around its optimum misses optima
where curves have knees between its points, and steps from a floor that is
no multiple of the step leave memory unsplit: a lower bound that misses
either flatters every policy measured against it.
"""

import collections
import concurrent.futures
import dataclasses
import json
import multiprocessing
import os

from watcher_cams.lab.sim import policies
from watcher_cams.lab.sim import spec as spec_mod


@dataclasses.dataclass
class OracleResult:
    reads_kb: float                # disk reads over the measured window
    app_kb: dict                   # guest name -> application reads (KiB)
    disk_kb: dict                  # guest name -> disk reads (KiB)
    splits: list                   # per segment: (start_s, {name: MiB})


class SoloRuns:
    """Disk reads per cycle of guests run alone at fixed sizes, memoised.

    Such a run depends on the guest and the scenario's timing and caches
    only (:func:`solo_spec`), so the points of a grid that share a guest
    (paper-grid's uniform reader) run it once. Sizes at which a guest never
    evicts read what any larger size reads, so they run once too.
    """

    def __init__(self, limit=4096, workers=None):
        self.limit = limit
        # Processes :meth:`prefetch` runs at once (None: one per CPU).
        self.workers = workers
        self._memo = collections.OrderedDict()
        # Solo spec -> smallest size run at which the cache never evicted.
        self._fits = {}

    def reads(self, solo, size_mb):
        """(app KiB, (disk KiB per cycle, ...)) of ``solo`` at ``size_mb``.

        ``solo`` is :func:`solo_spec`'s JSON text.
        """
        fits = self._fits.get(solo)
        if fits is not None and size_mb >= fits:
            # Same accesses, nothing ever evicted at the smaller size: the
            # same hits at any larger one.
            size_mb = fits
        key = (solo, size_mb)
        if key in self._memo:
            self._memo.move_to_end(key)
        else:
            self._keep(key, solo_run(solo, size_mb))
        return self._memo[key]

    def _keep(self, key, result):
        """Memoise ``result`` (:func:`solo_run`'s) of ``key``."""
        app, per_cycle, fits = result
        solo, size_mb = key
        if fits:
            self._fits[solo] = min(size_mb, self._fits.get(solo, size_mb))
        self._memo[key] = app, per_cycle
        if len(self._memo) > self.limit:
            self._memo.popitem(last=False)

    def prefetch(self, keys):
        """Run the (solo, MiB) ``keys`` not memoised yet, in parallel.

        A solver asks for one size after another; the runs are independent
        and each takes seconds (an oracle of the CAMS example's 1 TB reader
        ran a minute of them), so they run ahead on every CPU, the
        smallest sizes first: once a size never evicts, the larger ones of
        that guest are not run (see :meth:`reads`).
        """
        width = self.workers or os.cpu_count() or 1
        todo = sorted(set(keys) - set(self._memo), key=lambda k: k[1])
        if width < 2 or len(todo) < 2:
            return
        with concurrent.futures.ProcessPoolExecutor(
                width, mp_context=multiprocessing.get_context('fork')) as pool:
            while todo:
                todo = [k for k in todo
                        if k[1] < self._fits.get(k[0], float('inf'))]
                batch, todo = todo[:width], todo[width:]
                for key, result in zip(batch, pool.map(solo_run, *zip(
                        *batch))):
                    self._keep(key, result)


def solo_run(solo, size_mb):
    """(app KiB, disk KiB per cycle, whether it never evicted).

    ``solo``'s guest (:func:`solo_spec`'s JSON text) alone at ``size_mb``.
    """
    spec = json.loads(solo)
    name = spec['guests'][0]['name']
    host = spec_mod.build_host(spec, {name: size_mb})
    cycle = spec['cycle_s']
    per_cycle, app = [], 0
    for _ in range(int(round(spec['duration_s'] / cycle))):
        measure = host.now >= spec['warmup_s'] - 1e-9
        traffic = host.step(cycle, measure)[0]
        per_cycle.append(traffic.disk_kb if measure else 0)
        app += traffic.app_kb if measure else 0
    fits = getattr(host.guests[0].cache, 'evictions', None) == 0
    return app, tuple(per_cycle), fits


SOLO_RUNS = SoloRuns()


def solo_spec(spec, g):
    """The scenario of guest ``g`` alone, as JSON text (a memo key)."""
    solo = {k: v for k, v in spec.items()
            if k not in ('ksm', 'name', 'strategies')}
    return json.dumps(dict(solo, name='solo', guests=[g]), sort_keys=True)


class Curves:
    """Per-segment disk reads of each guest at each size."""

    def __init__(self, spec, runs=SOLO_RUNS):
        self.segments = segments(spec)
        self._runs = runs
        self._solo = {g['name']: solo_spec(spec, g) for g in spec['guests']}
        cycle = spec['cycle_s']
        self._segment_of_cycle = [
            segment_of(self.segments, i * cycle)
            for i in range(int(round(spec['duration_s'] / cycle)))]
        self._memo = {}

    def prefetch(self, grids):
        """Run ahead every size ``grids`` ({name: [MiB, ...]}) may ask."""
        self._runs.prefetch([(self._solo[name], size)
                             for name, sizes in grids.items()
                             for size in sizes])

    def reads(self, name, size_mb):
        """(app KiB, [disk KiB per segment]) of guest ``name`` alone."""
        key = (name, size_mb)
        if key not in self._memo:
            app, per_cycle = self._runs.reads(self._solo[name], size_mb)
            per_segment = [0] * len(self.segments)
            for seg, disk_kb in zip(self._segment_of_cycle, per_cycle):
                per_segment[seg] += disk_kb
            self._memo[key] = app, per_segment
        return self._memo[key]


def segments(spec):
    """Start times of the measured segments (phase changes cut them)."""
    cuts = {spec['warmup_s']}
    for g in spec['guests']:
        w = spec_mod.build_guest(spec, g).workload
        cuts.update(t for t in w.changes(spec['duration_s'])
                    if t > spec['warmup_s'])
    if spec.get('ksm'):
        ramp = spec['ksm']['ramp_s']
        if spec['warmup_s'] < ramp < spec['duration_s']:
            cuts.add(ramp)
    return sorted(cuts)


def segment_of(starts, t):
    index = 0
    for i, s in enumerate(starts):
        if t >= s - 1e-9:
            index = i
    return index


def _bounds(g, cfg):
    committed = max(p['committed_mb'] for p in g['phases'])
    floor = min(g['max_mb'], max(cfg.min_guest_mb,
                                 committed + cfg.floor_margin_mb))
    return min(floor, g['size_mb']), g['max_mb']


def budget_mb(spec, t, cfg):
    """What the sizes may add up to at time ``t``.

    What the guards let any policy promise (guards.capacity_mb): RAM less
    reserved, plus the KSM savings of that time that may be promised.
    Where the guests start with less, the rest is the host's to hand out
    (the Balloon Controller's 512 MiB, which its method gives too).
    """
    h = spec['host']
    total = h['ram_mb'] - max(h['reserved_mb'], cfg.host_reserved_mb)
    if not spec.get('ksm'):
        return total
    host = spec_mod.build_host(spec)
    host.now = t
    return total + int(host.ksm_saved_mb() * (1 - cfg.ksm_safety_factor))


def _best(curves, spec, seg, budget, candidates):
    """DP over guests: the sizes minimising this segment's reads."""
    best = {0: (0.0, {})}
    for g in spec['guests']:
        nxt = {}
        for used, (reads, sizes) in best.items():
            for size in candidates[g['name']]:
                total = used + size
                if total > budget:
                    continue
                r = reads + curves.reads(g['name'], size)[1][seg]
                if total not in nxt or r < nxt[total][0]:
                    nxt[total] = (r, dict(sizes, **{g['name']: size}))
        best = nxt
    if not best:
        raise spec_mod.ScenarioError('oracle: no split fits the host')
    return min(best.values(), key=lambda v: v[0])


def _top_up(curves, spec, seg, budget, reads, sizes):
    """The split with what no whole step fills given where it saves most.

    Budgets with KSM savings and floors are no multiple of the step; the
    policies may hand such a remainder to one guest, so the bound must.
    """
    left = budget - sum(sizes.values())
    best = (reads, sizes)
    for g in spec['guests']:
        name = g['name']
        size = min(g['max_mb'], sizes[name] + left)
        r = (reads - curves.reads(name, sizes[name])[1][seg]
             + curves.reads(name, size)[1][seg])
        if r < best[0]:
            best = (r, dict(sizes, **{name: size}))
    return best


def _grid(lo, hi, step):
    """``lo``, ``hi`` and every multiple of ``step`` between them.

    Multiples, not steps from ``lo``: the sizes the policies reach from
    static sizes of whole steps, and splits of a budget of whole steps that
    leave no memory unused where floors are no multiple of the step.
    """
    aligned = -(-lo // step) * step
    return sorted(set(range(aligned, hi + 1, step)) | {lo, hi})


def solve(spec, step_mb=64, cfg=None, curves=None):
    """The oracle's result for ``spec`` (a validated scenario spec)."""
    cfg = cfg or policies.GUARDS
    curves = curves or Curves(spec)
    grids = {g['name']: _grid(*_bounds(g, cfg), step_mb)
             for g in spec['guests']}
    curves.prefetch(grids)
    reads, splits = 0.0, []
    disk = dict.fromkeys(grids, 0.0)
    for seg, start in enumerate(curves.segments):
        budget = budget_mb(spec, start, cfg)
        seg_reads, sizes = _top_up(curves, spec, seg, budget, *_best(
            curves, spec, seg, budget, grids))
        reads += seg_reads
        for n, s in sizes.items():
            disk[n] += curves.reads(n, s)[1][seg]
        splits.append((start, sizes))
    app = {g['name']: curves.reads(g['name'], g['size_mb'])[0]
           for g in spec['guests']}
    return OracleResult(reads, app, disk, splits)


def replay(spec, result=None):
    """A run (simulate.RunResult) holding the oracle's splits in turn.

    ``result``: :func:`solve`'s for ``spec`` (solved here if None). The
    first split from the start, each next one from its segment's start,
    as a policy that knew every phase change would resize: unlike the
    oracle, its caches then fill what they were given, and a shrunk one
    keeps what it read last. Where a phase change moves memory, the
    oracle reads less than any policy can; this is what holding its
    splits reads, which a policy that moves within a segment may beat.
    """
    from watcher_cams.lab.sim import simulate
    result = result or solve(spec)
    (_, first), later = result.splits[0], result.splits[1:]
    return simulate.Simulation(spec, 'static', dict(first), later).run()


def brute_force(spec, step_mb, cfg=None):
    """Best static split by running the whole host at every split (tests)."""
    from watcher_cams.lab.sim import simulate
    cfg = cfg or policies.GUARDS
    names = [g['name'] for g in spec['guests']]
    grids = [_grid(*_bounds(g, cfg), step_mb) for g in spec['guests']]
    budget = budget_mb(spec, 0, cfg)
    best = None

    def splits(i, used):
        if i == len(grids):
            yield []
            return
        for s in grids[i]:
            if used + s <= budget:
                for rest in splits(i + 1, used + s):
                    yield [s] + rest

    for sizes in splits(0, 0):
        result = simulate.Simulation(spec, 'static',
                                     dict(zip(names, sizes))).run()
        reads = result.total.disk_kb
        if best is None or reads < best[0]:
            best = (reads, dict(zip(names, sizes)))
    return best
