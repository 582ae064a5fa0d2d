"""Probes: bounded steps where neither measurements nor counters decide.

Utility mode (:mod:`utility`) moves memory by the guests' value curves;
where those find nothing to move, a probe may take one bounded step
toward a guest that may be worth more than its counters say: its
host-measured reads fell more per MiB than they value the next one, or
its reads all refault beyond its active list (a cliff the counters cannot
place). The next clean window measures the new size, and the
water-filling takes back a step that did not pay. The shared parts live
here: who may give a probe (:func:`probe_donor_rooms`), at what loss
(:func:`probe_donors`), and the plan of one step (:func:`probe_plan`).
A stream's step (:mod:`stream_probe`) and the wide steps toward a guest
without an agent (:mod:`wide_probes`) use them.
"""

from watcher_cams.policy import donation
from watcher_cams.policy import first_reuse
from watcher_cams.policy import guards
from watcher_cams.policy import host_only
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import probe_memory

# Named in a probe's reason: which signal decided the move.
PROBE = 'probe'
# A stream probe toward a new workload may take memory in use where the
# step costs its donors at most this share of the taker's disk reads
# (stream_probe._new_workload_donors; a flat_search step has the same
# budget): the step is tried once and given back within a few windows if
# the reads do not fall, while a scan it fits saves all of them for as
# long as the workload lasts. 0.1 and 0.2 measured in lab.rst.
NEW_WORKLOAD_COST_SHARE = 0.05
# A probe toward an unplaced cliff measured at a larger size costs its
# donors at most this share of the taker's disk reads (_past_flat_sizes;
# wide host 125: a uniform reader turned 3.2 GiB scan was probed past 2.2
# GiB measured flat at a cost of 2.4 of the 3.8 MiB/s it read, and two
# hot sets paid for it). 0.15 and 0.5 measured in lab.rst.
FLAT_ABOVE_COST_SHARE = 0.25


def _cheapest_probe_donor(curves, down, need_mb, taker, price):
    """(uuid, loss per MiB, MiB it may give) for a probe of ``need_mb``.

    The guest other than ``taker`` that can give ``need_mb`` at the least
    loss, priced by ``price`` (curve, MiB); Nones when none can.
    """
    donor, loss, room = None, 0.0, 0
    for u in sorted(curves):
        if u != taker and down[u] >= need_mb:
            u_loss = price(curves[u], need_mb)
            if donor is None or u_loss < loss:
                donor, loss, room = u, u_loss, down[u]
    return donor, loss, room


def measured_slope_below(curve, noise_share):
    """Reads saved per MiB from the nearest smaller measured size, or None.

    Between that size and this one: an upper bound of the next MiB's worth
    on a concave curve, and the best local guess where the counters cannot
    see (a hot set larger than the active list). None too when the reads
    fell by less than ``noise_share`` of them: within the disk rates'
    noise, no evidence of a slope.
    """
    here, nearest = curve.here, _nearest_below(curve)
    if here is None or nearest is None:
        return None
    if nearest.disk_mb_s - here.disk_mb_s < noise_share * nearest.disk_mb_s:
        return None
    return curve.measured_slope(here, nearest)


def _nearest_below(curve):
    """The measurement (mrc.Seen) at the nearest smaller size, or None."""
    below = [x for x in curve.seen[1:] if x.size_mb < curve.size_mb]
    return max(below, key=lambda x: x.size_mb, default=None)


def probe(host, cfg, params, curves, rooms, bound_of=None):
    """A bounded step toward a guest worth more than its counters say, or None.

    ``rooms``: what each guest may give the water-filling
    ({uuid: MiB}). Where the step goes and how large it is:
    :func:`_probe_bound`.

    Bounded: one step per host and cycle, from the donor whose loss is
    lowest and only while the measured bound beats it. The next clean
    window measures the new size: reads that fell bear the probe out and
    the next one may follow; reads that did not make the granule the
    cheapest memory this guest has, and the water-filling takes it back.
    A step that went back is not tried again from there on a bound less
    than half as large again (:mod:`probe_memory`); the plan's policy
    state records the step it takes.
    """
    taker, found = _probe_taker(host, cfg, params, curves,
                                bound_of or _probe_bound)
    if taker is None:
        return None
    bound, steps = found
    down = probe_donor_rooms(host, cfg, curves, rooms)
    paid = next(filter(None, (
        _paying_step(host, cfg, params, curves, (down, taker, step, bound))
        for step in steps)), None)
    if paid is None:
        return None
    donors, loss, amount, bound = paid
    if _past_flat_sizes(curves[taker]) and loss * amount > (
            FLAT_ABOVE_COST_SHARE * curves[taker].disk_mb_s):
        return None
    # What it costs, at most: the donors' reads the amount may add (for a
    # guest without an agent never measured smaller, an estimate).
    known = all(curves[d].loss_at(0, mb) != host_only.UNKNOWN
                for d, mb in donors.items())
    why = ('utility (%s): measured up to %.3f MiB/s per GiB, the donor '
           '%.3f; costs %s %.3f MiB/s of reads'
           % (PROBE, bound * 1024, loss * 1024,
              'at most' if known else 'an estimated', loss * amount))
    plan = probe_plan(host, cfg, donors, taker, why)
    # Kept with the bound the taker was chosen on (found[0]), not the one
    # the step paid under: a repeat is checked against that one.
    for m in plan.moves:
        if m.instance == taker:
            probe_memory.record(plan.policy_state.setdefault(taker, {}),
                                host.guest(taker), found[0], m.target_mb)
    return plan


def _probe_taker(host, cfg, params, curves, bound_of):
    """(uuid, its ``bound_of``) of the guest a probe goes to, or Nones.

    The one whose bound, capped by what it reads over its smallest step
    (a wider one is only tried), is highest; not one whose bound repeats
    a probe given back at its size (probe_memory.repeats).
    """
    taker, best, found = None, 0.0, None
    for u, c in sorted(curves.items()):
        guest = host.guest(u)
        bound = bound_of(c, guest, cfg, params)
        if bound is None or probe_memory.repeats(guest, bound[0], params):
            continue
        capped = _saving_cap(c, bound[0], bound[1][-1])
        if capped > best:
            taker, best, found = u, capped, bound
    return taker, found


def _paying_step(host, cfg, params, curves, offer):
    """(donors, loss, MiB, bound) of a probe that pays, or None.

    ``offer``: (what each guest may give, the taker, the MiB it asks,
    what its next MiB may save). The donors' loss per MiB, with
    ``value_band`` on top, must stay below the bound, capped by what the
    taker reads over what it gets (:func:`_saving_cap`).
    """
    down, taker, amount, bound = offer
    bound = _saving_cap(curves[taker], bound, amount)
    donors, loss = probe_donors(curves, down, taker, amount, params)
    donors = _free_step(curves, down, taker, (donors, bound), params,
                        guards.room_up(host.guest(taker), cfg))
    amount = sum(donors.values())
    bound = _saving_cap(curves[taker], bound, amount)
    if not donors or bound - loss * (1 + params.value_band) <= (
            params.min_value / 1024.0):
        return None
    return donors, loss, amount, bound


def _free_step(curves, down, taker, step, params, room_mb):
    """A probe's donors, for a wider step where they lose nothing.

    ``step``: ({donor: MiB}, the saving per MiB it may bring); ``room_mb``:
    what the taker may grow this cycle. Memory no read needs
    (ValueCurve.no_loss_mb: free memory a cache left unused, an idle
    guest's step) costs nothing to try: a granule at a time, a slow reader
    waited for each to fill and be measured, an hour for what paper mode
    gives in minutes. Such memory goes as far as the taker's reads would
    last at that saving (its reads over it), within ``room_mb``, in
    granules; the next windows measure it as any probe. Otherwise
    ``step``'s donors.
    """
    donors, bound = step
    if not donors or bound <= 0 or any(
            mb > curves[d].no_loss_mb for d, mb in donors.items()):
        return donors
    g_mb = params.granule_mb
    want = int(min(room_mb, curves[taker].disk_mb_s / bound))
    free = {u: min(down.get(u, 0), int(c.no_loss_mb))
            for u, c in curves.items() if u != taker}
    wider, _ = probe_donors(curves, free, taker, want - want % g_mb,
                            params)
    return wider if sum(wider.values()) > sum(donors.values()) else donors


def _saving_cap(curve, bound, amount_mb):
    """``bound`` (MiB/s per MiB), capped by what the guest reads.

    It cannot save more than it reads: a guest whose reads a past step
    already ended is worth nothing more, whatever slope led there.
    """
    return min(bound, curve.disk_mb_s / max(amount_mb, 1))


def probe_plan(host, cfg, donors, taker, why):
    """The plan of one probe: ``donors`` ({uuid: MiB}) give to ``taker``."""
    proposals = {taker: (host.guest(taker).actual_mb
                         + sum(donors.values()), why)}
    for donor, mb in donors.items():
        proposals[donor] = (host.guest(donor).actual_mb - mb, why)
    return model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))


def probe_donor_rooms(host, cfg, curves, rooms):
    """{uuid: MiB each guest may give a probe}.

    What it may give the water-filling, but from a cache still filling
    (its value is not measured yet) only what it has not filled: its free
    memory, beyond the floor margin, or where it fills only that margin,
    its inactive list. A slow reader fills its memory for as many minutes
    as its reads take, and a scan whose cliff is measured would wait as
    long. What the cache served while it filled, and its activations,
    price the probe (:func:`probe_loss`). Not from a guest that may be
    in a scan's first pass (its reuse has not shown). From one without a
    guest agent (nothing shows its reuse) only its free memory, once its
    fill's reads fell and then stopped falling (fill_curve.Fill.flattened)
    or where its cache did not grow over the window or will not reach it
    soon (ValueCurve.unused_mb: an idle guest's, a slow reader's). Random
    host 370 without agents: an idle guest's 1.4 GiB, which no read
    needs, went to no probe beside a 2.6 GiB scan that fits with it, for
    two hours.
    """
    rooms = dict(rooms)
    for u, c in curves.items():
        if not c.filling:
            continue
        guest = host.guest(u)
        rooms[u] = 0
        if c.resized > 0 or c.first_pass:
            continue
        if guest.host_only:
            free = c.free_mb if c.fill.flattened else c.unused_mb
            rooms[u] = max(0, min(int(free), guards.room_down(guest, cfg)))
            continue
        unfilled = c.free_mb or guest.actual_mb - donation.kept_mb(
            guest, cfg, guest.sample.active_file_mb)
        rooms[u] = max(0, min(int(unfilled), guards.room_down(guest, cfg)))
    return rooms


def probe_loss(curve, amount_mb):
    """A probe donor's loss per MiB for ``amount_mb``.

    ValueCurve.probe_loss_at (a loss never measured by its exploration
    prior) or, for a cache still filling, what it served while it filled
    if that is more (see :func:`probe_donor_rooms`).
    """
    loss = curve.probe_loss_at(0, amount_mb)
    if curve.filling and curve.fill_density is not None:
        loss = max(loss, curve.fill_density)
    return loss


def probe_donors(curves, down, taker, amount, params, price=probe_loss):
    """({donor: MiB}, the highest loss per MiB) for a probe of ``amount``.

    The cheapest guest that can give all of it or, where none can, the
    cheapest that can give some, then the next cheapest for the rest, and
    so on: a step too small to reach a cliff measures nothing. ({}, 0.0)
    when nobody can give a granule. ``price``: a donor's loss per MiB
    (curve, MiB), :func:`probe_loss` unless the caller prices otherwise.
    """
    donor, loss, _ = _cheapest_probe_donor(curves, down, amount, taker,
                                           price)
    if donor is not None:
        return {donor: amount}, loss
    g_mb = params.granule_mb
    down, donors, loss = dict(down), {}, 0.0
    while amount >= g_mb:
        donor, _, room = _cheapest_probe_donor(curves, down, g_mb, taker,
                                               price)
        if donor is None:
            break
        part = min(amount, room - room % g_mb)
        donors[donor] = part
        loss = max(loss, price(curves[donor], part))
        amount -= part
        down[donor] = 0
    return donors, loss


def _probe_bound(curve, guest, cfg, params):
    """(what the next MiB may be worth, MiB to probe) for a guest, or None.

    The MiB as a tuple of steps, largest first: the probe takes the first
    whose donors' loss the bound beats (:func:`probe`). Where its
    host-measured reads fell more per MiB below its size than its
    counters value the next MiB: that slope, over :func:`_slope_steps`.
    Where its reads are all refaults beyond its active list (none
    activated) and no larger size was measured reading less: its reuse
    lies somewhere within the shadow entries' reach, as a scan a little
    larger than its cache does (a cliff the counters cannot place); up to
    a quarter of its cache more, past any larger size it read as much at
    (:func:`unplaced_cliff_step`), valued as if the cliff were within it.
    Likewise where they are all refaults, all activated
    (:func:`cliff_within_active`). Not on the window a new workload began
    (:func:`new_workload`).
    """
    room = guards.room_up(guest, cfg)
    if not _probeable(curve, guest, cfg, params):
        return None
    if guest.host_only:
        found = _host_only_bound(curve, room, params)
        return found and (found[0], (found[1],))
    restored = _restore_bound(curve, room, params)
    if restored is not None:
        return restored[0], (restored[1],)
    slope = measured_slope_below(curve, mrc.NOISE_SHARE)
    if slope is not None and slope > curve.density_at(0)[0] * (
            1 + params.value_band):
        return slope, _slope_steps(curve, guest, room, params)
    if curve.cliff_mb is not None or reach_beyond_max(curve, guest) or not (
            cliff_unplaced(curve) or cliff_within_active(
                curve, guest.sample.active_file_mb)):
        return None
    # Steps that measured no fall double the next: the cliff is beyond
    # all of them, anywhere within the shadow entries' reach.
    step = unplaced_cliff_step(guest, cfg, params, curve)
    if not step:
        return None
    return curve.refault_mb_s / step, (step,)


def _past_flat_sizes(curve):
    """Whether a probe toward the guest goes past sizes it read as much at.

    An unplaced cliff (:func:`cliff_unplaced`) measured larger: that size
    was tried and its reads did not end there, so what lies further is a
    weaker bet than a size nobody tried (FLAT_ABOVE_COST_SHARE). Not a
    guest whose curve a measured slope or its counters price: a hot/cold
    reader measured larger is probed toward its hot set as before (random
    host 9: capped, its steps shrank to a granule and it read 3% more).
    """
    return cliff_unplaced(curve) and flat_above_mb(curve) > 0


def unplaced_cliff_step(guest, cfg, params, curve):
    """MiB a probe toward a cliff_unplaced guest takes, or 0.

    A cliff_step from its size, as far again past the largest size it was
    measured reading as much at (:func:`flat_above_mb`): the cliff lies
    beyond that one too (random host 261: a uniform reader turned 1.8 GiB
    scan, which read as much at 1,856 MiB as at 1,600, gave 768 MiB away
    and read 19.4 GiB; probed past 1,856, it fits at 2,240 and reads 6.2).
    Within what it may grow this cycle; 0 where that does not reach past
    the largest.
    """
    step = cliff_step(guest, cfg, params, flat_below_mb(curve))
    above_mb = flat_above_mb(curve)
    if not above_mb:
        return step
    step = min(guards.room_up(guest, cfg), step + above_mb)
    step -= step % params.granule_mb
    return step if step > above_mb else 0


def fill_probe(host, cfg, params, curves, rooms):
    """A granule toward a guest whose cache's fill saved more, or None.

    A :func:`probe` bounded by :func:`_fill_bound`. It comes after the
    tie-break (:mod:`utility`): the fill's slope is a bound from sizes its
    cache passed on the way, a weaker sign than a size it held, and a
    granule taken on it ahead of a tie's wider step delayed the split
    (simulated real-lab at 80% hot share read 0.5% more).
    """
    return probe(host, cfg, params, curves, rooms, _fill_bound)


def _fill_bound(curve, guest, cfg, params):
    """(what its cache's last fill saved per MiB, (a granule,)), or None.

    Measured by the host's reads at the cache sizes the fill passed
    (fill_curve): over its last span, or where that fell within the
    noise, over the whole of a fill that began nearly empty (a slow
    reader's last span is too few requests to tell). On a concave curve
    no less than what the next MiB saves, as a measured slope below is:
    only for a guest with an agent measured at no smaller size, and only
    where it beats what its counters value the next MiB at. Once a size
    below is measured, that decides (wide host 109: a hot/cold reader
    whose hot set was in, its fill from empty pricing it at 0.92 MiB/s
    per GiB, was probed six times beside a uniform reader that lost 0.44
    per GiB and read more than static).
    """
    if guest.host_only or not _probeable(curve, guest, cfg, params):
        return None
    filled = fill_saving(curve)
    if filled <= curve.density_at(0)[0] * (1 + params.value_band):
        return None
    return filled, (params.granule_mb,)


def fill_saving(curve):
    """MiB/s per MiB its cache's last fill saved, or 0.0 (see _fill_bound).

    Over the fill's last span or, where that fell within the noise, the
    whole of a fill that began nearly empty. 0.0 once a smaller size was
    measured: that decides.
    """
    if _nearest_below(curve) is not None:
        return 0.0
    return curve.fill.slope or (
        curve.fill.mean if curve.fill.from_empty else None) or 0.0


def _probeable(curve, guest, cfg, params):
    """Whether a probe may measure a step toward the guest this window.

    Not while a resize echoes or its cache fills (the next size would not
    be measured), nor without a granule of room, nor on the window a new
    workload began (:func:`new_workload`).
    """
    return not (curve.resized or curve.filling
                or guards.room_up(guest, cfg) < params.granule_mb
                or new_workload(curve, guest))


def _slope_steps(curve, guest, room, params):
    """MiB a probe on a measured slope tries, largest first.

    Twice the span from the nearest smaller size measured to this one, at
    most a quarter of its cache and ``room``; then one granule, where the
    donors' loss over the wider step eats the saving. The slope held over
    that span, so the curve likely goes on rising past it: a reader over
    uniformly spread data saves as much per MiB all the way up, and
    granule probes, each waiting two windows to be measured, took an hour
    to give a GiB the measurements priced at once (random host 19: a 6 GiB
    scan turned uniform reader over 4 GiB, grown 64 MiB every two to four
    minutes from a hot/cold reader that lost a third as much per MiB or
    less: 1.09x the oracle, now 1.04x; random host 4: 1.06x, now 1.04x).
    Only one granule while its reads at this size still fall window by
    window beyond the noise: the slope is then partly the cache filling
    over time at one size, not a saving from the size below (random host
    16: a uniform reader over 2 GiB whose data already fitted, still
    filling its last blocks, took a doubled probe from a hot/cold
    reader).
    """
    g_mb = params.granule_mb
    if curve.disk_mb_s < (1 - mrc.NOISE_SHARE) * curve.here.disk_mb_s:
        return (g_mb,)
    span_mb = curve.size_mb - _nearest_below(curve).size_mb
    step = min(2 * span_mb, room,
               max(g_mb, guest.sample.file_lru_mb // 4))
    step -= step % g_mb
    return (step, g_mb) if step > g_mb else (g_mb,)


def new_workload(curve, guest):
    """Whether this window's reads showed a new workload (mrc.phase_at).

    That window measures a turn, not the new workload's curve: the
    measurements at other sizes were just dropped, and its cache still
    holds the old one's pages, so its reads move window by window at the
    same size. A probe on it takes a move in time for one with size
    (random host 70: a scan turned hot/cold reader read 1.97 MiB/s at
    1,536 MiB and 0.47 a window later at 1,600, and probes took 448 MiB
    from a neighbour whose cache held all it read, 1.12x static; random
    host 1355: a hot/cold reader turned 1.8 GiB scan, best never fitted,
    took 192 MiB on that window from another hot/cold reader and ties
    took 256 more, 1.15x static). Its next window measures the new
    workload at this size.
    """
    return curve.phase_at is not None and (
        curve.phase_at >= guest.sample.timestamp)


def _host_only_bound(curve, room, params):
    """:func:`_probe_bound` for a guest without an agent.

    It has nothing else to go by: its measured slope below, with steps that
    grow until a slope shows (host_only.next_step_mb), else the
    exploration prior (host_only.explore_bound). At least what it gave
    under a workload since replaced (host_only.restore_target), in one
    step: smaller steps measure nothing of a scan that fits only there.
    """
    slope = measured_slope_below(curve, 0.0)
    if slope is not None and slope > curve.density_at(0)[0] * (
            1 + params.value_band):
        found = slope, host_only.next_step_mb(curve, room, params)
    else:
        found = host_only.explore_bound(curve, params)
    restored = _restore_bound(curve, room, params)
    if restored is None or (found is not None and found[1] >= restored[1]):
        return found
    return max(found[0] if found else 0.0, restored[0]), restored[1]


def _restore_bound(curve, room, params):
    """(its reads over the step, MiB) back to ``curve.restore_mb``, or None.

    What it gave on evidence that expired (given_back), in one step within
    ``room``: smaller steps measure nothing of a scan that fits only there.
    """
    if curve.restore_mb is None:
        return None
    step = min(room, curve.restore_mb - curve.size_mb)
    step -= step % params.granule_mb
    if step < params.granule_mb:
        return None
    return curve.disk_mb_s / step, step


def cliff_step(guest, cfg, params, probed_mb=0):
    """MiB a probe toward an unplaced cliff tries.

    A quarter of its cache, or ``probed_mb`` (what steps toward it
    already took without a fall) if more. At least a granule, at most
    what it may grow (0: nothing).
    """
    g_mb = params.granule_mb
    step = min(guards.room_up(guest, cfg),
               max(g_mb, guest.sample.file_lru_mb // 4, probed_mb))
    return max(0, step - step % g_mb)


def cliff_unplaced(curve, share=1 - mrc.NOISE_SHARE,
                   activated=mrc.NOISE_SHARE):
    """Whether the guest's reuse lies beyond its cache, nobody knows where.

    Its reads are all refaults (``share`` of them, give or take) beyond
    its active list (none activated: at most ``activated`` of them), and
    no larger size was measured reading less (mrc.NOISE_SHARE): a scan
    larger than its cache, whose cliff lies within the shadow entries'
    reach, past every larger size it read as much at. The refault model
    spreads that over all the reach (next to nothing per MiB), but the
    memory it has is what the cliff is measured from (utility prices what
    it gives by that).
    """
    return (reads_as_scan(curve, share, activated)
            and not any(x.size_mb > curve.size_mb and x.disk_mb_s < (
                1 - mrc.NOISE_SHARE) * curve.disk_mb_s for x in curve.seen))


def flat_above_mb(curve):
    """MiB from the guest's size up to the largest it was measured at.

    0 where none was larger. Where cliff_unplaced holds, every one of
    them read as much as now.
    """
    return max((x.size_mb - curve.size_mb for x in curve.seen
                if x.size_mb > curve.size_mb), default=0)


def cliff_within_active(curve, active_mb):
    """Whether the guest re-reads all it reads just beyond its cache.

    Its reads are all refaults (give or take mrc.NOISE_SHARE) and all of
    those activated: each re-read a page evicted fewer evictions ago than
    its active list (``active_mb``) holds (mm/workingset.c), none from
    further back. A scan a little larger than its cache (its data cycling
    through the active list a hot set of its last workload filled), or a
    hot set a little larger: within the active list's size more, its
    reads end. The refault model spreads them over the whole active list.
    No larger size was measured, and no span that large below read as
    much: the claim was tried there, and the host belied it (forged-claims
    point seed-12: a stream that forged its counters so was probed from
    1,536 to 2,432 MiB, reading 4.0 MiB/s at each size).
    """
    noise = mrc.NOISE_SHARE
    return (curve.disk_mb_s > 0
            and curve.refault_mb_s >= (1 - noise) * curve.disk_mb_s
            and curve.activate_mb_s >= (1 - noise) * curve.refault_mb_s
            and not any(x.size_mb > curve.size_mb for x in curve.seen)
            and flat_below_mb(curve) < active_mb)


def reach_beyond_max(curve, guest):
    """Whether the guest's known reach puts its cliff beyond its maximum.

    Its first re-read placed the reach (first_reuse), and this window
    re-reads as that scan does (first_reuse.rereads_as_scan: a reach a
    phase change left behind is not taken for the workload's now). Used
    memory and that reach exceed its flavor memory, so no size it may
    have holds the scan (first_reuse.cliff places no cliff there), and
    its cliff is no longer unknown: neither a probe nor its price is owed
    to it.
    """
    return (curve.reach.reuse_mb is not None
            and guest.sample.used_mb + curve.reach.reuse_mb > guest.max_mb
            and first_reuse.rereads_as_scan(
                curve.disk_mb_s, curve.refault_mb_s, curve.activate_mb_s))


def reads_as_scan(curve, share, activated):
    """Whether the guest's reads refault as a scan's do.

    ``share`` or more of them refault, at most ``activated`` of those
    within its active list: re-reads of data larger than its cache (see
    :func:`cliff_unplaced`).
    """
    return not (curve.refault_mb_s < share * curve.disk_mb_s
                or curve.activate_mb_s > activated * curve.refault_mb_s
                or curve.disk_mb_s <= 0)


def flat_below_mb(curve):
    """MiB down to the smallest size measured reading as much as now.

    Nothing saved there (ValueCurve.measured_slope, beyond the noise):
    0 where no such size was measured.
    """
    here = curve.here
    flat = [curve.size_mb - x.size_mb for x in curve.seen
            if here is not None and x.size_mb < curve.size_mb
            and curve.measured_slope(x, here) == 0.0
            and x.disk_mb_s >= (1 - mrc.NOISE_SHARE) * here.disk_mb_s]
    return max(flat, default=0)
