"""CAMS, paper mode: equalize cache utilization by fixed balloon steps.

The paper (papers.md, section 1) defines cache utilization as hit pages /
cache pages, where hit pages are the distinct page-cache pages read at least
once more after they were cached; it counted them in a modified guest kernel.

Proxy on an unmodified Linux guest: ``Active(file) / (Active(file) +
Inactive(file))``. Linux puts a newly read file page on the inactive list
and promotes it to the active list on its second access (a hit), so the
active file list is the set of cache pages that were hit, and the two file
lists together are the cache pages (Cached and Buffers alike). Differences
from the paper's counter, accepted for paper mode: the list is a stock that
ages under pressure rather than a count over exactly one interval, writes
also promote pages, and the kernel caps the active list relative to the
inactive one, so utilization tops out below 1.

Each step takes ``pages_per_step`` x ``page_mb`` MiB (64 x 2 MiB in the
paper) from the guest with the lowest utilization and gives it to the one
with the highest. Within one audit cycle the effect of a step is predicted
(a shrink evicts inactive pages first, which raises the donor's utilization;
memory given is filled by new, inactive pages, which lowers the recipient's),
and steps repeat until the utilizations are equal within ``tolerance`` or
``max_steps`` steps were taken; the next cycle observes and corrects.
"""

import dataclasses

from watcher_cams.policy import guards
from watcher_cams.policy import model


@dataclasses.dataclass(frozen=True)
class CamsParams:
    pages_per_step: int = 64
    page_mb: int = 2
    max_steps: int = 4
    tolerance: float = 0.05

    def __post_init__(self):
        if self.pages_per_step < 1 or self.page_mb < 1:
            raise ValueError('pages_per_step and page_mb must be >= 1')
        if self.max_steps < 0:
            raise ValueError('max_steps must be >= 0')
        if not 0.0 <= self.tolerance < 1.0:
            raise ValueError('tolerance must be within [0, 1)')

    @property
    def step_mb(self):
        return self.pages_per_step * self.page_mb


def utilization(active_mb, inactive_mb):
    cache = active_mb + inactive_mb
    return active_mb / cache if cache > 0 else 0.0


@dataclasses.dataclass
class _Cache:
    """Predicted file lists of one guest while steps are planned."""

    guest: model.GuestView
    active: float
    inactive: float
    alloc: int

    @property
    def util(self):
        return utilization(self.active, self.inactive)

    def take(self, mb):
        from_inactive = min(mb, self.inactive)
        self.inactive -= from_inactive
        self.active = max(0.0, self.active - (mb - from_inactive))
        self.alloc -= mb

    def give(self, mb):
        self.inactive += mb
        self.alloc += mb


def plan(host: model.HostView, cfg: guards.GuardConfig,
         params: CamsParams = CamsParams()) -> model.Plan:
    caches = [_Cache(g, g.sample.active_file_mb, g.sample.inactive_file_mb,
                     g.actual_mb)
              for g in sorted(host.guests, key=lambda g: g.uuid)
              if g.has_guest_counters]
    before = {c.guest.uuid: c.util for c in caches}
    step = params.step_mb
    steps = 0
    while steps < params.max_steps and len(caches) >= 2:
        by_util = sorted(caches, key=lambda c: (c.util, c.guest.uuid))
        donors = [c for c in by_util
                  if guards.room_down(c.guest, cfg, c.alloc) >= step]
        takers = [c for c in reversed(by_util)
                  if guards.room_up(c.guest, cfg, c.alloc) >= step]
        if not donors or not takers:
            break
        donor, taker = donors[0], takers[0]
        if donor is taker or taker.util - donor.util <= params.tolerance:
            break
        donor.take(step)
        taker.give(step)
        steps += 1
    proposals = {
        c.guest.uuid: (c.alloc, 'cams: cache utilization %.2f -> %.2f '
                       '(predicted), %d step(s) of %d MiB'
                       % (before[c.guest.uuid], c.util, steps, step))
        for c in caches if c.alloc != c.guest.actual_mb}
    result = model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))
    result.notes.append('cams paper mode: %d step(s) of %d MiB' % (steps,
                                                                   step))
    return result
