"""Hand memory that KSM saves now back to the guests, and take it back.

Paper mode (papers.md, section 5): the savings that exist now (host-wide
``pages_sharing`` times the page size), less the guard's safety factor, are
split in equal parts over all guests on top of their entitled size (their
``base_mb``, or their flavor memory). When sharing drops, the shares shrink
and the balloons take the memory back.

Utility mode: the same pool goes, ``granule_mb`` at a time, to the guest
whose next MiB saves the most disk reads (the gain curves of
:mod:`watcher_cams.policy.utility`), and only while that saving is at least
``min_value``; memory nobody would use stays on the host, where it is
cheaper to lose when sharing breaks.
"""

import dataclasses

from watcher_cams.policy import guards
from watcher_cams.policy import model
from watcher_cams.policy import utility

PAPER = 'paper'
UTILITY = 'utility'


@dataclasses.dataclass(frozen=True)
class KsmParams:
    mode: str = PAPER
    granule_mb: int = 64
    min_value: float = 0.05

    def __post_init__(self):
        if self.mode not in (PAPER, UTILITY):
            raise ValueError('mode must be %r or %r' % (PAPER, UTILITY))
        if self.granule_mb < 1 or self.min_value < 0:
            raise ValueError('granule_mb must be >= 1 and min_value >= 0')


def _equal_bonus(guests, pool):
    """Equal shares; what a guest cannot hold (its max) goes to the rest."""
    bonus = {g.uuid: 0 for g in guests}
    open_ = sorted(guests, key=lambda g: (g.max_mb - g.entitled_mb, g.uuid))
    left = pool
    while open_ and left > 0:
        share = left // len(open_)
        if share == 0:
            break
        g = open_[0]
        take = min(share, g.max_mb - g.entitled_mb - bonus[g.uuid])
        if take < share:
            bonus[g.uuid] += take
            left -= take
            open_.pop(0)
            continue
        for g in open_:
            bonus[g.uuid] += share
        left -= share * len(open_)
    return bonus


def _value_bonus(guests, pool, cfg, params):
    curves = {g.uuid: utility.value_curve(g, cfg) for g in guests}
    bonus = {g.uuid: 0 for g in guests}
    threshold = params.min_value / 1024.0
    left = pool
    while left >= params.granule_mb:
        best = None
        for g in guests:
            curve = curves[g.uuid]
            room = g.max_mb - g.entitled_mb - bonus[g.uuid]
            if curve is None or room < params.granule_mb:
                continue
            offset = g.entitled_mb + bonus[g.uuid] - g.actual_mb
            density = curve.density_at(max(0, offset))[0]
            if density > threshold and (best is None or density > best[0]):
                best = (density, g.uuid)
        if best is None:
            break
        bonus[best[1]] += params.granule_mb
        left -= params.granule_mb
    return bonus


def plan(host: model.HostView, cfg: guards.GuardConfig,
         params: KsmParams = KsmParams()) -> model.Plan:
    guests = sorted((g for g in host.guests if g.has_data),
                    key=lambda g: g.uuid)
    pool = guards.safe_ksm_mb(host, cfg)
    if params.mode == PAPER:
        bonus = _equal_bonus(guests, pool)
    else:
        bonus = _value_bonus(guests, pool, cfg, params)
    proposals = {}
    for g in guests:
        target = g.entitled_mb + bonus[g.uuid]
        if target != g.actual_mb:
            proposals[g.uuid] = (target, 'ksm (%s): entitled %d MiB + %d MiB '
                                 'of %d MiB safe KSM savings'
                                 % (params.mode, g.entitled_mb,
                                    bonus[g.uuid], pool))
    result = model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))
    after = {m.instance: m.target_mb for m in result.moves}
    result.ksm_returned_mb = sum(
        max(0, after.get(g.uuid, g.actual_mb) - g.entitled_mb)
        for g in guests)
    return result
