"""The invariants of design.md, in one place every plan passes through.

- never below a guest's floor (its committed or used memory plus a margin,
  and never below ``min_guest_mb``), never above its flavor memory;
- never promise more than the host has: the sum of targets stays within
  RAM - reserved + KSM savings that exist now times (1 - safety factor); a
  host already beyond that may not grow its total;
- at most ``max_step_mb`` of change per guest per cycle, and no change
  smaller than ``min_change_mb``;
- a guest without trustworthy data is never moved.
"""

import dataclasses
import math

from watcher_cams.policy import model


class GuardError(ValueError):
    """A guard configuration that cannot be honoured."""


@dataclasses.dataclass(frozen=True)
class GuardConfig:
    min_guest_mb: int = 256
    floor_margin_mb: int = 128
    ksm_safety_factor: float = 0.5
    max_step_mb: int = 2048
    min_change_mb: int = 32
    host_reserved_mb: int = 0

    def __post_init__(self):
        for name in ('min_guest_mb', 'floor_margin_mb', 'max_step_mb',
                     'min_change_mb', 'host_reserved_mb'):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise GuardError('%s must be a non-negative integer, got %r'
                                 % (name, value))
        if not 0.0 <= self.ksm_safety_factor <= 1.0:
            raise GuardError('ksm_safety_factor must be within [0, 1], got %r'
                             % (self.ksm_safety_factor,))
        if self.max_step_mb < self.min_change_mb:
            raise GuardError('max_step_mb (%d) is below min_change_mb (%d)'
                             % (self.max_step_mb, self.min_change_mb))


def floor_mb(guest: model.GuestView, cfg: GuardConfig) -> int:
    """Smallest size the guest may be given (never above its max)."""
    need = 0.0
    if guest.sample is not None:
        need = max(guest.sample.committed_mb, guest.sample.used_mb)
    floor = max(cfg.min_guest_mb, math.ceil(need) + cfg.floor_margin_mb)
    return min(floor, guest.max_mb)


def ceiling_mb(guest: model.GuestView) -> int:
    return guest.max_mb


def safe_ksm_mb(host: model.HostView, cfg: GuardConfig) -> int:
    """KSM savings that may be promised now."""
    if host.ksm is None:
        return 0
    return int(host.ksm.saved_mb * (1.0 - cfg.ksm_safety_factor))


def capacity_mb(host: model.HostView, cfg: GuardConfig) -> int:
    """Memory the guests of ``host`` may be promised in total right now."""
    reserved = max(host.reserved_mb, cfg.host_reserved_mb)
    return max(0, host.ram_mb - reserved) + safe_ksm_mb(host, cfg)


def reachable_mb(host, guest, cfg, kept_mb=0):
    """The most ``guest`` could ever hold on ``host``.

    Its flavor memory, or what the host may promise less every other
    guest's floor (and ``kept_mb`` that others keep above theirs), if
    less: memory beyond that saves it nothing, however many cycles it
    takes.
    """
    others = sum(floor_mb(g, cfg) for g in host.guests if g is not guest)
    return min(ceiling_mb(guest), capacity_mb(host, cfg) - others - kept_mb)


def room_down(guest, cfg, allocated=None):
    """MiB the guest can give this cycle, from ``allocated`` (or actual)."""
    if not guest.has_data:
        return 0
    alloc = guest.actual_mb if allocated is None else allocated
    lowest = max(floor_mb(guest, cfg), guest.actual_mb - cfg.max_step_mb)
    return max(0, alloc - lowest)


def room_up(guest, cfg, allocated=None):
    """MiB the guest can take this cycle, from ``allocated`` (or actual)."""
    if not guest.has_data:
        return 0
    alloc = guest.actual_mb if allocated is None else allocated
    highest = min(ceiling_mb(guest), guest.actual_mb + cfg.max_step_mb)
    return max(0, highest - alloc)


def clamp_target(guest, target, cfg):
    """One guest's target after floor, ceiling and step limits."""
    cur = guest.actual_mb
    target = int(round(target))
    target = max(cur - cfg.max_step_mb, min(cur + cfg.max_step_mb, target))
    target = min(target, ceiling_mb(guest))
    if target < cur:
        # A guest already under its floor is not shrunk further, and is not
        # grown by this clamp either: growing is a policy's decision.
        target = min(cur, max(target, floor_mb(guest, cfg)))
    return target


def _trim_growth(host, targets, cfg):
    """Cut growth until the host's total fits; shrinks are kept."""
    current_total = sum(g.actual_mb for g in host.guests)
    allowed = max(capacity_mb(host, cfg), current_total)
    total = current_total + sum(t - host.guest(u).actual_mb
                                for u, t in targets.items())
    excess = total - allowed
    if excess <= 0:
        return targets
    growers = sorted(((t - host.guest(u).actual_mb, u)
                      for u, t in targets.items()
                      if t > host.guest(u).actual_mb), reverse=True)
    grown = sum(d for d, _ in growers)
    trimmed = dict(targets)
    left = excess
    for delta, uuid in growers:
        cut = min(delta, math.ceil(excess * delta / grown), left)
        trimmed[uuid] -= cut
        left -= cut
    return trimmed


def finalize(host: model.HostView, proposals, cfg: GuardConfig):
    """Turn ``{uuid: (target_mb, reason)}`` into guarded BalloonMoves.

    Unknown guests and guests without trustworthy data are dropped. The
    result is sorted shrinks first, so applying it in order never makes the
    host promise more than it may at any point.
    """
    known = {g.uuid: g for g in host.guests if g.has_data}
    targets, reasons = {}, {}
    for uuid, (target, reason) in sorted(proposals.items()):
        guest = known.get(uuid)
        if guest is None or target is None or not math.isfinite(target):
            continue
        targets[uuid] = clamp_target(guest, target, cfg)
        reasons[uuid] = reason
    targets = {u: t for u, t in targets.items()
               if abs(t - known[u].actual_mb) >= max(1, cfg.min_change_mb)}
    targets = _trim_growth(host, targets, cfg)
    moves = [model.BalloonMove(host.name, u, known[u].actual_mb, t,
                               reasons[u])
             for u, t in targets.items()
             if abs(t - known[u].actual_mb) >= max(1, cfg.min_change_mb)]
    plan = model.Plan(host.name, moves=moves)
    return plan.ordered_moves()
