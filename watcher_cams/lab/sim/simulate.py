"""Run one scenario with one strategy, in audit cycles.

Every cycle the host runs its guests' reads for ``cycle_s`` seconds, the
agent's report is built, the strategy's policy plans on it and the plan's
balloon moves are applied in order (shrinks first), as Watcher's applier
would. Reads before ``warmup_s`` are not measured.
"""

import dataclasses

from watcher_cams.lab.sim import host as host_mod
from watcher_cams.lab.sim import policies
from watcher_cams.lab.sim import spec as spec_mod

KB = 1024


@dataclasses.dataclass
class RunResult:
    strategy: str
    traffic: dict          # guest name -> Traffic over the measured window
    series: list           # per cycle: t, size_mb and disk MiB/s per guest
    moves: int = 0
    moved_mb: int = 0
    overcommit_mb: float = 0.0
    host_hits_kb: int = 0

    @property
    def total(self):
        t = host_mod.Traffic()
        for v in self.traffic.values():
            t.add(v)
        return t

    @property
    def host_hit_ratio(self):
        """Share of guest misses the host page cache served."""
        misses = self.total.guest_miss_kb
        return (misses - self.total.disk_kb) / misses if misses else 0.0


class Simulation:
    """One run; ``sim`` for the policies (access rates, KSM or not).

    ``sizes``: {name: MiB} to start from; ``schedule``: [(from_s, {name:
    MiB}), ...], splits applied when the run reaches each time, before
    that cycle's reads, as well as the policy's plans (the oracle's
    splits replayed: :func:`oracle.replay`).
    """

    def __init__(self, spec, label, sizes=None, schedule=()):
        if label not in policies.POLICIES:
            raise spec_mod.ScenarioError('no simulation for strategy %r'
                                         % label)
        self.spec = spec
        self.label = label
        self.host = spec_mod.build_host(spec, sizes)
        self.has_ksm = bool(spec.get('ksm'))
        self._rates = {}
        self._schedule = sorted(schedule, key=lambda entry: entry[0])

    def access_rates(self):
        """Application reads per second of each guest in the last cycle."""
        return dict(self._rates)

    def run(self, on_cycle=None):
        spec, host = self.spec, self.host
        cycle = spec['cycle_s']
        cycles = int(round(spec['duration_s'] / cycle))
        result = RunResult(self.label, {}, [])
        for k in range(cycles):
            self._follow_schedule(result)
            measure = host.now >= spec['warmup_s'] - 1e-9
            traffic = self._step(cycle, measure)
            self._rates = {g.uuid: t.app_kb / cycle
                           for g, t in zip(host.guests, traffic)}
            result.series.append({
                't': host.now,
                'size_mb': {g.name: g.size_mb for g in host.guests},
                'cache_mb': {g.name: len(g.cache) * g.block_kb / KB
                             for g in host.guests},
                'disk_mb_s': {g.name: t.disk_kb / KB / cycle
                              for g, t in zip(host.guests, traffic)}})
            plan = policies.plan(self.label, host.report(), self)
            if plan is not None:
                self._apply(plan, result)
            if on_cycle is not None:
                on_cycle(k + 1, cycles)
        result.traffic = {g.name: g.traffic for g in host.guests}
        result.overcommit_mb = host.overcommit_mb
        return result

    def _step(self, cycle, measure):
        """One cycle's reads, with the agent's background sample in it."""
        at = self.spec.get('collect_at_s') or 0
        if not at:
            return self.host.step(cycle, measure)
        first = self.host.step(at, measure)
        self.host.collect()
        rest = self.host.step(cycle - at, measure)
        for a, b in zip(first, rest):
            a.add(b)
        return first

    def _follow_schedule(self, result):
        """Resize to the scheduled splits due by now, shrinks first."""
        while self._schedule and (
                self._schedule[0][0] <= self.host.now + 1e-9):
            sizes = self._schedule.pop(0)[1]
            guests = sorted(self.host.guests,
                            key=lambda g: sizes[g.name] - g.size_mb)
            for guest in guests:
                delta = sizes[guest.name] - guest.size_mb
                if delta:
                    _resize(guest, sizes[guest.name], delta, result)

    def _apply(self, plan, result):
        for move in plan.ordered_moves():
            _resize(self.host.guest(move.instance), move.target_mb,
                    move.delta_mb, result)
        for uuid, state in plan.policy_state.items():
            guest = self.host.guest(uuid)
            if guest is not None:
                guest.policy_state.update(state)


def _resize(guest, target_mb, delta_mb, result):
    """Balloon ``guest`` to ``target_mb``, counted in ``result``."""
    guest.resize(target_mb)
    result.moves += 1
    result.moved_mb += abs(delta_mb)
