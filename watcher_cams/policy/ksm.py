"""Hand memory that KSM saves now back to the guests, and take it back.

Paper mode (papers.md, section 5): the savings that exist now (host-wide
``pages_sharing`` times the page size), less the guard's safety factor, are
split in equal parts over all guests on top of their entitled size (their
``base_mb``, or their flavor memory). When sharing drops, the shares shrink
and the balloons take the memory back.

Utility mode: the same pool goes, ``granule_mb`` at a time, to the guest
whose next MiB saves the most disk reads (the value curves of
:mod:`watcher_cams.policy.utility`), and only while that saving is at least
``min_value``; memory nobody would use stays on the host, where it is
cheaper to lose when sharing breaks. A guest keeps the bonus it holds while
its value cannot be measured (its cache filling after the last grant) and
until it is measured below ``min_value``; guests whose values are within
``value_band`` of the best share evenly.
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
    """Bonuses by value, starting from what each guest holds now.

    A guest keeps the bonus it holds while its value is not measured below
    ``min_value``: one just grown is still filling and shows nothing yet,
    and handing its share to the next guest every cycle moves memory back
    and forth for nothing. When the savings fall, the cheapest held memory
    goes first; what is left goes where the next MiB saves the most.
    """
    curves = {g.uuid: utility.value_curve(g, cfg) for g in guests}
    bonus = {g.uuid: _kept_bonus(g, curves[g.uuid], params) for g in guests}
    _give_back(guests, curves, bonus, pool)
    left = pool - sum(bonus.values())
    while left > 0:
        g = _next_taker(guests, curves, bonus, params)
        if g is None:
            break
        # The last granule may be smaller: savings are handed out whole.
        step = min(params.granule_mb, left,
                   g.max_mb - g.entitled_mb - bonus[g.uuid])
        bonus[g.uuid] += step
        left -= step
    return bonus


def _next_taker(guests, curves, bonus, params):
    """The guest (a GuestView) the next granule of savings goes to, or None.

    The one whose next MiB saves the most; values within utility mode's
    ``value_band`` of the best are equal as far as the counters can tell,
    and of those the guest with the smallest bonus goes first.
    """
    values = {}
    for g in guests:
        curve = curves[g.uuid]
        if curve is None or g.max_mb - g.entitled_mb - bonus[g.uuid] <= 0:
            continue
        offset = g.entitled_mb + bonus[g.uuid] - g.actual_mb
        values[g.uuid] = (curve.hull_at(max(0, offset))[0], g)
    best = max((v for v, _ in values.values()), default=0.0)
    if best <= params.min_value / 1024.0:
        return None
    band = 1 - utility.UtilityParams().value_band
    return min(((bonus[u], u), g) for u, (v, g) in values.items()
               if v >= best * band)[1]


def _kept_bonus(guest, curve, params):
    """MiB above its entitlement the guest keeps before values are compared.

    What it holds, unless its cache is settled and worth less than
    ``min_value``.
    """
    held = max(0, min(guest.actual_mb, guest.max_mb) - guest.entitled_mb)
    if curve is None:
        return 0
    if (not curve.filling and not curve.resized
            and curve.loss_at(0, held) < params.min_value / 1024.0):
        return 0
    return held


def _give_back(guests, curves, bonus, pool):
    """Shrink bonuses to the pool, the cheapest memory first."""
    over = sum(bonus.values()) - pool
    order = sorted((g for g in guests if bonus[g.uuid]),
                   key=lambda g: (curves[g.uuid].loss_at(0, bonus[g.uuid]),
                                  g.uuid))
    for g in order:
        if over <= 0:
            break
        cut = min(over, bonus[g.uuid])
        bonus[g.uuid] -= cut
        over -= cut


def plan(host: model.HostView, cfg: guards.GuardConfig,
         params: KsmParams = KsmParams()) -> model.Plan:
    guests = sorted((g for g in host.guests if g.has_guest_counters),
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
