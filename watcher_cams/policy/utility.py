"""Utility mode: move memory toward equal marginal value of cache.

The value of one more MiB to a guest is the disk reads it saves, as the
host measures them. Each guest's value curve (:mod:`cache_value`) has the
shape its kernel's refault counters give (mm/workingset.c) and is corrected,
both ways, by the points of its miss-ratio curve the host measured at the
sizes it held (:mod:`mrc`): a scan's cliff, a hot set larger than the
active list, a phase change. doc/source/strategies.rst says how, and what
it learns from (MEB, Geiger, the kernel's refault distance, Talus).

A plan, per host and audit cycle, tries in turn:

1. Water-filling (:func:`_moves`): memory moves greedily, a segment at a
   time in ``granule_mb`` units, from the cheapest donor to the guest whose
   next MiB (on the curve's concave hull) saves the most, while the saving
   beats the loss by ``value_band`` (relative) and ``min_value`` (MiB/s
   per GiB): with a large enough step this lands where paper mode creeps
   in fixed steps, and the next cycle re-measures.
2. A probe (:func:`_probe`): one bounded step toward a guest whose
   measured reads fell more per MiB than its counters say, or whose reads
   are all refaults beyond its active list, measured next cycle.
3. A tie broken by paper mode's steps (:func:`_tie_break`), where the
   counters cannot tell guests apart, only toward a guest that reads from
   disk and never from a donor whose zero value is not evidence yet.

A resize echoes in the counters for a while (a guest shrunk refaults what
it lost, one grown is still filling), so within the rate window after a
balloon change a guest is not moved the other way.
"""

import dataclasses

from watcher_cams.policy import cache_value
from watcher_cams.policy import cams
from watcher_cams.policy import exchange
from watcher_cams.policy import guards
from watcher_cams.policy import host_only
from watcher_cams.policy import model
from watcher_cams.policy import mrc

# Key of this policy's part of a guest's policy state.
STATE_KEY = mrc.STATE_KEY
# Which signal decided a move, in its reason: the host's block statistics
# at sizes the guest held, the guest's own counters, or a probe.
HOST_MEASURED = 'host-measured'
GUEST_REPORTED = 'guest-reported'
PROBE = 'probe'
# Share of its reads a guest refaults, none activated, from which its
# unplaced cliff prices what it gives (a probe needs 1 - mrc.NOISE_SHARE):
# a scan refaults all it reads only a window after it began to.
DONOR_SHARE = 0.25


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


def _moves(host, cfg, params, curves):
    """Greedy water-filling.

    Returns ({uuid: delta_mb}, saved MiB/s, the uuids whose moves
    host-measured reads priced).
    """
    guests = {g.uuid: g for g in host.guests if g.uuid in curves}
    g_mb = params.granule_mb
    # Room at the start of the cycle; it shifts by exactly what has moved.
    # No reversal of a resize whose echo is still in the rates. Nothing to
    # a guest that has not filled what it has: nothing says what more
    # would save it until it did.
    up = {u: guards.room_up(g, cfg)
          if curves[u].resized >= 0 and curves[u].free_mb < g_mb else 0
          for u, g in guests.items()}
    down = _donor_rooms(host, cfg, curves)
    delta = dict.fromkeys(guests, 0)
    threshold = params.min_value / 1024.0  # per MiB moved
    saved, measured = 0.0, set()
    market = exchange.Exchange(curves, delta, up, down, g_mb)
    while True:
        taker, gain, t_left = market.best_taker()
        donor, loss, d_room = market.cheapest_donor(taker)
        if donor is None or gain - loss * (1 + params.value_band) <= (
                threshold):
            break
        amount = min(t_left, d_room)
        amount -= amount % g_mb
        # Only as far as the donor's loss stays what was priced.
        while (amount > g_mb and curves[donor].loss_at(
                -delta[donor], amount) > loss):
            amount -= g_mb
        if (curves[taker].gain_is_measured(delta[taker])
                or curves[donor].loss_is_measured(-delta[donor], amount)):
            measured.update((taker, donor))
        saved += curves[taker].gain(delta[taker] + amount) \
            - curves[taker].gain(delta[taker]) - amount * loss
        delta[taker] += amount
        delta[donor] -= amount
        market.moved(taker, donor)
    return delta, saved, measured


def _donor_rooms(host, cfg, curves):
    """{uuid: MiB each guest may give}: 0 for one whose grow still echoes."""
    return {u: min(c.donate_mb, guards.room_down(host.guest(u), cfg))
            if c.resized <= 0 else 0 for u, c in curves.items()}


def _cheapest_probe_donor(curves, down, need_mb, taker):
    """(uuid, loss per MiB, MiB it may give) for a probe of ``need_mb``.

    The guest other than ``taker`` that can give ``need_mb`` at the least
    loss, priced by ValueCurve.probe_loss_at (a loss never measured by its
    exploration prior); Nones when none can.
    """
    donor, loss, room = None, 0.0, 0
    for u in sorted(curves):
        if u != taker and down[u] >= need_mb:
            u_loss = _probe_loss(curves[u], need_mb)
            if donor is None or u_loss < loss:
                donor, loss, room = u, u_loss, down[u]
    return donor, loss, room


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
            or _cliff_unplaced(donor)):
        return False
    if donor.quiet and taker.free_mb >= params.granule_mb:
        # An idle guest's memory is kept for its return, unless a taker
        # uses it now; one that has not filled what it has does not.
        return False
    if taker.disk_mb_s / amounts_mb[0] <= threshold:
        # It cannot save more than it reads.
        return False
    gain = taker.density_at(0)[0]
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


def _filling_what_it_was_given(curve):
    """Whether a grown guest still fills, re-reading what it cached.

    What its cache served meanwhile (cache_value._fill_density) then
    prices a tie against a donor whose cache is full: waiting for the
    fill, no clean window would measure it before the fill ends anyway,
    and it would be short of memory for as many minutes as its cold reads
    take to fill it. A guest never grown waits for its first clean
    window, which probes measure from.
    """
    return (curve.filling and curve.fill_density is not None
            and curve.last_resize is not None and curve.last_resize[1] > 0)


def _measured_slope_below(curve, noise_share):
    """Reads saved per MiB from the nearest smaller measured size, or None.

    Between that size and this one: an upper bound of the next MiB's worth
    on a concave curve, and the best local guess where the counters cannot
    see (a hot set larger than the active list). None too when the reads
    fell by less than ``noise_share`` of them: within the disk rates'
    noise, no evidence of a slope.
    """
    here = curve.here
    below = [x for x in curve.seen[1:] if x.size_mb < curve.size_mb]
    if here is None or not below:
        return None
    nearest = max(below, key=lambda x: x.size_mb)
    if nearest.disk_mb_s - here.disk_mb_s < noise_share * nearest.disk_mb_s:
        return None
    return curve.measured_slope(here, nearest)


def _probe(host, cfg, params, curves):
    """A bounded step toward a guest worth more than its counters say, or None.

    Where the step goes and how large it is: :func:`_probe_bound`.

    Bounded: one step per host and cycle, from the donor whose loss is
    lowest and only while the measured bound beats it. The next clean
    window measures the new size: reads that fell bear the probe out and
    the next one may follow; reads that did not make the granule the
    cheapest memory this guest has, and the water-filling takes it back.
    """
    threshold = params.min_value / 1024.0
    taker, bound, amount = None, 0.0, 0
    for u, c in sorted(curves.items()):
        found = _probe_bound(c, host.guest(u), cfg, params)
        if found is not None and found[0] > bound:
            taker, (bound, amount) = u, found
    if taker is None:
        return None
    down = _probe_donor_rooms(host, cfg, curves)
    donor, amount, loss = _probe_donor(curves, down, taker, amount, params)
    # It cannot save more than it reads.
    bound = min(bound, curves[taker].disk_mb_s / max(amount, 1))
    if donor is None or bound - loss * (1 + params.value_band) <= threshold:
        return None
    # What it costs, at most: the donor's reads the amount may add (for a
    # guest without an agent never measured smaller, an estimate).
    known = curves[donor].loss_at(0, amount) != host_only.UNKNOWN
    why = ('utility (%s): measured up to %.3f MiB/s per GiB, the donor '
           '%.3f; costs %s %.3f MiB/s of reads'
           % (PROBE, bound * 1024, loss * 1024,
              'at most' if known else 'an estimated', loss * amount))
    proposals = {taker: (host.guest(taker).actual_mb + amount, why),
                 donor: (host.guest(donor).actual_mb - amount, why)}
    return model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))


def _probe_donor_rooms(host, cfg, curves):
    """{uuid: MiB each guest may give a probe}.

    What it may give the water-filling, but nothing from a cache still
    filling (its value is not measured yet) unless it fills only its
    last free memory, the floor margin: a slow reader fills that for as
    many minutes as its reads take, and a scan whose cliff is measured
    would wait as long. Such a cache's inactive list may go: what those
    pages served shows in its activations and in what its cache served
    while it filled, which price the probe (:func:`_probe_loss`). Not
    from a guest that may be in a scan's first pass (its reuse has not
    shown), nor from one without a guest agent (nothing shows it).
    """
    rooms = _donor_rooms(host, cfg, curves)
    for u, c in curves.items():
        if not c.filling:
            continue
        guest = host.guest(u)
        rooms[u] = 0
        if not (c.resized > 0 or c.first_pass or c.free_mb
                or guest.host_only):
            inactive = guest.actual_mb - cache_value.kept_mb(
                guest, cfg, guest.sample.active_file_mb)
            rooms[u] = max(0, min(int(inactive),
                                  guards.room_down(guest, cfg)))
    return rooms


def _probe_loss(curve, amount_mb):
    """A probe donor's loss per MiB for ``amount_mb`` (see above)."""
    loss = curve.probe_loss_at(0, amount_mb)
    if curve.filling and curve.fill_density is not None:
        loss = max(loss, curve.fill_density)
    return loss


def _probe_donor(curves, down, taker, amount, params):
    """(donor, MiB, its loss per MiB) for a probe of ``amount``, or Nones.

    The cheapest guest that can give all of it or, where none can, as much
    of it as one can (a step measured all the same).
    """
    donor, loss, _ = _cheapest_probe_donor(curves, down, amount, taker)
    if donor is not None:
        return donor, amount, loss
    g_mb = params.granule_mb
    donor, _, room = _cheapest_probe_donor(curves, down, g_mb, taker)
    if donor is None:
        return None, 0, 0.0
    amount = min(amount, room - room % g_mb)
    return donor, amount, _probe_loss(curves[donor], amount)


def _probe_bound(curve, guest, cfg, params):
    """(what the next MiB may be worth, MiB to probe) for a guest, or None.

    Where its host-measured reads fell more per MiB below its size than its
    counters value the next MiB: that slope, one granule. Where its reads
    are all refaults beyond its active list (none activated) and no larger
    size was measured: its reuse lies somewhere within the shadow entries'
    reach, as a scan a little larger than its cache does (a cliff the
    counters cannot place); up to a quarter of its cache more, valued as if
    the cliff were within it.
    """
    g_mb = params.granule_mb
    room = guards.room_up(guest, cfg)
    if curve.resized or curve.filling or room < g_mb:
        return None
    # A guest without an agent has nothing else to go by, and its probes'
    # steps grow until a slope shows (host_only.next_step_mb).
    slope = _measured_slope_below(
        curve, 0.0 if guest.host_only else mrc.NOISE_SHARE)
    if slope is not None and slope > curve.density_at(0)[0] * (
            1 + params.value_band):
        if guest.host_only:
            return slope, host_only.next_step_mb(curve, room, params)
        return slope, g_mb
    if guest.host_only:
        return host_only.explore_bound(curve, params)
    step = _cliff_step(guest, cfg, params)
    if not _cliff_unplaced(curve):
        return None
    return curve.refault_mb_s / step, step


def _cliff_step(guest, cfg, params):
    """MiB a probe toward an unplaced cliff tries: a quarter of its cache.

    At least a granule, at most what it may grow (0: nothing).
    """
    g_mb = params.granule_mb
    step = min(guards.room_up(guest, cfg),
               max(g_mb, guest.sample.file_lru_mb // 4))
    return max(0, step - step % g_mb)


def _cliffs_priced(host, cfg, params, curves):
    """``curves``, an unplaced cliff pricing what its guest would give.

    A guest whose reads refault beyond its active list (DONOR_SHARE of
    them or more) and that was never measured larger has its reuse
    somewhere within its shadow entries' reach; the refault model spreads
    that over all the reach (next to nothing per MiB). Shrunk, its shadow
    entries would no longer reach that reuse, and nothing would show it
    again: what it gives costs, per MiB, what a probe toward it is valued
    at (its refaults over one step). Not once it may not grow: its reuse
    lies beyond what it can have.
    """
    out = dict(curves)
    for u, c in curves.items():
        step = _cliff_step(host.guest(u), cfg, params)
        if step and _cliff_unplaced(c, DONOR_SHARE):
            out[u] = dataclasses.replace(c, loss_density=max(
                c.loss_density, c.refault_mb_s / step))
    return out


def _cliff_unplaced(curve, share=1 - mrc.NOISE_SHARE):
    """Whether the guest's reuse lies beyond its cache, nobody knows where.

    Its reads are all refaults (``share`` of them, give or take) beyond
    its active list (none activated), and no larger size was measured: a
    scan larger than its cache, whose cliff lies within the shadow
    entries' reach. The refault model spreads that over all the reach
    (next to nothing per MiB), but the memory it has is what the cliff is
    measured from (:func:`_cliffs_priced`).
    """
    return not (curve.refault_mb_s < share * curve.disk_mb_s
                or curve.activate_mb_s > mrc.NOISE_SHARE * curve.refault_mb_s
                or curve.disk_mb_s <= 0
                or any(x.size_mb > curve.size_mb for x in curve.seen))


def _remember(host, curves):
    """Policy state: measurements (this cycle's too), size, last resize."""
    states = {}
    for uuid, c in curves.items():
        seen = c.seen or c.dormant
        state = {'seen': [s.to_list() for s in seen], 'size_mb': c.size_mb,
                 'at': host.guest(uuid).sample.timestamp}
        if c.last_resize is not None:
            state['last_resize'] = list(c.last_resize)
        if c.idle_since is not None:
            state['idle_since'] = c.idle_since
        if c.confirmed_at is not None:
            state['confirmed_at'] = c.confirmed_at
        if c.resumed_from is not None:
            state['resumed_from'] = c.resumed_from
        states[uuid] = {STATE_KEY: state}
    return states


def plan(host: model.HostView, cfg: guards.GuardConfig,
         params: UtilityParams = UtilityParams()) -> model.Plan:
    curves = {}
    for g in host.guests:
        curve = value_curve(g, cfg, params)
        if curve is not None:
            curves[g.uuid] = curve
    states = _remember(host, curves)
    curves = _cliffs_priced(host, cfg, params, curves)
    delta, saved, measured = _moves(host, cfg, params, curves)
    if not any(delta.values()):
        other = (_probe(host, cfg, params, curves)
                 or _tie_break(host, cfg, params, curves))
        if other is not None:
            other.policy_state = states
            return other
    proposals = {}
    for uuid, d in delta.items():
        if d:
            guest = host.guest(uuid)
            density = curves[uuid].density_at(0)[0] * 1024
            proposals[uuid] = (
                guest.actual_mb + d,
                'utility (%s): value %.3f MiB/s per GiB, %s %d MiB'
                % (HOST_MEASURED if uuid in measured else GUEST_REPORTED,
                   density, 'gets' if d > 0 else 'gives', abs(d)))
    result = model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))
    result.predicted_reads_avoided_mb_s = max(0.0, saved)
    result.policy_state = states
    return result
