"""Utility mode: move memory toward equal marginal value of cache.

The value of one more MiB to a guest is the disk reads it saves, as the
host measures them. Each guest's value curve (:mod:`cache_value`) has the
shape its kernel's refault counters give (mm/workingset.c) and is corrected,
both ways, by the points of its miss-ratio curve the host measured at the
sizes it held (:mod:`mrc`): a scan's cliff, a hot set larger than the
active list, a phase change. doc/source/strategies.rst says how, and what
it learns from (MEB, Geiger, the kernel's refault distance, Talus).

A plan, per host and audit cycle, prices scans' cliffs first
(:mod:`scan_cliffs`: placed by a scan's first re-read, or not yet), then
tries in turn:

1. Water-filling (:func:`_moves`): memory moves greedily, a segment at a
   time in ``granule_mb`` units, from the cheapest donor (first what the
   host may promise and no guest holds, :func:`_unheld_mb`) to the guest
   whose next MiB (on the curve's concave hull) saves the most, while the
   saving beats the loss by ``value_band`` (relative) and ``min_value`` (MiB/s
   per GiB): with a large enough step this lands where paper mode creeps
   in fixed steps, and the next cycle re-measures.
2. A trade (:mod:`cliff_trade`): a fitted scan's memory above its floor
   in one move, to the taker that saves more with it than the scan reads
   below its cliff, which granule by granule is never reached; or the
   free memory a first pass fills, to the taker that saves more with it
   than the pass reads.
3. A step past every size a guest without an agent was measured reading
   as much at (:func:`flat_search.search`), before the other probes take
   the span it read flat over. A probe (:func:`probes.probe`): one bounded
   step toward a guest whose measured reads fell more per MiB than its
   counters say, or whose reads are all refaults beyond its active list,
   measured next cycle; toward a stream too small to show a re-read
   (:func:`stream_probe.stream_probe`); or all a scan lacks to its placed
   cliff, from donors' active lists (:func:`cliff_probe.cliff_probe`),
   which only a measurement prices.
4. A tie broken by paper mode's steps (:func:`_tie_break`), where the
   counters cannot tell guests apart, only toward a guest that reads from
   disk and never from a donor whose zero value is not evidence yet.
5. A wide probe (:func:`wide_probes.wide_probe`): memory nobody was seen
   to use, in one step, toward a guest without an agent whose probes
   measured no fall (a cliff further than a step).

A resize echoes in the counters for a while (a guest shrunk refaults what
it lost, one grown is still filling), so within the rate window after a
balloon change a guest is not moved the other way.
"""

import dataclasses

from watcher_cams import accounting
from watcher_cams.policy import cache_value
from watcher_cams.policy import cache_window
from watcher_cams.policy import cams
from watcher_cams.policy import cliff_probe
from watcher_cams.policy import cliff_trade
from watcher_cams.policy import distrust
from watcher_cams.policy import donation
from watcher_cams.policy import exchange
from watcher_cams.policy import fill_curve
from watcher_cams.policy import first_reuse
from watcher_cams.policy import flat_search
from watcher_cams.policy import given_back
from watcher_cams.policy import grow_check
from watcher_cams.policy import guards
from watcher_cams.policy import host_only
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import probe_memory
from watcher_cams.policy import probes
from watcher_cams.policy import rest_hold
from watcher_cams.policy import scan_cliffs
from watcher_cams.policy import stale_active
from watcher_cams.policy import stream_probe
from watcher_cams.policy import touched_turn
from watcher_cams.policy import wide_probes

# Key of this policy's part of a guest's policy state.
STATE_KEY = mrc.STATE_KEY
# Which signal decided a move, in its reason: the host's block statistics
# at sizes the guest held, the guest's own counters, or a probe.
HOST_MEASURED = 'host-measured'
GUEST_REPORTED = 'guest-reported'
PROBE = probes.PROBE


@dataclasses.dataclass(frozen=True)
class UtilityParams:
    granule_mb: int = 64
    min_value: float = 0.1
    psi_protect: float = 10.0
    min_segment_mb: float = 64.0
    fill_horizon_s: float = 3600.0
    value_band: float = 0.2
    memory_s: float = 1800.0
    settle_s: float = 60.0
    # CPU seconds per second at or below which a guest that reads nothing
    # from disk reads (next to) nothing from its cache either
    # (mrc.cpu_idle).
    idle_cpu_s: float = 0.02

    def __post_init__(self):
        if self.granule_mb < 1:
            raise ValueError('granule_mb must be >= 1')
        if self.min_value < 0 or self.min_segment_mb <= 0:
            raise ValueError('min_value must be >= 0 and min_segment_mb > 0')
        if self.psi_protect < 0:
            raise ValueError('psi_protect must be >= 0')
        if (self.fill_horizon_s < 0 or self.memory_s < 0
                or self.settle_s < 0 or self.idle_cpu_s < 0):
            raise ValueError('fill_horizon_s, memory_s, settle_s and '
                             'idle_cpu_s must be >= 0')
        if not 0 <= self.value_band < 1:
            raise ValueError('value_band must be within [0, 1)')


def value_curve(guest, cfg, params=UtilityParams()):
    """The guest's value curve (cache_value.ValueCurve), or None.

    A guest without a guest agent gets a host_only.HostOnlyCurve.
    """
    if guest.host_only:
        r = model.rates(guest)
        if r is None or not guest.has_data:
            return None
        return host_only.value_curve(guest, r, cfg, params)
    return cache_value.value_curve(guest, cfg, params)


def _moves(host, cfg, params, curves, up):
    """Greedy water-filling.

    ``up``: what each guest may take (:func:`_up_rooms`). Returns
    ({uuid: delta_mb}, saved MiB/s, the uuids whose moves host-measured
    reads priced).
    """
    guests = {g.uuid: g for g in host.guests if g.uuid in curves}
    g_mb = params.granule_mb
    # Room at the start of the cycle; it shifts by exactly what has moved.
    # No reversal of a resize whose echo is still in the rates.
    down = _donor_rooms(host, cfg, curves, up)
    delta = dict.fromkeys(guests, 0)
    threshold = params.min_value / 1024.0  # per MiB moved
    saved, measured = 0.0, set()
    unheld = _unheld_mb(host, cfg, g_mb)
    market = exchange.Exchange(curves, delta, up, down, g_mb)
    while True:
        taker, gain, t_left = market.best_taker()
        if taker is None:
            break
        worth = gain > threshold
        amount = _unheld_amount(guests[taker], worth, (t_left, unheld), g_mb)
        donor, loss = None, 0.0
        if not amount:
            donor, loss, d_room = market.cheapest_donor(taker)
            if donor is None or gain - loss * (1 + _band(
                    params, curves, (taker, donor), delta)) <= threshold:
                # What it holds the host measured worth next to nothing
                # to it (random host 354), or memory nobody holds that it
                # may not have: the next taker may still be served.
                if not (curves[taker].loss_belied or (unheld and worth)):
                    break
                market.pass_over(taker)
                continue
            amount = _priced_amount(curves[donor], -delta[donor],
                                    (min(t_left, d_room), loss), g_mb)
        measured |= _priced_by_host(curves, delta, (taker, donor), amount)
        saved += curves[taker].gain(delta[taker] + amount) \
            - curves[taker].gain(delta[taker]) - amount * loss
        delta[taker] += amount
        if donor is None:
            unheld -= amount
        else:
            delta[donor] -= amount
        market.moved(*(u for u in (taker, donor) if u is not None))
    return delta, saved, measured


def _unheld_amount(taker, worth, rooms_mb, g_mb):
    """MiB a taker gets of memory nobody holds, in granules.

    ``rooms_mb``: (what it may take, what nobody holds). Only where its
    gain is ``worth`` it, and not to one that gave back for reading more
    with it (grow_check.undone_mb).
    """
    amount = min(rooms_mb) if worth and grow_check.undone_mb(
        taker) is None else 0
    return amount - amount % g_mb


def _priced_by_host(curves, delta, pair, amount_mb):
    """``pair``'s uuids where a measurement priced the move, else none.

    ``pair``: (taker, donor or None: memory nobody holds); the move:
    ``amount_mb`` from the one to the other.
    """
    taker, donor = pair
    if (curves[taker].gain_is_measured(delta[taker])
            or donor is not None and curves[donor].loss_is_measured(
                -delta[donor], amount_mb)):
        return {u for u in pair if u is not None}
    return set()


def _priced_amount(donor, offset_mb, wanted, g_mb):
    """MiB a donor gives: as far as its loss stays what was priced.

    ``offset_mb``: what it gave so far; ``wanted``: (MiB the taker may
    take from it, the loss per MiB priced).
    """
    amount, loss = wanted
    amount -= amount % g_mb
    while amount > g_mb and donor.loss_at(offset_mb, amount) > loss:
        amount -= g_mb
    return amount


def _unheld_mb(host, cfg, g_mb):
    """MiB the host may still promise that no guest holds, in granules.

    The host account's promisable memory (what the agent checks every
    grow against): capacity less what every guest holds, those this plan
    leaves alone included. It costs no guest a read: a taker
    gets it before any donor gives (the Balloon Controller's hosts: 512
    MiB beside two guests, one thrashing while the other was squeezed),
    unless it gave it back for reading more with it (grow_check.undone_mb).
    """
    free = accounting.account(host, cfg).promisable_mb
    return free - free % g_mb


def _band(params, curves, pair, delta):
    """The share by which a taker's saving must beat a donor's loss.

    ``value_band``, but none where the host measured the taker's saving
    and only the donor's counters price its loss, claiming that a little
    more memory would save all it reads: every read a refault and every
    refault activated (:func:`_cycles`). A scan a little larger than its
    cache claims so however far its cliff lies, and at that price it kept
    its memory beyond all the host could give it from a hot/cold reader
    measured to save a little more with it (random host 1355: 1.26x
    static). The move measures the claim in the next window. ``pair``:
    (taker, donor) uuids; ``delta``: {uuid: MiB moved so far}.
    """
    taker, donor = (curves[u] for u in pair)
    if (taker.gain_is_measured(delta[pair[0]])
            and not donor.loss_is_measured(-delta[pair[1]],
                                           params.granule_mb)
            and _cycles(donor)):
        return 0.0
    return params.value_band


def _cycles(curve):
    """Whether all a guest reads refaults, every refault activated.

    Within mrc.NOISE_SHARE, at mrc.READ_MB_S or more.
    """
    noise = 1 - mrc.NOISE_SHARE
    return (curve.disk_mb_s >= mrc.READ_MB_S
            and curve.refault_mb_s >= noise * curve.disk_mb_s
            and curve.activate_mb_s >= noise * curve.refault_mb_s)


def _on_the_way(host, cfg, curves):
    """``curves``, what a belied guest holds priced as its way up.

    A guest whose counters a step below belied (ValueCurve.loss_belied)
    reads as much when smaller, but what it holds may be its way to what
    more would save: a scan a granule short of a cliff the host measured
    (random host 756), or thrashing on its way to one (695). Its memory
    costs, per MiB, no less than the best mean saving over all it holds
    above its floor and what more the host could ever give it
    (guards.reachable_mb, every other guest at its floor). Where nothing
    more could ever come to it, the step below prices it alone (random
    host 354: a 1.8 GiB scan thrashing at 1,920 MiB).
    """
    out = dict(curves)
    for uuid, c in curves.items():
        if not c.loss_belied:
            continue
        guest = host.guest(uuid)
        reach_mb = guards.reachable_mb(host, guest, cfg) - guest.actual_mb
        if reach_mb <= 0:
            continue
        held_mb = max(0, guest.actual_mb - donation.kept_mb(guest, cfg))
        # The hull from its floor: what it holds saves nothing on its own.
        path = dataclasses.replace(c, segments=((held_mb, 0.0),) + (
            c.segments)).hull_at(0, held_mb + reach_mb)[0]
        if path > c.loss_density:
            out[uuid] = dataclasses.replace(c, loss_density=path)
    return out


def _up_rooms(host, cfg, curves, g_mb):
    """{uuid: MiB each guest may take}.

    Nothing to a guest whose shrink still echoes in its rates, nor to one
    that has not filled what it has: nothing says what more would save it
    until it did. No more than the data it read could fill
    (cache_window.read_room_mb).
    """
    rooms = dict.fromkeys(curves, 0)
    for u, c in curves.items():
        guest = host.guest(u)
        if c.resized >= 0 and (c.free_mb < g_mb
                               or _capped_short_of_cliff(c, guest, cfg)):
            rooms[u] = min(guards.room_up(guest, cfg),
                           int(cache_window.read_room_mb(guest, cfg)))
    return rooms


def _capped_short_of_cliff(curve, guest, cfg):
    """Whether a scan grown by all of max_step_mb still lacks its cliff.

    A confirmed scan (first_reuse.Reach.scanned_mb) grown by max_step_mb
    since the last plan (the size the policy state keeps) and still below
    the size it fits at (first_reuse.cliff): what it was given saves
    nothing until the rest comes, so the rest may come now, before its
    cache has filled what it has. Wide host 397: a 4.9 GiB scan got an
    idle neighbour's 2,048 MiB, stopped 51 MiB short of 5,171, and took
    nothing more until the neighbour came back (15.22 GiB read, static
    14.06; now 13.40). Only right after such a grow: a scan that fitted
    and then became a smaller workload reads nothing either, and a held
    cliff would keep what it was given while it filled (random host 112
    with any filling scan allowed: +23.47 GiB).
    """
    before = mrc.state_mb(guest, 'size_mb')
    if curve.reach.scanned_mb is None or before is None:
        return False
    found = first_reuse.cliff(curve, guest)
    return (found is not None and found[0] > guest.actual_mb
            and guest.actual_mb - before >= cfg.max_step_mb)


def _donor_rooms(host, cfg, curves, up):
    """{uuid: MiB each guest may give}: 0 for one whose grow still echoes.

    One whose reuse has not shown yet (:func:`_no_reuse_shown`) gives a
    step at a time (:func:`_first_pass_room`). ``up``: what each guest
    may take ({uuid: MiB}).
    """
    rooms = {}
    for u, c in curves.items():
        guest = host.guest(u)
        room = min(c.donate_mb, guards.room_down(guest, cfg))
        if _no_reuse_shown(c):
            room = min(room, _first_pass_room(host, cfg, curves, u, up))
        if first_reuse.unconfirmed(c):
            room = 0
        rooms[u] = room if c.resized <= 0 else 0
    return rooms


def _first_pass_room(host, cfg, curves, uuid, up):
    """MiB a guest whose reuse has not shown yet may give this cycle.

    A step (donation.step_mb): the next window measures it. And while
    a scan of all it read in its pass, fitted, would save more per MiB
    than the best other taker's next MiB (a bound: the scan may be
    longer still), no more than leaves its shadow entries the reach to
    show its re-read when it comes round (first_reuse.shadowed_room_mb).
    """
    c, guest = curves[uuid], host.guest(uuid)
    step = int(donation.step_mb(guest, cfg, c.free_mb
                                + cfg.floor_margin_mb))
    if c.reach.fresh_mb is None:
        return step
    fits_mb = guest.sample.used_mb + c.reach.fresh_mb
    scan = c.disk_mb_s / max(fits_mb - donation.kept_mb(guest, cfg),
                             1.0)
    best = max((curves[u].hull_at(0, up[u])[0] for u in curves
                if u != uuid and up[u]), default=0.0)
    if scan < best:
        return step
    return min(step, first_reuse.shadowed_room_mb(c.reach, guest))


def _no_reuse_shown(curve):
    """Whether a guest may be in a scan's first pass, its value unknown.

    It reads from disk, may be in a first pass (cache_window.first_pass)
    and re-read nothing in the window (not a refault: a reader of random
    blocks refaults a few), so its curve values its cache at nothing; and
    no read the host measured at a smaller size prices it. Not one that
    stopped reading (mrc.idle_since): no reuse comes round.
    """
    return (curve.first_pass and curve.idle_since is None
            and not curve.priced_below
            and curve.disk_mb_s >= mrc.READ_MB_S
            and curve.refault_mb_s <= mrc.IDLE_MB_S)


def _tie_break(host, cfg, params, curves):
    """CAMS's steps where the refault values do not say otherwise."""
    # Paper mode's own steps; where those no longer fit (the last granules
    # above a floor), the same pace in granules.
    steps = cams.plan(host, cfg, cams.CamsParams())
    if not steps.moves:
        paper = cams.CamsParams()
        granules = max(1, paper.step_mb * paper.max_steps
                       // params.granule_mb)
        steps = cams.plan(host, cfg, cams.CamsParams(
            pages_per_step=params.granule_mb, page_mb=1,
            max_steps=granules))
    takers = [m for m in steps.moves if m.target_mb > m.current_mb]
    donors = [m for m in steps.moves if m.target_mb < m.current_mb]
    if not takers or not donors:
        return None
    for t in takers:
        for d in donors:
            if not _tie_allowed(curves.get(t.instance), curves.get(
                    d.instance), (t.delta_mb, -d.delta_mb), params):
                return None
    steps.moves = [dataclasses.replace(
        m, reason='utility (%s), a tie broken by %s'
        % (GUEST_REPORTED, m.reason))
        for m in steps.moves]
    return steps


def _tie_allowed(taker, donor, amounts_mb, params):
    """Whether paper mode's step from ``donor`` to ``taker`` may be taken.

    ``amounts_mb``: (what the taker gets, what the donor gives).
    """
    threshold = params.min_value / 1024.0
    if taker is None or donor is None or taker.resized < 0 or (
            donor.resized > 0 or donor.first_pass
            or probes.cliff_unplaced(donor)
            or first_reuse.unconfirmed(donor)):
        return False
    if donor.quiet and taker.free_mb >= params.granule_mb:
        # An idle guest's memory is kept for its return, unless a taker
        # uses it now; one that has not filled what it has does not.
        return False
    if _free_outlasts_memory(taker, params) or _measured_flat_above(
            taker, amounts_mb[0]) or _active_list_belied(taker):
        return False
    if taker.disk_mb_s / amounts_mb[0] <= threshold:
        # It cannot save more than it reads.
        return False
    if _read_more_below(donor, amounts_mb[1]):
        return False
    gain = _tie_gain(taker)
    if not donor.filling:
        if _filling_what_it_was_given(taker):
            # The reuse its cache showed while it filled: where the
            # counters value nothing beyond an active list its hot set
            # outgrew.
            gain = max(gain, taker.fill_density)
        loss = donor.loss_at(0, amounts_mb[1])
        return gain >= loss * (1 - params.value_band) - threshold
    # A donor with free memory has evicted nothing: only what its cache
    # served while it filled says anything of it, and only when it read
    # more than it can hold (a scan's first pass re-reads nothing either).
    # It gives only when that is below min_value, the bar under which this
    # policy calls memory worthless: refaults at a smaller size would
    # overvalue a guest that never showed its value at this one (real
    # kernels keep shadow entries for several cache sizes).
    if taker.filling and taker.fill_density is not None:
        gain = max(gain, taker.fill_density)
    return not (donor.fill_density is None
                or donor.capacity_mb > donor.disk_mb_s * donor.window_s
                or donor.fill_density > threshold
                or gain - donor.fill_density * (1 + params.value_band)
                <= threshold)


def _read_more_below(donor, amount_mb):
    """Whether the host measured the donor reading more where a step goes.

    At a size below its own, no further below what the step of
    ``amount_mb`` reaches than mrc.EMPIRICAL_REACH_MB (as measured_loss
    weighs one), more than it reads now by mrc.NOISE_SHARE and
    mrc.READ_MB_S. A tie is where the counters cannot tell the guests
    apart; the host's reads can, even in a window a shrink's echo still
    blurs, where the curve has no measurement at its size to go by (such
    a window may read less than the guest will there: the veto then
    keeps memory it might have given, never gives memory it should have
    kept). Wide host 64: a
    fitted 1.6 GiB scan at 1,920 MiB, reading nothing, measured at 1,664
    reading 1 MiB/s, was taken to 384 MiB in five ties and read 1 MiB/s
    for 35 minutes.
    """
    bottom = donor.size_mb - amount_mb
    return any(bottom - mrc.EMPIRICAL_REACH_MB <= x.size_mb < donor.size_mb
               and x.disk_mb_s > (1 + mrc.NOISE_SHARE) * donor.disk_mb_s
               + mrc.READ_MB_S
               for x in donor.seen)


def _active_list_belied(taker):
    """Whether a step an active list long below read as much as here.

    Paper mode's steps follow the active list a guest reports, its
    tenant's claim (forged-claims point seed-19: a stream that forged a
    small active list got 1,280 MiB in three ties, reading 4.0 MiB/s at
    every size). Activations promise that list's worth of memory saves
    them; where the host measured a step at least that long (and
    mrc.EMPIRICAL_REACH_MB) below reading as much, give or take
    mrc.NOISE_SHARE, the claim is belied. Not a shorter step: a scan a
    little short of its cliff reads as much a little smaller (random host
    756: 12 MiB short at 2,368 MiB, measured at 5 sizes down to 1,536).
    """
    here = taker.here
    if here is None:
        return False
    return mrc.read_as_much_below(
        taker.seen, here.size_mb, here.disk_mb_s,
        max(mrc.EMPIRICAL_REACH_MB, here.length_mb))


def _free_outlasts_memory(taker, params):
    """Whether a taker's free memory lasts longer than ``memory_s``.

    Its cache fills no faster than it reads from disk, so memory it takes
    now serves no read before then, while the donor loses its hits from
    the start; and by then what this policy measured of both has expired
    and the tie is weighed again on fresh windows. (CAMS grid at 1 GB: a
    hot/cold reader whose range fits its cache took a terabyte reader's
    memory while its cold blocks still trickled in, and read more than
    static in all.)
    """
    return taker.free_mb > max(params.granule_mb,
                               taker.disk_mb_s * params.memory_s)


def _measured_flat_above(taker, amount_mb):
    """Whether the host measured the taker read as much ``amount_mb`` up.

    At every size that much larger or more where it was measured over two
    windows or more, as much or within the spread of the two measurements:
    its reads do not fall over the step, so the step saves nothing,
    whatever its counters claim. Random host 1355: a scan of 1.8 GiB read
    8.0 MiB/s at 1,600 MiB and at 1,728; its refaults took back, every five
    minutes, the 128 MiB the host's reads had moved to a neighbour that
    read less with them. Not from a measurement within the step (a scan's
    cliff may lie beyond it), nor from one window (it reads part of a
    scan's period: random host 261, one at 2,240 MiB read 3.35 MiB/s and
    the scan fitted at 2,112), nor where one further up read clearly less
    (random seed 10: a uniform reader's noisy windows 192 MiB up).
    """
    here = taker.reads_here
    if here is None:
        return False
    larger = [x for x in taker.seen
              if x.size_mb >= here.size_mb + amount_mb and x.count >= 2]
    return bool(larger) and all(
        x.disk_mb_s >= here.disk_mb_s or mrc.within_spread(x, here)
        for x in larger)


def _tie_gain(taker):
    """What the taker's next MiB saves, for a tie: its counters' value.

    Or, once its cache filled at a size no smaller one was measured at,
    what its reads fell per MiB as it filled (probes.fill_saving), where
    that is more: measured by the host, as a fill probe's bound is, and
    with it the tie takes its wider step where the fill probe would take a
    granule. Real-lab at 90% hot share: the fill over the hot/cold
    guest's last 128 MiB saved 7.7 MiB/s per GiB, its counters valued the
    next MiB at 1.3 beside the uniform reader's 2.1, and a granule, a tie
    of 128 MiB a window later and a probe at 330 s followed; 1.5825 GiB
    read against paper mode's 1.5731, now 1.5734 (the tie at 150 s).
    """
    gain = taker.density_at(0)[0]
    if taker.filling:
        return gain
    return max(gain, probes.fill_saving(taker))


def _filling_what_it_was_given(curve):
    """Whether a grown guest still fills, re-reading what it cached.

    What its cache served meanwhile (cache_window.fill_density) then
    prices a tie against a donor whose cache is full: waiting for the
    fill, no clean window would measure it before the fill ends anyway,
    and it would be short of memory for as many minutes as its cold reads
    take to fill it. A guest never grown waits for its first clean
    window, which probes measure from.
    """
    return (curve.filling and curve.fill_density is not None
            and curve.last_resize is not None and curve.last_resize[1] > 0)


def _giving_back(host, cfg, curves):
    """{uuid: (MiB, reason)} for guests that give back, taker or not.

    Those that read more since this policy grew them: the memory cost
    them reads (grow_check). And those whose counters the host belied,
    measured reading as much smaller (distrust.paid_for_nothing). Down to
    no lower than their floor (a guest already at it gives nothing).
    """
    worse = {u: max(c.reads_less_at, donation.kept_mb(host.guest(u), cfg))
             for u, c in sorted(curves.items())
             if c.reads_less_at is not None}
    out = {u: (mb, 'read less at %d MiB than since it grew, gives back to '
               'there' % mb)
           for u, mb in worse.items() if mb < host.guest(u).actual_mb}
    for u, mb in distrust.paid_for_nothing(host, cfg, curves).items():
        if mb < out.get(u, (host.guest(u).actual_mb,))[0]:
            out[u] = (mb, 'read as much at %d MiB, its counters belied, '
                      'gives back to there' % mb)
    return out


def _traded(host, cfg, params, market, states):
    """(delta, saved, measured, note) of a block's trade, or None.

    A fitted scan's memory or a first pass's free memory (cliff_trade).
    ``market``: (curves, what each guest may take). A scan that gives
    keeps what it traded in its policy state (``states``); ``note`` says
    the trade's terms in the moves' reasons. ``measured`` is None for a
    trial (cliff_trade.unplaced_refaults_mb_s): a probe decided it.
    """
    curves, up = market
    found = cliff_trade.trade(host, cfg, params, curves, up,
                              lambda c, u: _moves(host, cfg, params, c, u))
    if found is None:
        return None
    cliff, reads = found.block.cliff, found.block.reads_mb_s
    if cliff is None:
        # A first pass's free memory is lent: it comes back, at what the
        # pass reads, once the taker no longer holds it.
        record = cliff_trade.loan(host.guest(found.donor), reads,
                                  int(-found.delta[found.donor]))
        what = "a first pass's %.3f" % reads
    else:
        record = list(cliff)
        what = "a fitted scan's %.3f below %d MiB" % (reads, cliff[0])
    states[found.donor][STATE_KEY][cliff_trade.STATE_KEY] = record
    if found.trial:
        taker = next(u for u, mb in found.delta.items() if mb > 0)
        states[taker][STATE_KEY][cliff_trade.TRIAL_KEY] = (
            host.guest(taker).sample.timestamp)
    note = ', a %s: saves %s%.3f MiB/s for %s' % (
        'trial trade' if found.trial else 'trade',
        'up to ' if found.trial else '', found.saved + reads, what)
    return found.delta, found.saved, (
        None if found.trial else found.measured), note


def _signal(uuid, measured):
    """Which signal decided ``uuid``'s move (see :func:`_traded`)."""
    if measured is None:
        return PROBE
    return HOST_MEASURED if uuid in measured else GUEST_REPORTED


def _proposals(host, curves, moved, back):
    """{uuid: (target MiB, reason)} for guards.finalize.

    ``moved``: ({uuid: MiB}, the uuids host-measured reads priced or None
    for a probe's, what the reasons add: a trade's terms, or '');
    ``back``: as :func:`_giving_back` returns.
    """
    delta, measured, note = moved
    proposals = {}
    for uuid, d in delta.items():
        if d:
            density = curves[uuid].density_at(0)[0] * 1024
            proposals[uuid] = (
                host.guest(uuid).actual_mb + d,
                'utility (%s): value %.3f MiB/s per GiB, %s %d MiB%s'
                % (_signal(uuid, measured), density,
                   'gets' if d > 0 else 'gives', abs(d), note))
    for uuid, (target, why) in back.items():
        current = proposals.get(uuid, (host.guest(uuid).actual_mb,))[0]
        proposals[uuid] = (min(current, target),
                           'utility (%s): %s' % (HOST_MEASURED, why))
    return proposals


def _remember(host, curves, params):
    """Policy state: measurements (this cycle's too), size, last resize."""
    return {uuid: {STATE_KEY: _state_of(host.guest(uuid), c, params)}
            for uuid, c in curves.items()}


def _state_of(guest, c, params):
    """The policy state one guest keeps from this cycle (_remember)."""
    seen = c.seen or c.dormant
    state = {'seen': [s.to_list() for s in seen], 'size_mb': c.size_mb,
             'at': guest.sample.timestamp}
    if c.last_resize is not None:
        state['last_resize'] = list(c.last_resize)
    if c.idle_since is not None:
        state['idle_since'] = c.idle_since
    if c.activated_base is not None:
        state[stale_active.BASE_KEY] = c.activated_base
    given_back.remember(state, c)
    state.update(probe_memory.carried(guest, params))
    distrust.remember(state, c, guest, params)
    grow_check.remember_undone(state, c, guest)
    fill_curve.remember(state, c.fill)
    confirmed_at, up_to_mb = c.borne_out
    if confirmed_at is not None:
        state['confirmed_at'] = confirmed_at
        if up_to_mb is not None:
            state[mrc.BORNE_OUT_KEY] = up_to_mb
    if c.phase_at is not None:
        state['phase_at'] = c.phase_at
    if c.traded is not None:
        state[cliff_trade.STATE_KEY] = list(c.traded)
    tried = cliff_trade.last_trial(guest)
    if tried is not None:
        state[cliff_trade.TRIAL_KEY] = tried
    if c.resumed_from is not None:
        state['resumed_from'] = c.resumed_from
    if c.full_base is not None:
        state[grow_check.BASE_KEY] = c.full_base.to_list()
    for key, value in ((rest_hold.STATE_KEY, c.rest_since),
                       (rest_hold.HELD_KEY, c.reread_mb),
                       (rest_hold.RETURNED_KEY, c.returned_at),
                       (rest_hold.RESTED_KEY, c.rested_s)):
        if value is not None:
            state[key] = value
    if not (c.resized or c.filling or c.idle_since is not None):
        # What a grow this plan decides is checked against.
        state['reads_mb_s'] = round(c.disk_mb_s, 4)
    if c.grow_pending is not None:
        state['grown_from'] = list(c.grow_pending)
    state.update(c.reach.to_state())
    touched_turn.remember(state, guest, (
        c.disk_mb_s >= mrc.READ_MB_S and not c.quiet
        and c.idle_since is None))
    return state


def _explored(host, cfg, params, curves, rooms):
    """The first probe's or tie's plan with a move left, or None.

    None of them grows a guest whose counters the host belied
    (distrust.held): each follows what those counters say. A plan the
    guards left without a move (guards.finalize) gives the next one its
    turn: it would have blocked every other for the cycle.
    """
    for explore in (flat_search.search, probes.probe,
                    stream_probe.stream_probe, cliff_probe.cliff_probe,
                    lambda *a: _tie_break(*a[:4]), probes.fill_probe,
                    wide_probes.wide_probe):
        found = explore(host, cfg, params, curves, rooms)
        if found is not None and found.moves and not distrust.grows_held(
                host, found):
            return found
    return None


def plan(host: model.HostView, cfg: guards.GuardConfig,
         params: UtilityParams = UtilityParams()) -> model.Plan:
    curves = {}
    # What the host belied of a guest's active list counts for nothing.
    host = distrust.believed(host)
    for g in host.guests:
        curve = value_curve(g, cfg, params)
        if curve is not None:
            curves[g.uuid] = curve
    states = _remember(host, curves, params)
    curves = distrust.host_priced(host, curves)
    # Pricing scans' cliffs leaves what decides these rooms as it was.
    up = distrust.measured_rooms(host, curves, _up_rooms(
        host, cfg, curves, params.granule_mb))
    curves = scan_cliffs.weighed(host, cfg, params, scan_cliffs.priced(
        host, cfg, params, _on_the_way(host, cfg, curves)), up)
    delta, saved, measured = _moves(host, cfg, params, curves, up)
    back, note = _giving_back(host, cfg, curves), ''
    if not any(delta.values()) and not back:
        delta, saved, measured, note = _traded(
            host, cfg, params, (curves, up), states) or (
                delta, saved, measured, note)
    if not any(delta.values()) and not back:
        other = _explored(host, cfg, params, curves,
                          _donor_rooms(host, cfg, curves, up))
        if other is not None:
            for uuid, recorded in other.policy_state.items():
                states[uuid][STATE_KEY].update(recorded)
            other.policy_state = states
            return other
    proposals = _proposals(host, curves, (delta, measured, note),
                           back)
    result = model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))
    result.predicted_reads_avoided_mb_s = max(0.0, saved)
    result.policy_state = states
    return result
