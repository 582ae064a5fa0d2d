"""What a guest may give: above its floor, its used memory and its knee.

The water-filling takes from a guest no more than this, whatever its
curve prices (:mod:`cache_value`): its floor and used memory stay, its
active list too where the refaults show it a hot set's knee, a cache
still filling gives only what it will not fill, a guest whose value
nothing measured yet gives a step a cycle, and one stalled on memory
(PSI) gives nothing.
"""

from watcher_cams.policy import guards
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import stale_active

# Refaults beyond the active list less dense than this share of those
# within it make the active list a knee of the curve (a hot set).
KNEE_SHARE = 0.5


def step_mb(guest, cfg, free_mb):
    """What a guest whose value nothing measured yet may give in a cycle.

    One that mrc.cpu_idle() calls idle, or one that may be in a scan's
    first pass (utility._donor_rooms). Its free memory (``free_mb``,
    beyond the floor margin) and a quarter of its cache, above its floor
    and its used memory: the next window measures the step (a guest whose
    reads came back is not idle; a scan's refaults still show), where a
    guest shrunk at once would no longer show what it lost.
    """
    return min(guest.actual_mb - kept_mb(guest, cfg),
               max(0.0, free_mb - cfg.floor_margin_mb)
               + guest.sample.file_lru_mb / 4)


def kept_mb(guest, cfg, active_mb=0.0):
    """MiB below which a guest never gives.

    Its floor, or its used memory (and ``active_mb`` of its cache) with
    the floor margin.
    """
    return max(guards.floor_mb(guest, cfg),
               guest.sample.used_mb + active_mb + cfg.floor_margin_mb)


def donatable_mb(guest, cfg, params, fill, curve, free_mb):
    """What the guest may give: above its floor and its active set.

    ``fill``: (MiB its reads will fill soon, whether the cache is
    filling, whether mrc.cpu_idle() calls it idle); ``curve``: (its
    refault segments, MiB :func:`measured_down_to` releases, whether
    :func:`stall_belied`). The
    active list is
    kept when it is the knee of the curve (see
    :func:`active_list_is_a_knee`). While the cache fills, nothing was
    evicted, so the refault counters say nothing about what the cache is
    worth: only the free memory may go, less what the reads will fill
    soon where the cache showed no reuse yet (where it did, its inactive
    pages' hits price that memory: see :func:`inactive_hit_density`). A
    guest whose CPUs idle gives at least :func:`step_mb`. A guest
    stalled on memory (PSI) gives nothing.
    """
    fill_mb, filling, quiet = fill
    segments, released, stall_belied = curve
    active = 0
    if active_list_is_a_knee(segments):
        active = guest.sample.active_file_mb
    donate = guest.actual_mb - kept_mb(guest, cfg, active)
    if filling:
        donate = min(donate, free_mb - cfg.floor_margin_mb - fill_mb)
    donate = max(donate, released)
    if quiet:
        donate = max(donate, step_mb(guest, cfg, free_mb))
    if stalled_on_memory(guest, params) and not stall_belied:
        donate = 0
    return donate


def stall_belied(guest, seen, disk_mb_s, params):
    """Whether the host measured what the guest's stall claims it loses.

    PSI is the guest's claim that it waits on memory. Its used memory is
    kept anyway (:func:`kept_mb`); what a stall protects beyond it is its
    cache, which is worth the reads it saves, and swap-ins are reads the
    host counts too. Where the host measured the guest a granule or more
    smaller reading no more than now (``seen``; ``disk_mb_s``, None while
    a resize blurs it), give or take mrc.NOISE_SHARE, the memory in
    between saved nothing, stall or not (forged-claims point seed-7: a
    stream that forged PSI 100 held 1,408 MiB at 4.0 MiB/s, as much as it
    read at 448, beside a neighbour reading 5.7 MiB/s at 384 MiB).
    """
    if disk_mb_s is None:
        return False
    return mrc.read_as_much_below(
        seen, guest.actual_mb, disk_mb_s, params.granule_mb) or any(
            x.size_mb >= guest.actual_mb + mrc.EMPIRICAL_REACH_MB
            and x.disk_mb_s >= (1 - mrc.NOISE_SHARE) * disk_mb_s
            for x in seen)


def unread_active_mb(guest, cfg, params, rates, past):
    """MiB of its active list a guest that reads nothing may give a cycle.

    ``rates``: (its disk reads in MiB/s, the host's where it measured
    them; pages its kernel activated per second); ``past``: its _History.
    The active list is kept as the knee of the curve
    (:func:`active_list_is_a_knee`), but the kernel ages active pages
    only under pressure, and those an old phase left stay active for hours
    beside a new workload that fits. A guest that reads nothing from disk
    and hits nothing on its inactive list (no activation) loses nothing
    while only pages its workload never activated go (stale_active): one
    granule may, while it holds that many and its inactive list holds as
    much (the kernel refills that list from the active list's oldest
    pages). The next window measures the step: reads that come back are a
    measurement at the smaller size and price the memory back, activations
    price the inactive list (:func:`inactive_hit_density`), and an
    emptied inactive list ends the steps. Whatever one measurement at a
    smaller size read (the first window of a new phase reads its first
    pass at any size), but not where two or more did: a curve that agrees
    with itself prices that memory (:func:`measured_down_to`). Not from a
    guest stalled on memory. A guest's claims can only lose it memory
    here, never gain it.
    """
    disk_mb_s, activated_s = rates
    if (disk_mb_s > mrc.IDLE_MB_S
            or activated_s * model.MB_PER_PAGE > mrc.IDLE_MB_S
            or guest.sample.inactive_file_mb < params.granule_mb
            or stalled_on_memory(guest, params)):
        return 0
    if len(_read_more_below(guest, past.seen, disk_mb_s, params)) >= 2 or (
            stale_active.never_activated_mb(guest, past.activated_base)
            < params.granule_mb):
        return 0
    return min(params.granule_mb, guest.actual_mb - kept_mb(guest, cfg))


def untouched_mb(guest, cfg, params, disk_mb_s, since=()):
    """MiB a guest that reads nothing did not touch, host-measured.

    The agent measures the guest memory its QEMU process touched over a
    window (host_io.Touched; agent.collectors.touched): what
    the guest did not touch in it saved no read in it, whatever its
    counters say, and a guest that reads nothing from disk (``disk_mb_s``)
    holds its whole workload in what it touched. So it may give the rest,
    down to that and the floor margin, never below its floor or used
    memory (:func:`kept_mb`); the next window measures the step, and
    reads that come back price the memory back (:func:`measured_down_to`).
    Its active list cannot keep such memory: an old workload's pages stay
    active beside a new one that fits (forged-claims point seed-197 forged:
    a 1.8 GiB scan turned 0.9 GiB held 2,112 MiB for 90 minutes beside a
    reader at 7.4 MiB/s; stale_active sees only the changes reads showed).

    Only a window that saw the workload whole: its second half touched
    less than a granule more than its first (a scan whose pass is longer
    than half the window was not seen whole: random host 114's 2.6 GiB
    scan, an 11-minute pass, gave 128 MiB it needed and the host read 12
    GiB more), the guest held its size in all of it (memory
    it did not have, it could not touch) and its workload began before it
    (``since``: when its reads last showed a new workload and when it last
    came back from a rest; wide host 400, a scan back from a 600 s rest
    measured on the rest's window). Not from a guest stalled on memory.
    The figure is the host's: a tenant can only make it larger, which
    keeps its own memory and takes none.
    """
    touched = guest.host_io and guest.host_io.touched
    if (touched is None or disk_mb_s > mrc.IDLE_MB_S
            or stalled_on_memory(guest, params)):
        return 0
    if (touched.mb - touched.half_mb > params.granule_mb
            or touched.least_mb < guest.actual_mb - params.granule_mb / 2
            or any(t is not None and t >= touched.started_at
                   for t in since)):
        return 0
    return max(0, guest.actual_mb - max(
        kept_mb(guest, cfg), touched.mb + cfg.floor_margin_mb))


def stalled_on_memory(guest, params):
    """Whether the guest reports stalls on memory (PSI) worth protecting.

    The one test every donor rule shares, so that the water-filling and
    the probes can never disagree on which guest may not give.
    """
    psi = guest.sample.psi_some_avg10
    return psi is not None and psi >= params.psi_protect


def measured_down_to(guest, cfg, curve, params):
    """MiB the guest may give down to the largest smaller measured size.

    ``curve``: (its measurements, its reads now in MiB/s, or None when a
    resize blurs them). Where the host measured it reading more when
    smaller, those reads, not the knee or the fill reservation, price
    the memory in between (ValueCurve.measured_loss).
    """
    seen, disk = curve
    if disk is None:
        return 0
    below = _read_more_below(guest, seen, disk, params)
    if not below:
        return 0
    return guest.actual_mb - max(kept_mb(guest, cfg),
                                 max(x.size_mb for x in below))


def _read_more_below(guest, seen, disk_mb_s, params):
    """Measurements (mrc.Seen) at smaller sizes that read more than now."""
    return [x for x in seen
            if x.size_mb < guest.actual_mb - params.granule_mb / 2
            and x.disk_mb_s > disk_mb_s]


def active_list_is_a_knee(segments):
    """Whether the refaults show the active list worth more than the rest.

    A hot set lives on the active list and its hits show no refaults, so
    shrinking into it costs far more than its activations say: it is
    kept. So is a list no refault has priced yet. But a reader over
    uniformly spread data refaults as densely beyond its active list as
    within (one concave segment, or a second one nearly as steep): its
    active list is pages re-read by chance, and worth what the rest is.
    """
    if len(segments) < 2:
        return False
    (_, inside), (_, beyond) = segments[:2]
    return inside == 0 or beyond < KNEE_SHARE * inside
