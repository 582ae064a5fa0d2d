"""A search past every size a flat reader without an agent held.

A guest without a guest agent is measured only by its reads at the sizes
it held (:mod:`host_only`). One that read as much at every one of them
is a stream over far more data than it caches, or a scan whose cliff
lies past the largest: nothing but its reads at a size past that one
tells the two apart, and the probes (:mod:`probes`) stop short of it:
single steps measure nothing, and a wide probe goes no further than the
largest size once measured. This step goes there, as far again as the
span already measured flat, so a cliff a few GiB away is found in a few
steps, each measured before the next; the water-filling (:mod:`utility`)
takes back a step that did not pay.

It comes before the other probes (:mod:`utility`): they price the span a
flat reader was measured over at nothing, and took it for others before
its search went on (mixed-12 without agents: a scan that fits in 2.7 GiB,
grown to 2.4 GiB from idle guests' memory and measured flat, gave it all
back a probe at a time and read 58 GiB).
"""

from watcher_cams.policy import guards
from watcher_cams.policy import host_only
from watcher_cams.policy import mrc
from watcher_cams.policy import probes
from watcher_cams.policy import wide_probes


def search(host, cfg, params, curves, rooms):
    """A step past every size a flat reader without an agent held, or None.

    As far past it again as the span measured flat (at least
    wide_probes.WIDE_GRANULES), so each step doubles the span searched (random
    host 173 without agents: a 1,382 MiB scan measured flat from 384 to
    1,536 MiB read 6 MiB/s for the rest of the run). Toward the guest
    that reads most per MiB of its step, from the cheapest memory its
    donors' curves price (:func:`_search_room_mb`), where all of it costs
    them at most probes.NEW_WORKLOAD_COST_SHARE of the taker's reads: a
    scan that fits saves all of them for as long as it runs, a stream
    gives the step back within a few windows. Only memory priced within
    that share spread over the whole step: where the cheapest memory for
    all of it costs more, the step is what is priced within it (mixed-12
    without agents, its guests' reads drawn anew: 64 MiB a hot/cold
    reader's fill priced at 2.9 MiB/s per GiB kept a scan that fits from
    a step of 1 GiB others priced at nothing; 179.02 GiB read, 125.58
    without it). Where the donors have less, as much as they have, from
    wide_probes.WIDE_GRANULES up (random host 689 without agents: a scan
    115 MiB short of fitting waited an hour for a step of 448 MiB that
    its neighbours' 256 would have ended).
    """
    steps = {u: _search_step_mb(c, host.guest(u), cfg, params)
             for u, c in curves.items()}
    taker = max((u for u, mb in steps.items() if mb),
                key=lambda u: curves[u].disk_mb_s / steps[u], default=None)
    if taker is None:
        return None
    step = steps[taker]
    budget = probes.NEW_WORKLOAD_COST_SHARE * curves[taker].disk_mb_s
    down = {u: _search_room_mb(curves[u], rooms[u], params, budget / step)
            for u in curves if u != taker}
    donors, loss = probes.probe_donors(curves, down, taker, step, params,
                                       _search_price)
    step = sum(donors.values())
    if step < wide_probes.WIDE_GRANULES * params.granule_mb or (
            loss * step > budget):
        return None
    why = ('utility (%s): %d MiB priced at %.3f MiB/s per GiB, past every '
           'size a guest was measured reading as much at'
           % (probes.PROBE, step, loss * 1024))
    return probes.probe_plan(host, cfg, donors, taker, why)


def _search_room_mb(curve, room_mb, params, max_price):
    """MiB of ``room_mb`` (whole granules) a search may take.

    What :func:`_search_price` prices at most ``max_price`` per MiB.

    As far as its curve prices it (HostOnlyCurve.loss_at: free memory its
    cache left unused, an idle guest's, or down to a size it was measured
    at). Below that, only from a guest whose cache once filled through
    that span (fill_curve.Fill.mean), priced by :func:`_search_price`:
    a local slope alone is a guess for a granule, not for the several a
    search step takes (big-hot-set without agents: a hot/cold reader
    measured flat above its hot set, priced at nothing below it, gave
    1.4 GiB to a uniform reader's search and read 5% more than static).
    Random host 528 without agents: a scan 307 MiB short of fitting took
    a granule every half hour from a uniform reader over 8 GiB measured
    at two sizes only, and read as much as static; that reader's fill
    prices what it gives at 0.1 MiB/s per GiB. Only its free memory from
    a guest that read less at a smaller size than now (a workload since
    changed). Nothing from a guest grown and still filling what it was
    given (:func:`_not_measured_since_grown`).

    A guest that stopped reading gives its cache as its rest prices it
    (rest_hold: a re-read per MiB over as long as it rested, for a guest
    that came back from a rest before; nothing for one that never did),
    where the wide probe keeps it for its return
    (wide_probes._free_room_mb): a search step is measured and given
    back where the reads did not fall, a wide probe's whole span is not.
    Random host 62 without agents: a guest idle from 40 minutes on kept
    1.6 GiB beside a scan 1.2 GiB short of fitting, which read 6 MiB/s to
    the end (61.03 GiB; 37.17 once the search took it).
    """
    if _not_measured_since_grown(curve):
        return 0
    g_mb = params.granule_mb
    mb = int(room_mb - room_mb % g_mb)
    if _read_less_below(curve):
        mb = min(mb, int(curve.free_mb - curve.free_mb % g_mb))
    while mb >= g_mb and _search_price(curve, mb) > max_price:
        mb -= g_mb
    return max(0, mb)


def _search_price(curve, amount_mb):
    """A search donor's loss per MiB for ``amount_mb``.

    As a probe prices it (probes.probe_loss); where that reaches below
    every size it was measured at, no less than what its last fill saved
    per MiB (fill_curve.Fill.mean), and unknown where no fill was
    measured, or where the cache the step leaves lies below the one that
    fill began at: that part of its curve was never measured. A fill
    measured from above a quarter of its cache prices it too (random
    host 298 without agents: three scans, one 179 MiB short of fitting;
    each boot's first window filled 360-480 MiB, so no fill counted as
    from nearly empty, none gave, and the host read what static reads,
    1.6x agent mode's reads). A donor with an agent: as a probe prices it
    (its counters price what was not measured; a host may mix both).
    """
    if curve.loss_is_measured(0, amount_mb) or not isinstance(
            curve, host_only.HostOnlyCurve):
        return probes.probe_loss(curve, amount_mb)
    if curve.fill.mean is None or (
            curve.capacity_mb - amount_mb < curve.fill.mean_from_mb):
        return host_only.UNKNOWN
    return max(probes.probe_loss(curve, amount_mb), curve.fill.mean)


def _not_measured_since_grown(curve):
    """Whether a guest grown still fills what it was given.

    Until its cache holds it, no window measured what the step saved, and
    its free memory is what the step gave it, not memory it left unused.
    """
    return curve.resized > 0 or (
        curve.filling and curve.last_resize is not None
        and curve.last_resize[1] > 0)


def _read_less_below(curve):
    """Whether a smaller size it was measured at read less than now."""
    here = curve.here
    return here is not None and any(
        x.size_mb < curve.size_mb
        and x.disk_mb_s < (1 - mrc.NOISE_SHARE) * here.disk_mb_s
        for x in curve.seen)


def _search_step_mb(curve, guest, cfg, params):
    """MiB of a search step toward this guest, or 0."""
    if curve.here is None or not wide_probes.reads_flat(curve, guest, params):
        return 0
    here = curve.here
    flat = [x.size_mb for x in curve.seen
            if curve.measured_slope(here, x) == 0.0
            and abs(x.disk_mb_s - here.disk_mb_s)
            <= mrc.NOISE_SHARE * here.disk_mb_s] + [curve.size_mb]
    top = max(flat)
    span = max(wide_probes.WIDE_GRANULES * params.granule_mb, top - min(flat))
    target = top + span
    step = min(guards.room_up(guest, cfg), target - curve.size_mb)
    step -= step % params.granule_mb
    return step if curve.size_mb + step > top else 0
