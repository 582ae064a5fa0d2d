"""A stream probe: one step toward a guest whose re-reads cannot show.

A guest that reads from disk and refaults (next to) nothing may read a
stream, or a scan whose reuse lies further back than its cache and
shadow entries reach: from its cache alone nobody can tell. One step
from memory nobody uses grows its cache to where its shadows would show
a re-read (:func:`stream_probe`); the next windows price what they show,
and the water-filling takes back a step that showed nothing.
"""

from watcher_cams.policy import first_reuse
from watcher_cams.policy import guards
from watcher_cams.policy import mrc
from watcher_cams.policy import probes

# Refaults, as a share of its reads, of a guest that re-reads nothing: a
# scan whose reuse lies beyond its shadow entries refaults none, a reader
# of random blocks over D MiB about k·L/D of its reads (k LRUs of shadows
# beyond a file LRU of L: 0.8% over 64 GiB from 128 MiB, below
# first_reuse.FRESH_SHARE).
NOTHING_SHARE = 0.001


def stream_probe(host, cfg, params, curves, rooms):
    """One step toward a guest reading like a stream from too small a cache.

    Or None. A guest that reads from disk and refaults (next to) nothing
    re-reads nothing its shadow entries remember: a stream, or a scan
    whose reuse lies further back than its cache and shadows reach (about
    SURE_SHADOW_LRUS file LRUs: first_reuse). A scan started or shrunk at
    a small size never shows what it is from there, while the host could
    hold it (a 1 GiB scan woken at a 128 MiB cache read 4 MiB/s for 90
    minutes). Where its cache and shadows do not reach all it could ever
    cache, one step grows its file LRU to where they would
    (:func:`_unseen_reuse_step`): the next windows show its re-reads as
    refaults, which the other rules price, or none, and the water-filling
    gives the step back, at no loss to it. Not again while the larger size
    is remembered, unless it re-reads nothing at all (:func:`_barred`).
    Only memory a cache left unused goes to it
    (:func:`_unused_room_mb`): a reader of random blocks over a terabyte
    looks the same, and the step would cost a neighbour's hot set the
    reads it serves, or a filling cache the memory it fills next, every
    time the larger size is forgotten. Memory in use goes only to a new
    workload, and cheaply (:func:`_new_workload_donors`). Not where what
    the donors give reaches no further than a size that already showed
    what this would (:func:`_measured_again`).
    """
    steps = {u: _unseen_reuse_step(c, host.guest(u), host, cfg, params)
             for u, c in sorted(curves.items())}
    taker = max((u for u, step in steps.items() if step),
                key=lambda u: (curves[u].disk_mb_s, u), default=None)
    if taker is None:
        return None
    down = {u: _unused_room_mb(c, rooms[u], params)
            for u, c in curves.items()}
    donors, loss = probes.probe_donors(curves, down, taker, steps[taker],
                                       params)
    if not donors:
        donors, loss = _new_workload_donors(host, params, curves, rooms,
                                            (taker, steps[taker]))
    amount = sum(donors.values())
    bound = curves[taker].disk_mb_s / max(amount, 1)
    if not donors or _measured_again(curves[taker], host.guest(taker),
                                     amount, params.granule_mb) or (
            bound - loss * (1 + params.value_band)
            <= params.min_value / 1024.0):
        return None
    why = ('utility (%s): %d MiB toward a guest whose cache and shadow '
           'entries are too small to show a re-read; costs at most %.3f '
           'MiB/s of reads' % (probes.PROBE, amount, loss * amount))
    return probes.probe_plan(host, cfg, donors, taker, why)


def _new_workload_donors(host, params, curves, rooms, probe):
    """({donor: MiB}, loss per MiB) of memory in use for a stream probe.

    ``probe``: (the taker, the step). Only toward a guest that began a new
    workload within ``memory_s`` (:func:`_recent_workload`), and
    only where the step costs its donors at most probes.NEW_WORKLOAD_COST_SHARE
    of the reads it may save; where it costs more, the largest step (in
    granules) that does; else ({}, 0.0). Random host 1289: a guest whose
    uniform reads turned into a 768 MiB scan at its 640 MiB floor, beside
    caches in use, read 6 MiB/s for 80 minutes (1.25x static). A smaller
    step reaches a shorter scan only, but shows it all the same (random
    host 733: a 1 GiB scan begun at a 384 MiB floor read 6 MiB/s for 50
    minutes, 1.09x static, where the whole step cost too much). A stream
    that read like that since it started looks the same from a small
    cache, and would be probed each time the larger size it was measured
    at is forgotten, taking a hot set's memory every time (the paper
    example's VM2, the CAMS grid's terabyte reader): a new workload is
    probed within the time that size is remembered, so once.
    """
    taker, step = probe
    curve = curves[taker]
    if not _recent_workload(curve, host.guest(taker), params):
        return {}, 0.0
    g_mb = params.granule_mb
    while step >= g_mb:
        donors, loss = probes.probe_donors(curves, rooms, taker, step, params)
        if loss * sum(donors.values()) <= (probes.NEW_WORKLOAD_COST_SHARE
                                           * curve.disk_mb_s):
            return donors, loss
        step -= g_mb
    return {}, 0.0


def _recent_workload(curve, guest, params):
    """Whether the guest's reads began a new workload within ``memory_s``.

    Its reads showed one (ValueCurve.phase_at), or its first pass began
    that recently and has outrun all its shadow entries could remember
    (1 + mrc.SHADOW_REACH file LRUs: first_reuse.Reach.fresh_mb) without a
    re-read. A reader of random blocks over D MiB re-reads within that
    reach about that share of D, and ends its pass (first_reuse.tracked).
    The host's reads need not move at such a change: wide host 110, a
    uniform reader over 48 GiB at its floor, became a 1.6 GiB scan at the
    same 12 MiB/s and read it from disk for an hour (1.6x the oracle); its
    first pass began there. A reader over a terabyte looks the same, but
    its pass began at boot, or is probed once within ``memory_s`` of it.
    """
    now = guest.sample.timestamp
    if curve.phase_at is not None and now - curve.phase_at <= params.memory_s:
        return True
    fresh_mb = curve.reach.fresh_mb
    return (fresh_mb is not None
            and fresh_mb >= (1 + mrc.SHADOW_REACH) * guest.sample.file_lru_mb
            and fresh_mb <= curve.disk_mb_s * params.memory_s)


def _unseen_reuse_step(curve, guest, host, cfg, params):
    """MiB that would let a guest's shadows show a re-read, or 0.

    See :func:`stream_probe`: a guest with an agent (one without has
    wide_probe), its window clean, reading from disk and refaulting at
    most first_reuse.FRESH_SHARE of it, whose file LRU and shadows reach
    less than it could ever cache (guards.reachable_mb less its used
    memory), not barred by a size it was measured at (:func:`_barred`).
    The step grows its file LRU to a (1 + SURE_SHADOW_LRUS)th of that,
    within what it may take this cycle.
    """
    g_mb = params.granule_mb
    if (guest.host_only or curve.resized or curve.filling
            or curve.disk_mb_s < mrc.READ_MB_S
            or curve.refault_mb_s
            > first_reuse.FRESH_SHARE * curve.disk_mb_s):
        return 0
    lru_mb = guest.sample.file_lru_mb
    cacheable_mb = (guards.reachable_mb(host, guest, cfg)
                    - guest.sample.used_mb)
    lrus = 1 + first_reuse.SURE_SHADOW_LRUS
    if lru_mb * lrus >= cacheable_mb:
        return 0
    step = min(guards.room_up(guest, cfg), cacheable_mb / lrus - lru_mb)
    step = int(step - step % g_mb) if step >= g_mb else 0
    return 0 if _barred(curve, step, g_mb) else step


def _barred(curve, step_mb, g_mb, bars=None):
    """Whether a size the guest was measured at bars a step of ``step_mb``.

    Any larger one, while it refaults some of what it reads: it showed
    what a reader of random blocks over more than it caches is (the
    paper example's VM2, the CAMS grid's terabyte reader), and a step
    each time that size is forgotten would cost a neighbour's hot set its
    reads. One re-reading nothing (NOTHING_SHARE) is a stream or a scan
    whose reuse lies beyond its shadows: a larger size barred only a step
    no further, whose shadows reach no further back. A size measured
    short of the step's told nothing of a scan longer than its shadows
    reached there (wide host 131: idle, then a 1.6 GiB scan at a 128 MiB
    file LRU; measured at 256 MiB, its shadows reaching 1.3 GiB, it was
    not probed again, and read 8 MiB/s for 100 minutes, 29 times the
    oracle's reads). ``bars``: which measurements of a guest re-reading
    nothing may bar (all where None).
    """
    if curve.refault_mb_s > NOTHING_SHARE * curve.disk_mb_s:
        return any(x.size_mb >= curve.size_mb + g_mb / 2 for x in curve.seen)
    return any(x.size_mb >= curve.size_mb + step_mb - g_mb / 2
               and (bars is None or bars(x)) for x in curve.seen)


def _measured_again(curve, guest, step_mb, g_mb):
    """Whether a step of ``step_mb`` would only measure a size again.

    As :func:`_barred`, for the step the donors can give, which may fall
    short of the one asked: random host 262's 6 GiB scan, more than it
    could ever cache, was probed time after time with what a neighbour's
    cache could spare, to sizes it had read as much at, and the
    neighbour, a uniform reader, read 10.5 GiB instead of 0.9. A size
    measured early in the workload its reads last showed
    (ValueCurve.phase_at), before it read what that size's file LRU and
    shadows reach, could not show a re-read yet, and bars nothing (wide
    host 90: a 1.2 GiB scan measured flat at 576 and 640 MiB in its first
    minutes found its cliff with those granules 13 minutes later).
    """
    lrus = 1 + first_reuse.SURE_SHADOW_LRUS

    def came_round(seen):
        return curve.phase_at is None or (
            (seen.timestamp - curve.phase_at) * curve.disk_mb_s
            >= (seen.size_mb - guest.sample.used_mb) * lrus)
    return _barred(curve, step_mb, g_mb, came_round)


def _unused_room_mb(curve, room_mb, params):
    """MiB of ``room_mb`` (whole granules) the guest's cache left unused.

    Its free memory, where its cache did not grow over the window, or
    without an agent what its growth will not reach soon
    (cache_value.ValueCurve.unused_mb): not what a cache fills now.
    """
    room_mb = min(room_mb, curve.unused_mb)
    return int(room_mb - room_mb % params.granule_mb)
