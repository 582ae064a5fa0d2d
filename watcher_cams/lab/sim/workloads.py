"""Readers: which block each access touches, and how often.

A workload is a list of phases; each phase has a pattern, an access rate and
the memory the guest's processes commit while it runs. Patterns:

- ``hot_cold``: a share ``hot_share`` of accesses goes uniformly to the first
  ``hot_fraction`` of the range, the rest uniformly to the others (the CAMS
  paper's 80/20 power law);
- ``uniform``: uniformly over the range;
- ``scan``: sequentially over the range, wrapping around;
- ``idle``: no accesses.

Ranges are in blocks of the scenario. Every guest draws from its own seeded
generator, so its access sequence never depends on what others do or on the
cache: the oracle and brute-force runs replay the same sequence.
"""

import dataclasses
import random
from typing import Optional

PATTERNS = ('hot_cold', 'uniform', 'scan', 'idle')


class WorkloadError(ValueError):
    """A workload definition that cannot be run."""


@dataclasses.dataclass(frozen=True)
class Phase:
    pattern: str
    range_blocks: int = 0
    rate: float = 0.0
    duration_s: float = float('inf')
    committed_mb: int = 256
    # Anonymous memory really touched; Linux commits more than it uses.
    used_mb: Optional[int] = None
    hot_fraction: float = 0.2
    hot_share: float = 0.8
    offset: int = 0

    def __post_init__(self):
        if self.pattern not in PATTERNS:
            raise WorkloadError('unknown pattern %r (one of %s)'
                                % (self.pattern, ', '.join(PATTERNS)))
        if self.pattern != 'idle' and self.range_blocks < 1:
            raise WorkloadError('%s needs a range of at least one block'
                                % self.pattern)
        if self.rate < 0 or not self.duration_s > 0:
            raise WorkloadError('rate must be >= 0 and duration > 0')
        if not (0 < self.hot_fraction <= 1 and 0 <= self.hot_share <= 1):
            raise WorkloadError('hot_fraction must be in (0, 1] and '
                                'hot_share in [0, 1]')
        if self.committed_mb < 0:
            raise WorkloadError('committed_mb must be >= 0')
        if self.used_mb is not None and not (
                0 <= self.used_mb <= self.committed_mb):
            raise WorkloadError('used_mb must be within [0, committed_mb]')

    @property
    def anon_mb(self):
        return self.committed_mb if self.used_mb is None else self.used_mb


class Workload:
    """The accesses of one guest over time."""

    def __init__(self, phases, seed=0):
        if not phases:
            raise WorkloadError('a workload needs at least one phase')
        self.phases = tuple(phases)
        self.rng = random.Random(seed)
        self.carry = 0.0
        self.scan_pos = 0

    @property
    def cycle_s(self):
        return sum(p.duration_s for p in self.phases)

    def phase_at(self, t):
        """The phase running at time ``t`` (phases repeat)."""
        total = self.cycle_s
        if total != float('inf'):
            t = t % total
        for p in self.phases:
            if t < p.duration_s:
                return p
            t -= p.duration_s
        return self.phases[-1]

    def changes(self, until):
        """Times in ``(0, until)`` at which a new phase starts."""
        out, t = [], 0.0
        while True:
            for p in self.phases:
                t += p.duration_s
                if not t < until:
                    return out
                out.append(t)

    def blocks(self, t, dt):
        """Blocks read in ``[t, t + dt)``, at the phase running at ``t``."""
        p = self.phase_at(t)
        want = p.rate * dt + self.carry
        n = int(want)
        self.carry = want - n
        if p.pattern == 'idle' or n == 0:
            return []
        rng = self.rng.random
        base, size = p.offset, p.range_blocks
        if p.pattern == 'uniform':
            return [base + int(rng() * size) for _ in range(n)]
        if p.pattern == 'scan':
            start = self.scan_pos
            self.scan_pos = (start + n) % size
            return [base + (start + i) % size for i in range(n)]
        hot = max(1, int(size * p.hot_fraction))
        cold = size - hot
        share = p.hot_share if cold else 1.0
        out = []
        for _ in range(n):
            if rng() < share:
                out.append(base + int(rng() * hot))
            else:
                out.append(base + hot + int(rng() * cold))
        return out
