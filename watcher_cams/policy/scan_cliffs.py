"""Scans' cliffs: what utility mode makes of a guest reading as a scan.

A guest whose reads refault beyond its active list, with next to none
activated, re-reads data larger than its cache: a scan, whose value is a
cliff (nothing saved until its cache holds all it re-reads, all of it
then). The refault model (cache_value) spreads that over the shadow
entries' whole reach. Where its first re-read placed the cliff
(:mod:`first_reuse`), the memory it lacks is priced at all its refaults,
and all it holds is weighed against what others would save with it
(:func:`weighed`); where nothing placed it, what it gives costs what a
probe toward it is worth (:func:`priced`), and probes look for it
(:mod:`probes`).
"""

import bisect
import dataclasses

from watcher_cams.policy import cliff_trade
from watcher_cams.policy import donation
from watcher_cams.policy import first_reuse
from watcher_cams.policy import guards
from watcher_cams.policy import mrc
from watcher_cams.policy import probes

# Share of its reads a guest refaults, none activated, from which its
# unplaced cliff prices what it gives (a probe needs 1 - mrc.NOISE_SHARE):
# a scan refaults all it reads only a window after it began to.
DONOR_SHARE = 0.25
# ...and at most this share of its refaults activated: a scan re-reads
# nothing within its cache, while a uniform reader a little beyond its
# shadow entries' reach activates a tenth of its refaults or so, and is
# priced by its counters.
DONOR_ACTIVATED = 0.02


def priced(host, cfg, params, curves):
    """``curves``, each scan's cliff pricing what its guest would give.

    Where its first re-read placed the cliff: :func:`_scan_block`. Else a
    guest whose reads refault beyond its active list (DONOR_SHARE of
    them or more, at most DONOR_ACTIVATED of those activated) and that
    was never measured larger has its reuse
    somewhere within its shadow entries' reach; the refault model spreads
    that over all the reach (next to nothing per MiB). Shrunk, its shadow
    entries would no longer reach that reuse, and nothing would show it
    again: what it gives costs, per MiB, what a probe toward it is valued
    at (its refaults over one step). Not once it may not grow. Once its
    reach puts its cliff beyond its maximum (probes.reach_beyond_max),
    its reuse lies beyond what it can have: its memory is worth nothing,
    whatever the refault model spread over it.
    """
    held = {u: first_reuse.held_cliff(c, host.guest(u))
            for u, c in curves.items()}
    ladders = _Ladders(host, cfg, curves, params.granule_mb)
    out = dict(curves)
    for u, c in curves.items():
        if held[u] is not None:
            out[u] = dataclasses.replace(c, held_cliff=held[u])
            continue
        block = (_scan_block(host.guest(u), params, c)
                 or _traded_block(params, c))
        if block is not None and block.cliff_mb is not None:
            reachable = _reachable_mb(host, cfg, ladders, block, u, held)
            if block.cliff_mb > reachable:
                block = _beyond_reach(host.guest(u), params, (c, block),
                                      reachable)
        if block is not None:
            out[u] = block
            continue
        if probes.reach_beyond_max(c, host.guest(u)):
            out[u] = _never_fitting(c, params)
            continue
        if not probes.cliff_unplaced(c, DONOR_SHARE, DONOR_ACTIVATED):
            continue
        step = _unplaced_step(host, cfg, params, (u, c), (ladders, held))
        if step:
            out[u] = dataclasses.replace(c, loss_density=max(
                c.loss_density, c.refault_mb_s / step))
    return out


def _unplaced_step(host, cfg, params, priced, reach):
    """MiB the next probe toward an unplaced cliff would take, or 0.

    ``priced``: (uuid, curve); ``reach``: (:class:`_Ladders`, held as in
    :func:`priced`). A cliff_step, or where it was measured larger
    reading as much, probes.unplaced_cliff_step. 0 where the step would
    end beyond what the host could give it (:func:`_reachable_mb`) for
    what the probe may pay per MiB: its refaults over the step, and past
    a larger size no more than probes.FLAT_ABOVE_COST_SHARE of its reads.
    A span kept for a probe that cannot be paid is only lost to others
    (random host 3,796: a hot/cold reader turned 2.7 GiB scan, measured
    flat up to 3,008 MiB, held 2.1 GiB for an hour while the hot/cold
    reader beside it read 2 MiB/s; random host 4,095: a 3 GiB scan that
    no size the host can give holds, held 2.4 GiB).
    """
    uuid, curve = priced
    guest = host.guest(uuid)
    step = probes.cliff_step(guest, cfg, params)
    paid_mb_s = curve.refault_mb_s
    if probes.flat_above_mb(curve):
        step = probes.unplaced_cliff_step(guest, cfg, params, curve)
        paid_mb_s = min(paid_mb_s,
                        probes.FLAT_ABOVE_COST_SHARE * curve.disk_mb_s)
    tried = dataclasses.replace(curve, loss_density=paid_mb_s / max(step, 1))
    if step and curve.size_mb + step > _reachable_mb(
            host, cfg, reach[0], tried, uuid, reach[1]):
        return 0
    return step


def _saving_nothing(curve, params):
    """``curve`` of a scan whose memory is worth nothing to it.

    Its cliff lies beyond all the host could give it, or beyond its
    maximum, or is not worth reaching (:func:`weighed`): what it holds
    saves nothing, and more would not either, whatever its refaults.
    """
    return dataclasses.replace(curve, segments=(
        (params.min_segment_mb, 0.0),), loss_density=0.0)


def _beyond_reach(guest, params, priced, reachable_mb):
    """A scan's block, whose cliff lies beyond what the host could give it.

    ``priced``: (its curve, its block: :func:`_scan_block`).

    Its memory saves nothing (:func:`_saving_nothing`) where its reach is
    known. A reach a count placed only to within a slack
    (first_reuse._grown: an upper bound, or the guest's maximum) may lie
    within what the host can give: the scan is tried there, a block up to
    it (random host 1113: a 512 MiB scan that followed a longer one in a
    pass placed at its maximum, beyond the host; priced at nothing, it
    read 8 MiB/s for 80 minutes from a 448 MiB file LRU beside an idle
    guest). Not once it was measured there, or larger, reading as much.
    Priced at the
    refaults its shadows show: a scan whose reuse lies beyond them shows
    none, and a trial would stake a neighbour's hot set on a count alone
    (random host 294: a 1.8 GiB scan, tried at 2 GiB, took a hot set's
    1.4 GiB and still did not fit). Tried even where the least reach the
    slack allows lies beyond: the reach of a workload that changed within
    the pass (random host 1113's) lies below both bounds, and refusing
    such trials cost random hosts 1-1,400 31.65 GiB more than it saved.
    """
    curve, block = priced
    if not block.reach.slack_mb or reachable_mb < params.granule_mb + max(
            block.size_mb, first_reuse.passed_mb(block, guest)):
        return _saving_nothing(block, params)
    return _as_block(block, params, reachable_mb, curve.refault_mb_s / (
        reachable_mb - block.size_mb))


def _never_fitting(curve, params):
    """``curve`` of a scan whose reach lies beyond its maximum size.

    It saves nothing with any memory it may have (:func:`_saving_nothing`),
    and what the refault model spread its refaults over at the sizes it
    held before (its measurements' densities) was the same guess: only
    the reads the host measured there price what it gives
    (cache_value.ValueCurve.measured_loss). Not a cliff merely beyond
    what the host could give it now, which may come within reach when a
    neighbour's needs change (random host 841: a 3.6 GiB scan gave its
    memory away, and a uniform reader over 32 GiB had it when the
    neighbour's fitted scan ended).
    """
    return _saving_nothing(curve, params).priced_by_reads()


def _reachable_mb(host, cfg, ladders, block, uuid, held):
    """guards.reachable_mb, less what others hold of no less worth.

    ``held``: {uuid: first_reuse.held_cliff or None}. Memory a scan that
    fits holds above its floor comes only with all its reads: taken from
    one that reads at least as much as ``block`` refaults, it saves
    nothing, so it is not reach. Any other guest's is reach only as far as
    it would give it for what ``block`` saves per MiB up to its cliff
    (:class:`_Ladders`): a cliff that everyone else's floors leave room
    for, but that only working sets worth more where they are could pay
    for, is not one the scan is on its way to (random host 843: a 3.6 GiB
    scan held 1,856 MiB toward a cliff at 4.1 GiB for an hour, while the
    hot set beside it read 1.9 MiB/s).
    """
    kept = 0
    for u, found in held.items():
        if found and u != uuid and found[1] >= block.refault_mb_s:
            kept += max(0, found[0] - guards.floor_mb(host.guest(u), cfg))
    fitted = {u for u, found in held.items() if found}
    kept += ladders.kept_above(block.loss_density, fitted | {uuid})
    return guards.reachable_mb(host, host.guest(uuid), cfg, kept)


class _Ladders:
    """What each guest of a host would give, granule by granule, and at what.

    Priced once per plan, each guest when first asked: every scan short of
    its cliff asks of every other guest. A host of 20 such scans beside 20
    guests holding 3.6 GiB each above their floors planned in 73 ms with
    each scan walking every neighbour's curve, 8 ms priced once (4 ms
    without asking at all).
    """

    def __init__(self, host, cfg, curves, g_mb):
        self.host, self.cfg, self.curves, self.g_mb = host, cfg, curves, g_mb
        self._steps = {}

    def kept_above(self, price, exclude):
        """MiB the guests not in ``exclude`` keep above their floors.

        What each would lose more for than ``price`` (MiB/s per MiB),
        granule by granule from its size; all of one without a curve
        (nothing plans its memory); nothing of one that reads nothing now.
        """
        kept_mb = 0
        for guest in self.host.guests:
            if guest.uuid not in exclude:
                above_mb, dearest = self._ladder(guest)
                given_mb = bisect.bisect_left(dearest, price) * self.g_mb
                kept_mb += max(0, above_mb - given_mb)
        return kept_mb

    def _ladder(self, guest):
        """(MiB above its floor, the dearest loss up to each granule)."""
        if guest.uuid in self._steps:
            return self._steps[guest.uuid]
        above_mb = max(0, guest.actual_mb - guards.floor_mb(guest, self.cfg))
        curve, dearest, top = self.curves.get(guest.uuid), [], 0.0
        if curve is not None and (curve.idle_since is not None
                                  or curve.quiet):
            # Nothing reads there now: what it holds is lent, whatever
            # the workload that stopped measured (random host 1332).
            dearest = [-1.0] * -(-above_mb // self.g_mb)
        elif curve is not None:
            for given_mb in range(0, above_mb, self.g_mb):
                top = max(top, curve.loss_at(given_mb, self.g_mb))
                dearest.append(top)
        self._steps[guest.uuid] = above_mb, dearest
        return above_mb, dearest


def _scan_block(guest, params, curve):
    """``curve`` priced as a scan whose cliff its first re-read placed.

    A guest whose reads refault as a scan's do (DONOR_SHARE, with at most
    DONOR_ACTIVATED of them activated) and whose reach first_reuse
    estimated: up to its cliff, every MiB is worth its refaults over the
    memory it lacks (first_reuse.cliff), and what it gives costs as much.
    Whether reaching the cliff is worth that memory at all is weighed
    against giving all it holds up (:func:`weighed`). None
    otherwise.
    """
    if _past_its_shadows(curve, guest):
        # Every read it reads is a re-read its shadows no longer show.
        curve = dataclasses.replace(curve, refault_mb_s=curve.disk_mb_s)
    elif not probes.reads_as_scan(curve, DONOR_SHARE, DONOR_ACTIVATED):
        return None
    found = first_reuse.cliff(curve, guest)
    if found is None:
        return None
    return _as_block(curve, params, *found)


def _as_block(curve, params, fits_mb, density):
    """``curve`` saving ``density`` per MiB up to a cliff at ``fits_mb``.

    Every MiB up to there is worth that (all its reads over what it
    lacks), beyond it nothing, and what it gives costs as much.
    """
    segments = ((params.min_segment_mb, 0.0),)
    if fits_mb > curve.size_mb:
        segments = ((fits_mb - curve.size_mb, density),) + segments
    return dataclasses.replace(curve, segments=segments,
                               loss_density=density, cliff_mb=fits_mb)


def _traded_block(params, curve):
    """``curve`` priced as the scan whose memory it traded, or None.

    Its cliff and its reads below it (cliff_trade.remembered), as
    :func:`_scan_block` prices a cliff its first re-read placed: a scan
    shrunk far below its reach soon reads as a stream, and a window its
    host cache served made it look like a new workload. What a first
    pass lent is worth, up to the size it lent from, what the pass read
    per MiB lent: all of it would have saved at most that. No more: its
    reuse is unknown, and a pass is no scan whose last MiB before its
    cliff is worth all it reads (random host 710: a 6 GiB scan that could
    never fit took back its loan granule by granule at up to 16 MiB/s per
    GiB from a scan that fitted, which then read 1.8 GiB more). Nor is it
    weighed as a scan that gives all it holds up (weighed): so priced, a
    hot/cold reader's loan gave 576 MiB more at no price (wide host 336,
    13.37 GiB read instead of 11.28).
    """
    if curve.traded is None:
        return None
    fits_mb, reads_mb_s = curve.traded[:2]
    if cliff_trade.lent(curve.traded):
        density = reads_mb_s / curve.traded[3]
        return dataclasses.replace(curve, segments=(
            (fits_mb - curve.size_mb, max(density, curve.density_at(0)[0])),
        ) + tuple(curve.segments))
    return _as_block(curve, params, fits_mb,
                     reads_mb_s / (fits_mb - curve.size_mb))


def _past_its_shadows(curve, guest):
    """Whether a confirmed scan reads as a stream for want of shadows.

    Its re-reads lie beyond its shadow entries
    (first_reuse.beyond_shadows): it reads from disk and refaults (next
    to) nothing, none activated.
    """
    return (first_reuse.beyond_shadows(curve.reach, guest)
            and curve.disk_mb_s >= mrc.READ_MB_S
            and curve.refault_mb_s <= DONOR_SHARE * curve.disk_mb_s
            and curve.activate_mb_s <= DONOR_ACTIVATED * curve.refault_mb_s)


def weighed(host, cfg, params, curves, up):
    """``curves``, a scan not worth its cliff priced as giving all it holds.

    A scan short of its cliff (:func:`_scan_block`) saves nothing until
    it reaches it, and loses nothing more now by giving what it holds: its
    curve is not concave, and marginal prices alone would grow a cheap
    scan a step from its cliff while all it holds is worth more elsewhere.
    As Talus's convex hull does between its floor and its cliff, all that
    memory is priced at once: its refaults over everything from where it
    is kept to the cliff. Where that is below what the best other taker's
    next MiB saves (by ``value_band``), the scan gives up: nothing it
    holds is worth anything to it. ``up``: what each guest may take
    ({uuid: MiB}, utility._moves).
    """
    blocks = {u for u, c in curves.items()
              if c.cliff_mb is not None and c.cliff_mb > c.size_mb}
    best = max((curves[u].hull_at(0, up[u])[0] for u in curves
                if u not in blocks and up[u]), default=0.0)
    out = dict(curves)
    for u in blocks:
        c, guest = curves[u], host.guest(u)
        whole = c.refault_mb_s / max(
            c.cliff_mb - donation.kept_mb(guest, cfg), params.granule_mb)
        if whole * (1 + params.value_band) < best:
            out[u] = _saving_nothing(c, params)
    return out
