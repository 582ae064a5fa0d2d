"""The offline best memory split: a lower bound on disk reads.

Each guest's miss-ratio curve is measured by running that guest alone at
fixed sizes (its reads never depend on other guests without a host cache),
with the same access sequence as every other run. Then, for every segment of
time between phase changes, the oracle picks the sizes that minimise the
total disk reads of that segment, within the memory the host may promise and
each guest's floor and flavor memory. It knows the future and pays nothing
for resizing at phase changes, so no policy that sizes guests can read less
from disk with this cache (a different replacement policy could).

Sizes are searched on a coarse grid first, then on ``fine_mb`` steps around
the coarse optimum.
"""

import dataclasses

from watcher_cams.lab.sim import policies
from watcher_cams.lab.sim import spec as spec_mod


@dataclasses.dataclass
class OracleResult:
    reads_kb: float                # disk reads over the measured window
    app_kb: dict                   # guest name -> application reads (KiB)
    disk_kb: dict                  # guest name -> disk reads (KiB)
    splits: list                   # per segment: (start_s, {name: MiB})


class Curves:
    """Per-segment disk reads of each guest at each size, memoised."""

    def __init__(self, spec):
        self.spec = spec
        self.segments = segments(spec)
        self._memo = {}

    def reads(self, name, size_mb):
        """(app KiB, [disk KiB per segment]) of guest ``name`` alone."""
        key = (name, size_mb)
        if key not in self._memo:
            self._memo[key] = self._run(name, size_mb)
        return self._memo[key]

    @property
    def runs(self):
        return len(self._memo)

    def _run(self, name, size_mb):
        spec = self.spec
        host = spec_mod.build_host(spec, {name: size_mb}, only=name)
        cycle = spec['cycle_s']
        per_segment = [0] * len(self.segments)
        app = 0
        for _ in range(int(round(spec['duration_s'] / cycle))):
            start = host.now
            measure = start >= spec['warmup_s'] - 1e-9
            traffic = host.step(cycle, measure)[0]
            if measure:
                per_segment[segment_of(self.segments, start)] += \
                    traffic.disk_kb
                app += traffic.app_kb
        return app, per_segment


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
    """What the sizes may add up to at time ``t`` (static total + KSM)."""
    total = sum(g['size_mb'] for g in spec['guests'])
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


def _grid(lo, hi, step, around=None, span=0):
    sizes = set(range(lo, hi + 1, step)) | {lo, hi}
    if around is not None:
        sizes = {s for s in range(around - span, around + span + 1, step)
                 if lo <= s <= hi} | {around}
    return sorted(sizes)


def solve(spec, coarse_mb=256, fine_mb=64, cfg=None, curves=None):
    """The oracle's result for ``spec`` (a validated scenario spec)."""
    cfg = cfg or policies.GUARDS
    curves = curves or Curves(spec)
    bounds = {g['name']: _bounds(g, cfg) for g in spec['guests']}
    coarse = {n: _grid(lo, hi, coarse_mb) for n, (lo, hi) in bounds.items()}
    reads, splits = 0.0, []
    disk = dict.fromkeys(bounds, 0.0)
    for seg, start in enumerate(curves.segments):
        budget = budget_mb(spec, start, cfg)
        _, sizes = _best(curves, spec, seg, budget, coarse)
        fine = {n: _grid(*bounds[n], fine_mb, sizes[n], coarse_mb)
                for n in bounds}
        seg_reads, sizes = _best(curves, spec, seg, budget, fine)
        reads += seg_reads
        for n, s in sizes.items():
            disk[n] += curves.reads(n, s)[1][seg]
        splits.append((start, sizes))
    app = {g['name']: curves.reads(g['name'], g['size_mb'])[0]
           for g in spec['guests']}
    return OracleResult(reads, app, disk, splits)


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
