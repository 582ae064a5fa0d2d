"""A scan's reach, from how much it read before its first re-read.

A guest that reads data it never read (no refault: a first pass) and then
refaults what it reads has re-read, at that moment, the first block it
read: a cyclic scan's reuse distance is what it read in between, the same
for every block. That is where its cliff lies: it fits once its file LRU
holds that much, and not one MiB before (the kernel's refault distance,
mm/workingset.c, measures the same per page, but nothing exports it).
The refault counters alone spread such a guest's value over all its
shadow entries' reach, and the host's reads at the sizes it held find
the cliff only by trying them (:mod:`probes`). With the reach estimated,
utility mode prices the memory the scan lacks to its cliff at all its
refaults, and weighs all it holds against what others would save with it
(:mod:`scan_cliffs`).

The reads counted are the host's (QEMU's block statistics) where it
measured them; the refaults and the first pass are the guest's claims,
bounded: a re-read needs an eviction first, so a first re-read before
the guest read more than its cache held is no scan's (a reader of random
blocks re-reads as soon as its cache is full) and places nothing; nor
does one further back than the guest's shadow entries reach (a refault
re-reads a page evicted no longer ago: a "pass" longer than that, a
stream since boot followed by a scan, did not come round); and a reach
prices no more than the reads the host measured (cache_value caps the
refaults).
"""

import dataclasses
import math

from watcher_cams.policy import model
from watcher_cams.policy import mrc

# Refaults, as a share of a window's reads, that a first pass may show.
FRESH_SHARE = 0.01
# A window counts once its reads are at least this many MiB, or at least
# DECISIVE_MB where its refaults leave no doubt (see _counts).
WINDOW_MB = 64
DECISIVE_MB = 16
# Evictions, in file LRUs, that a guest's shadow entries surely remember.
SURE_SHADOW_LRUS = mrc.SURE_SHADOW_LRUS
# A window re-reads as a scan does when at least this share of its reads
# refault, at most mrc.NOISE_SHARE of those activated.
SCAN_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class Reach:
    """What the policy state keeps of a guest's passes (MiB)."""

    # Read since its current first pass began (None: not in one).
    fresh_mb: float = None
    # Read from the start of its last first pass to its first re-read
    # (None: never seen).
    reuse_mb: float = None
    # That reach, once a later window re-read as a scan does (SCAN_SHARE);
    # None before: a reader of random blocks over far more than it caches
    # re-reads a block now and then, which also places a reach.
    scanned_mb: float = None
    # In a pass that outran its shadow entries and then grew: what it read
    # since it began as counted from the most those entries remembered at
    # the grow (:func:`_grown`); None: no such grow. In a reach placed from
    # it, that count (an upper bound) placed it.
    grown_mb: float = None
    # How much further that count lies than the least they surely
    # remembered: the reach lies at most this far below it.
    slack_mb: float = None

    def to_state(self):
        """The policy state's entries (utility._remember).

        By name, not dataclasses.asdict: every guest's plan writes them,
        and asdict's deep copy was a twentieth of utility mode's planning
        time on 500 hosts (bench-plan).
        """
        return {k: round(getattr(self, k), 1) for k in _STATE_FIELDS
                if getattr(self, k) is not None}


# The Reach fields the policy state keeps, in Reach's order.
_STATE_FIELDS = ('fresh_mb', 'reuse_mb', 'scanned_mb', 'grown_mb',
                 'slack_mb')


def remembered(state):
    """The Reach a guest's policy state (a dict) keeps; junk is dropped."""
    if not isinstance(state, dict):
        return Reach()
    return Reach(*(_mb(state.get(k)) for k in _STATE_FIELDS))


def _mb(value):
    try:
        mb = float(value)
    except (TypeError, ValueError):
        return None
    return mb if math.isfinite(mb) and mb >= 0 else None


def tracked(reach, guest, r, reads_mb_s, resized=0):
    """``reach`` after the window of rates ``r`` (model.GuestRates).

    ``reads_mb_s``: what the guest read (the host's measure where it has
    one); ``resized``: +1 where the balloon grew it within the window
    (cache_window.resized_in_window). A window that read at least
    WINDOW_MB and refaulted (next to) nothing continues a first pass; the
    pass began with the first such window or, where the guest re-read
    nothing of what it read since it booted and its reads never showed a
    new workload, at boot (:func:`_read_before_pass_mb`); a grow bounds
    its count (:func:`_grown`). The first window that refaults more ends
    it: what it read until then, and the part of that window's reads that
    were not re-reads, is the reach, if it exceeds the guest's cache by a
    window's reads at least and lies within what its shadow entries can
    remember (its file LRU and mrc.SHADOW_REACH more): :func:`_placed`.
    That window confirms it if it re-reads as a scan does (SCAN_SHARE:
    ``scanned_mb``; its pass came round early in it); otherwise the next
    window that refaults confirms it so, or drops it (see
    :func:`unconfirmed`); a confirmed reach goes too once a window
    re-reads as no scan does (:func:`_rereads_checked`); while a
    confirmed reach lies beyond the guest's shadow entries
    (:func:`beyond_shadows`), a window without a refault begins no first
    pass.
    """
    read_mb = reads_mb_s * r.interval_s
    if resized > 0:
        reach = _grown(reach, guest)
    refault_mb = min(read_mb, r.refault_s * model.MB_PER_PAGE * r.interval_s)
    if not _counts(read_mb, refault_mb):
        return reach
    activated_mb = r.activate_s * model.MB_PER_PAGE * r.interval_s
    reach = _rereads_checked(reach, read_mb, refault_mb, activated_mb)
    if refault_mb <= FRESH_SHARE * read_mb:
        if beyond_shadows(reach, guest):
            return reach
        fresh = reach.fresh_mb
        if fresh is None:
            fresh = _read_before_pass_mb(guest)
        grown = reach.grown_mb
        return dataclasses.replace(
            reach, fresh_mb=fresh + read_mb,
            grown_mb=None if grown is None else grown + read_mb)
    if reach.fresh_mb is None:
        if reach.reuse_mb is not None and reach.scanned_mb is None:
            # Re-read as a reader of random blocks does, not as a scan.
            return Reach()
        return reach
    return _placed(reach, guest, (read_mb, refault_mb, activated_mb))


def _grown(reach, guest):
    """``reach`` at a grow of its guest: a first pass's count bounded.

    A scan whose reach lies further back than its shadow entries remember
    re-reads nothing it can show, however long it runs: its "first pass"
    goes on round after round. Grown from a file LRU of L MiB (the stream
    probe's step), its first refault re-reads the oldest page an entry
    still remembers: what it reads from the grow to there is its reach
    less what it held and remembered then, L and SURE_SHADOW_LRUS to
    mrc.SHADOW_REACH LRUs more (4 in the simulator, 2 to 8 in a kernel).
    Counted from the pass's start instead, the rounds nobody saw placed
    wide host 37's 1.6 GiB scan at 4.3 GiB, beyond its maximum: priced as
    a scan that never fits. The count from the most they remembered
    (``grown_mb``) is the upper bound placed, ``slack_mb`` how far the
    reach may lie below it; a reach placed too far leaves its cache's
    memory unused, which goes back, one placed too short fits nothing.
    """
    if reach.fresh_mb is None:
        return reach
    lru_mb = guest.previous.file_lru_mb
    count, slack = ((reach.fresh_mb, 0.0) if reach.grown_mb is None
                    else (reach.grown_mb, reach.slack_mb))
    low = min(count - slack, (1 + SURE_SHADOW_LRUS) * lru_mb)
    high = min(count, (1 + mrc.SHADOW_REACH) * lru_mb)
    return dataclasses.replace(reach, grown_mb=high, slack_mb=high - low)


def _bounded_reuse(reach, guest, read_mb, refault_mb):
    """(MiB a pass read to its first re-read, MiB it may lie below that).

    The second is None where the count is the pass's whole. Counted from
    where it grew (:func:`_grown`): that count where the guest's maximum
    holds it; its maximum where only a count within the slack would fit
    there (a scan tried at the most it may have: scan_cliffs tries it as
    far as the host can give); the whole count where not even the least
    would fit, as without a grow (a scan larger than its flavor, or a
    workload that changed within the pass).
    """
    whole = reach.fresh_mb + read_mb - refault_mb
    if reach.grown_mb is None:
        return whole, None
    high = reach.grown_mb + read_mb - refault_mb
    room_mb = guest.max_mb - guest.sample.used_mb
    if high <= room_mb:
        return high, reach.slack_mb
    if high - reach.slack_mb <= room_mb:
        return room_mb, room_mb - (high - reach.slack_mb)
    return whole, None


def _placed(reach, guest, window):
    """The Reach a first pass's end places, or Reach() where none.

    ``reach``: the pass before the ``window`` (MiB read, refaulted,
    activated) whose refaults ended it.
    """
    read_mb, refault_mb, activated_mb = window
    reuse, slack = _bounded_reuse(reach, guest, read_mb, refault_mb)
    if reuse < guest.sample.file_lru_mb + WINDOW_MB:
        # Re-read as soon as its cache was full: a reader of random
        # blocks (or a claim), not a scan whose reach shows.
        return Reach()
    if reuse > (1 + mrc.SHADOW_REACH) * guest.sample.file_lru_mb:
        # No shadow entry reaches that far back: the refault re-read
        # something read later than the pass's first block, and where
        # the pass began is unknown (a stream before it, or a past
        # phase's reads).
        return Reach()
    if rereads_as_scan(read_mb, refault_mb, activated_mb):
        # No reader of random blocks re-reads so in the window its first
        # re-read falls in: its refaults begin with a block now and then.
        return Reach(reuse_mb=reuse, scanned_mb=reuse, slack_mb=slack)
    return Reach(reuse_mb=reuse, slack_mb=slack)


def _rereads_checked(reach, read_mb, refault_mb, activated_mb):
    """``reach`` after a window's re-reads (MiB): confirmed, kept or gone.

    Re-read as a scan does: confirmed (``scanned_mb``). A confirmed reach
    whose window re-reads mostly (SCAN_SHARE) but activates more than
    mrc.NOISE_SHARE of it was another workload's: a reader whose data
    partly fits its cache re-reads so, a scan larger than its cache never
    does (random host 19: a scan of 6 GiB became a uniform reader over 4
    GiB, and the scan's reach went on pricing its cliff). Fewer re-reads
    say nothing: a scan's cache grown part of the way serves some of it.
    """
    if reach.reuse_mb is not None and rereads_as_scan(
            read_mb, refault_mb, activated_mb):
        return dataclasses.replace(reach, scanned_mb=reach.reuse_mb)
    if (reach.scanned_mb is not None and refault_mb >= SCAN_SHARE * read_mb
            and activated_mb > mrc.NOISE_SHARE * refault_mb):
        return Reach()
    return reach


def _counts(read_mb, refault_mb):
    """Whether a window's reads say anything of a pass.

    WINDOW_MB of reads or more; a slow scan's smaller windows (a 1 MiB/s
    scan reads 60 MiB a minute) when they refault (next to) nothing or
    mostly: a few refaults more or less in so few reads decide nothing
    in between.
    """
    if read_mb >= WINDOW_MB:
        return True
    return read_mb >= DECISIVE_MB and (
        refault_mb <= FRESH_SHARE * read_mb
        or refault_mb >= SCAN_SHARE * read_mb)


def rereads_as_scan(read, refault, activated):
    """Whether reads re-read as a scan does (SCAN_SHARE).

    ``read``, ``refault``, ``activated``: in one unit (MiB of a window,
    or MiB/s): at least SCAN_SHARE of the reads refault, at most
    mrc.NOISE_SHARE of those activated.
    """
    return (refault >= SCAN_SHARE * read
            and activated <= mrc.NOISE_SHARE * refault)


def unconfirmed(curve):
    """Whether a guest's reach was placed, unconfirmed, by this window.

    Where the window that placed it did not re-read as a scan does (its
    pass came round late in it), only the next window tells a scan (it
    re-reads all it reads) from a reader of random blocks over far more
    than it caches (it re-reads a block now and then, and its reach is
    none): meanwhile the guest gives nothing, so that its cache still
    shows the scan's refaults.
    ``curve``: its cache_value.ValueCurve.
    """
    return (curve.reach.reuse_mb is not None
            and curve.reach.scanned_mb is None
            and curve.disk_mb_s * curve.window_s >= WINDOW_MB
            and curve.refault_mb_s > FRESH_SHARE * curve.disk_mb_s)


def beyond_shadows(reach, guest):
    """Whether a known reach lies beyond what the guest's shadows remember.

    A scan shrunk far below its reach re-reads pages evicted longer ago
    than its shadow entries go back (SURE_SHADOW_LRUS file LRUs): its
    re-reads no longer show as refaults, and it reads like a stream. Its
    windows without a refault are then no first pass of anything new.
    """
    return (reach.scanned_mb is not None and reach.scanned_mb
            > SURE_SHADOW_LRUS * guest.sample.file_lru_mb)


def may_still_fit(reach, guest, read_mb):
    """Whether the guest's first pass may yet come round to a re-read.

    This window continued it (``reach``: after the window, in which it
    read ``read_mb``; at least WINDOW_MB), and it has read less, since
    the pass began, than the most it could ever cache (its flavor memory
    less its used memory): a scan of what it read so far would fit it.
    (Counted against its file LRU alone, a scan shrunk during its first
    pass soon read "more than its cache", and its memory went as a
    stream's; too small for its shadow entries to reach back to its
    first block, it never showed its re-reads.)
    """
    return (reach.fresh_mb is not None and read_mb >= WINDOW_MB
            and reach.fresh_mb < guest.max_mb - guest.sample.used_mb)


def shadowed_room_mb(reach, guest):
    """MiB a guest in a first pass may give and still show its re-read.

    Its file LRU is kept at what it read in the pass over
    SURE_SHADOW_LRUS, so that its shadow entries surely still remember
    its first block when the scan comes round to it (all of it where the
    pass is not tracked).
    """
    if reach.fresh_mb is None:
        return math.inf
    keep_mb = reach.fresh_mb / SURE_SHADOW_LRUS
    return max(0, int(guest.sample.file_lru_mb - keep_mb))


def _read_before_pass_mb(guest):
    """What a first pass beginning now read before this window.

    What the guest read since it booted, if it re-read none of it: the
    pass began at boot. Nothing once its reads showed a new workload
    (mrc.phase_at): what it read before was another workload's, and a
    pass that begins after it begins here (wide host 305: a few refaults
    ended a 1.8 GiB scan's pass three minutes in; counted from boot, the next
    window's pass took in the 5.8 GiB a stream read before the scan, its
    reach was placed at 6.6 GiB, beyond its flavor memory, and its memory
    was priced at nothing for 75 minutes beside a guest idle since boot).
    """
    if mrc.phase_at(guest) is not None:
        return 0.0
    s = guest.previous
    return s.read_mb if s.refault_mb <= FRESH_SHARE * s.read_mb else 0.0


def cliff(curve, guest):
    """(MiB at which the guest's scan fits, MiB/s saved per MiB), or None.

    ``curve``: its cache_value.ValueCurve. It fits at its used memory and
    its reach (the granules moves are rounded to leave room for the other
    file pages its LRU holds). Saved per MiB: its refaults over the memory
    it lacks to there. None without an estimate, or with one beyond its
    maximum size, or one it passed: a measurement at a larger size that
    read as much, or a clean window at its size (neither resized nor
    filling) that still refaults. Within the window of a grow to it, its
    reads are still those of the smaller size.
    """
    if curve.reach.reuse_mb is None:
        return None
    fits_mb = guest.sample.used_mb + curve.reach.reuse_mb
    if fits_mb <= passed_mb(curve, guest) or fits_mb > guest.max_mb:
        return None
    return fits_mb, curve.refault_mb_s / max(fits_mb - guest.actual_mb, 1.0)


def passed_mb(curve, guest):
    """The largest size (MiB) measured reading as much as now, or 0.

    Its measurements (``curve``: its cache_value.ValueCurve) that read
    within mrc.NOISE_SHARE of what it reads now, and its size now where
    its window is clean (neither resized nor filling): a scan's cliff
    lies beyond all of them.
    """
    passed = [x.size_mb for x in curve.seen
              if x.disk_mb_s >= curve.disk_mb_s * (1 - mrc.NOISE_SHARE)]
    if not (curve.resized or curve.filling):
        passed.append(guest.actual_mb)
    return max(passed, default=0)


def held_cliff(curve, guest):
    """(MiB below which a fitted scan misses, MiB/s it then reads), or None.

    A confirmed scan (``scanned_mb``) whose file LRU holds its reach and
    that reads (next to) nothing now, measured at a smaller size below its
    cliff: there it read what the host measured, and any step that takes
    it below its used memory and its reach brings all of that back. Priced
    as a slope between the two sizes, a step of half that distance seemed
    to cost half those reads (cache_value.ValueCurve.loss_at). The reach
    is the guest's claim; what it protects is priced by the host's reads.
    """
    if curve.reach.scanned_mb is None:
        return None
    fits_mb = guest.sample.used_mb + curve.reach.scanned_mb
    below = [x for x in curve.seen if x.size_mb < fits_mb]
    if fits_mb > guest.actual_mb or not below:
        return None
    missed = max(below, key=lambda x: x.size_mb).disk_mb_s
    if curve.disk_mb_s > mrc.NOISE_SHARE * missed:
        return None
    return fits_mb, missed - curve.disk_mb_s
