"""Utility mode: move memory toward equal marginal value of cache.

The value of one more MiB of memory to a guest is the disk reads it would
save. Linux tells us this on an unmodified guest through its refault
detection (mm/workingset.c): when a file page is evicted it leaves a shadow
entry, and when that page is read again the kernel counts a refault
(``workingset_refault_file``) and computes the refault distance, the extra
cache that would have kept the page resident. Refaults whose distance is at
most the active file list are activated (``workingset_activate_file``).

The model, per guest, from two samples one audit cycle apart:

- ``A`` = activations/s: reads that growing the cache by up to
  ``Active(file)`` MiB would have turned into hits;
- ``F`` = refaults/s: reads that a larger cache would have saved, the
  ``F - A`` beyond the active list spread over about one more cache size;
- both are capped by the guest's real disk reads (``pgpgin``), since a guest
  cannot save more reads than it does.

This gives a concave, piecewise-linear gain curve: slope ``A/Active(file)``
for the first segment, ``(F-A)/cache`` for the second (merged into one
segment when that would not be concave), zero beyond. The loss of taking
memory from a guest is priced at its first-segment slope (reuse density
just inside its cache margin equals that just outside), and only its
inactive file pages may be taken: its active list (the pages it re-reads),
its used memory and a margin are protected, and a guest under memory
pressure (PSI ``some`` avg10 at or above ``psi_protect``) is never a donor.
A guest with free memory beyond the margin has evicted nothing yet, so its
zero refaults mean "unknown", not "worthless": it gives only free memory,
and not the part its cache will fill within ``fill_horizon_s`` at its
current disk read rate (a guest still reading its data in is not idle).

Memory then moves greedily, a segment at a time in ``granule_mb`` units,
from the cheapest donor to the guest whose next MiB saves the most, while
the gain beats the loss by ``min_value`` (MiB/s saved per GiB moved): the
water-filling that equalizes marginal values. With a large enough step
limit this lands where paper mode creeps in fixed steps; the next cycle
re-measures and corrects a wrong estimate.

A resize echoes in the counters for a while: a guest that was shrunk
refaults what it lost, one that grew is still filling. So within the rate
window after its balloon changed (seen as a change of MemTotal between the
two samples, or a window that began less than ``settle_s`` after a change
the policy state recorded) a guest is not moved the other way; moves in the
same direction go on.

Refault detection sees reuse only up to about twice the cache (the kernel
keeps shadow entries for about one cache's worth of evictions), and a guest
whose cache is still filling has no refaults at all. When the water-filling
finds nothing worth moving, the guests' values are equal as far as the
counters can tell; then, if every donor's cache is full (its low value
measured, not unknown), the share of each cache on the active list (the
pages re-read while cached, the CAMS paper's utilization) breaks the tie:
CAMS's own steps are taken, but only those that move memory toward a guest
whose measured value is not below the donor's by more than ``value_band``.
A donor still filling gives in a tie only when it read at least a granule
and its cache served less than ``min_value`` meanwhile (see
:func:`_fill_density`): a reader over far more data than it can cache, not
an idle guest.

The counters' values are averages over a whole segment (the first one is the
active list, hundreds of MiB in a small guest), so at a knee of the curve
(a hot set that just fits) a guest's value for growing says little of its
loss for shrinking. Each clean measurement (no resize echo, cache not
filling) is kept in the guest's policy state: at that size, the next
segment was worth that much. Shrinking a guest back over a range an earlier
measurement covered costs at least what was measured there, for
``memory_s``. The guest's disk read rate is kept with each measurement:
the rates at two sizes price the memory in between without any model
(what the guest read more when smaller is the loss of taking memory from
it, what it read less when larger the gain of giving it back, up or down
from what the refaults say). And since
the counters are noisy, memory moves only when the gain beats the loss by
``value_band`` (relative) and ``min_value``.
"""

import dataclasses

from watcher_cams.policy import cams
from watcher_cams.policy import guards
from watcher_cams.policy import model

MB_PER_PAGE = model.PAGE_KB / model.KB_PER_MB
# MemTotal changes smaller than this (KiB) are not a balloon change.
RESIZE_KB = 4096
# File LRU growth (MiB) over the rate window that counts as filling.
GROWTH_MB = 32
# Key of this policy's part of a guest's policy state, and how many
# measurements it keeps.
STATE_KEY = 'utility'
MAX_SEEN = 8
# A measurement at a size is the running mean of the last ones there (one
# cycle's counters are noisy: a few refaults more or less), weighted by the
# time each adds: rate windows longer than the audit cycle overlap, and an
# overlapping window repeats events already counted. At most this many
# windows' worth weigh in.
MAX_COUNT = 10
# Measurements of disk reads this far (MiB) below what a move would reach
# still price it; a measurement at least this far above the current size
# prices growing back to it.
EMPIRICAL_REACH_MB = 256
# How far, in cache sizes beyond its file LRU, a guest's kernel remembers
# evicted pages: mm/workingset.c lets shadow nodes reach an eighth of the
# LRU pages, 64 entries each. The longest reach spreads a refault's value
# the thinnest.
SHADOW_REACH = 8
# A saving measured at a larger size is borne out when this window's
# refaults are at least 1/WITNESS_SLACK of it (the kernel drops shadow
# entries under pressure, so refaults undercount), give or take
# NOISE_SHARE of the disk reads.
WITNESS_SLACK = 2.0
NOISE_SHARE = 0.1
# Refaults beyond the active list less dense than this share of those
# within it make the active list a knee of the curve (a hot set).
KNEE_SHARE = 0.5


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

    def __post_init__(self):
        if self.granule_mb < 1:
            raise ValueError('granule_mb must be >= 1')
        if self.min_value < 0 or self.min_segment_mb <= 0:
            raise ValueError('min_value must be >= 0 and min_segment_mb > 0')
        if self.psi_protect < 0:
            raise ValueError('psi_protect must be >= 0')
        if (self.fill_horizon_s < 0 or self.memory_s < 0
                or self.settle_s < 0):
            raise ValueError('fill_horizon_s, memory_s and settle_s must be '
                             '>= 0')
        if not 0 <= self.value_band < 1:
            raise ValueError('value_band must be within [0, 1)')


@dataclasses.dataclass(frozen=True)
class Seen:
    """One clean measurement of a guest's value.

    At ``size_mb`` the next ``length_mb`` MiB of memory were worth
    ``density`` MiB/s per MiB, and the guest read ``disk_mb_s`` from disk.
    """

    size_mb: int
    density: float
    length_mb: float
    timestamp: float
    disk_mb_s: float = 0.0
    # Rate windows of counters averaged into this one (fractions where
    # windows overlapped; at most MAX_COUNT weigh in).
    count: float = 1.0

    def to_list(self):
        return [self.size_mb, round(self.density * 1024, 4),
                round(self.length_mb, 1), round(self.timestamp, 1),
                round(self.disk_mb_s, 4), round(self.count, 3)]

    def merged(self, newer, window_s):
        """This measurement averaged with a newer one at the same size.

        ``window_s`` is the newer one's rate window: only the part of it
        after this one's time is new evidence.
        """
        n = min(self.count, MAX_COUNT)
        w = 1.0
        if window_s > 0:
            w = min(1.0, max(0.0, newer.timestamp - self.timestamp)
                    / window_s)
        if w <= 0:
            return dataclasses.replace(self, timestamp=newer.timestamp)

        def mean(a, b):
            return (a * n + b * w) / (n + w)
        return Seen(newer.size_mb, mean(self.density, newer.density),
                    mean(self.length_mb, newer.length_mb), newer.timestamp,
                    mean(self.disk_mb_s, newer.disk_mb_s), n + w)

    def slope_to(self, other):
        """Disk reads saved per MiB between this size and ``other``'s."""
        small, large = sorted((self, other), key=lambda s: s.size_mb)
        return max(0.0, (small.disk_mb_s - large.disk_mb_s)
                   / (large.size_mb - small.size_mb))

    @classmethod
    def from_list(cls, value):
        """A Seen, or None when ``value`` is not one.

        The agent keeps the state, but a corrupt file must not stop
        planning.
        """
        try:
            size, per_gib, length, timestamp, disk, count = value
            seen = cls(int(size), float(per_gib) / 1024, float(length),
                       float(timestamp), float(disk), float(count))
        except (TypeError, ValueError):
            return None
        if (seen.size_mb <= 0 or not 0 <= seen.density < float('inf')
                or not 0 < seen.length_mb < float('inf')
                or not 0 <= seen.disk_mb_s < float('inf')
                or not 0 < seen.count < float('inf')):
            return None
        return seen


def remembered(guest, params):
    """The guest's measurements still trusted at its current sample."""
    state = guest.policy_state.get(STATE_KEY)
    entries = state.get('seen') if isinstance(state, dict) else None
    if not isinstance(entries, list) or guest.sample is None:
        return ()
    now = guest.sample.timestamp
    out = []
    for entry in entries[:MAX_SEEN]:
        seen = Seen.from_list(entry)
        if seen is not None and 0 <= now - seen.timestamp <= params.memory_s:
            out.append(seen)
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class ValueCurve:
    """Gain curve of one guest: ((length_mb, MiB/s per MiB), ...)."""

    segments: tuple
    loss_density: float
    donate_mb: int
    # +1 grown, -1 shrunk by the balloon within the rate window, 0 neither.
    resized: int = 0
    # Free memory beyond the floor margin: the cache has not filled.
    filling: bool = False
    size_mb: int = 0
    seen: tuple = ()
    # While filling: reads the cache served per MiB of it (MiB/s per MiB),
    # measured when the guest read at least a granule in the window;
    # None when it read less (an idle guest shows nothing).
    fill_density: float = None
    # The last balloon change this policy saw: (time, +1 grown / -1 shrunk).
    last_resize: tuple = None
    # MiB its cache has yet to fill (free beyond the margin), its disk
    # reads and their rate window.
    unfilled_mb: float = 0.0
    disk_mb_s: float = 0.0
    window_s: float = 0.0

    def density_at(self, offset_mb):
        start = 0.0
        for length, slope in self.segments:
            if offset_mb < start + length:
                return slope, start + length - offset_mb
            start += length
        return 0.0, float('inf')

    def hull_at(self, offset_mb):
        """(best mean density from ``offset_mb`` on, MiB it holds for).

        The concave hull's slope there: a curve with a flat step before a
        cliff (a scan that fits only in more memory) is worth what the
        whole step to the cliff saves per MiB.
        """
        best, best_len = self.density_at(offset_mb)
        start = 0.0
        for length, _ in self.segments:
            start += length
            if start > offset_mb:
                span = start - offset_mb
                mean = (self.gain(start) - self.gain(offset_mb)) / span
                if mean > best:
                    best, best_len = mean, span
        return best, best_len

    def loss_at(self, given_mb, amount_mb):
        """Loss density of giving ``amount_mb`` more after ``given_mb``.

        The current estimate, or more where an earlier measurement at a
        smaller size covered the memory given, or where the disk reads
        measured at a smaller size say so.
        """
        top = self.size_mb - given_mb
        loss = self.loss_density
        here = self.here
        for seen in self.seen:
            if (seen.size_mb < top
                    and seen.size_mb + seen.length_mb > top - amount_mb):
                loss = max(loss, seen.density)
            if here is not None and seen.size_mb < self.size_mb and (
                    seen.size_mb >= top - amount_mb - EMPIRICAL_REACH_MB):
                # The guest's own disk reads, measured at both sizes.
                loss = max(loss, seen.slope_to(here))
        return loss

    @property
    def here(self):
        """The measurement at the current size, if there is one."""
        if self.seen and self.seen[0].size_mb == self.size_mb:
            return self.seen[0]
        return None

    def gain(self, mb):
        """MiB/s of reads saved by ``mb`` more MiB."""
        total, left = 0.0, mb
        for length, slope in self.segments:
            used = min(left, length)
            total += used * slope
            left -= used
        return total


def value_curve(guest, cfg, params=UtilityParams()):
    """The guest's gain curve, or None when it has no usable rates."""
    r = model.rates(guest)
    if r is None or not guest.has_data:
        return None
    disk, refault, activate = _read_rates_mb_s(r, guest.host_io)
    segments = _refault_segments(guest.sample, refault, activate, params)
    filling, free_mb = _filling(guest, refault, disk * r.interval_s, cfg)
    donate = _donatable_mb(guest, cfg, params, (disk, filling), segments,
                           free_mb)
    last_resize = _last_resize(guest)
    resized = _resized(guest, last_resize, params)
    seen = remembered(guest, params)
    if not filling and not resized:
        seen, segments = _measured(guest, r, segments, seen,
                                   (disk, refault), params)
    return ValueCurve(
        segments=segments, loss_density=segments[0][1],
        donate_mb=max(0, int(donate)), resized=resized, filling=filling,
        size_mb=guest.actual_mb, seen=seen,
        fill_density=(_fill_density(guest, r, params) if filling
                      else None),
        last_resize=last_resize,
        unfilled_mb=max(0.0, free_mb - cfg.floor_margin_mb),
        disk_mb_s=disk, window_s=r.interval_s)


def _read_rates_mb_s(r, io=None):
    """(disk reads, refaults, activations) in MiB/s, refaults capped.

    The disk reads are what QEMU read for the guest (``io``, a
    host_io.HostIo) when the host measured them, else what the guest says
    (``pgpgin``). A guest cannot save more reads than it does: when its
    counters say otherwise they disagree or lie, and the refault figures
    are scaled down to the disk's.
    """
    disk = (io.read_mb_s if io is not None
            else r.pgpgin_kb_s / model.KB_PER_MB)
    refault = r.refault_s * MB_PER_PAGE
    activate = min(r.activate_s * MB_PER_PAGE, refault)
    if refault > disk:
        scale = disk / refault if refault > 0 else 0.0
        refault, activate = refault * scale, activate * scale
    return disk, refault, activate


def _refault_segments(s, refault, activate, params):
    """The refault model: the active list, then the rest of the file LRU.

    Activations price the active list, the other refaults the inactive
    one; a curve that would rise (convex) becomes one flat segment.
    """
    first = max(s.active_file_mb, params.min_segment_mb)
    second = max(SHADOW_REACH * s.file_lru_mb, params.min_segment_mb)
    s1 = activate / first
    s2 = (refault - activate) / second
    if s2 > s1:
        return ((first + second, refault / (first + second)),)
    return ((first, s1), (second, s2))


def _filling(guest, refault, read_mb, cfg):
    """(whether the guest's cache is still filling, its free MiB).

    A cache that grew over the window is still filling: what it evicts
    now has not come back yet, so its refaults understate its value (and
    the kernel keeps some free memory below its watermarks, so "free"
    alone misses the last few hundred MiB).
    """
    s = guest.sample
    free = s.mem_available_kb / model.KB_PER_MB - s.file_lru_mb
    growth = s.file_lru_mb - guest.previous.file_lru_mb
    # A cache that kept at least half of what was read into it has
    # evicted too little yet for its refaults to show its value.
    grew = growth > GROWTH_MB or (growth > 0 and (
        refault == 0 or growth >= read_mb / 2))
    return free > cfg.floor_margin_mb or grew, free


def _donatable_mb(guest, cfg, params, reads, segments, free_mb):
    """What the guest may give: above its floor and its active set.

    ``reads``: (disk MiB/s, whether the cache is filling). The active
    list is kept when it is the knee of the curve (see
    :func:`_active_list_is_a_knee`). While the cache fills, nothing was
    evicted, so the refault counters say nothing about what the cache is
    worth: only the free memory may go, less what the reads will fill
    soon. A guest stalled on memory (PSI) gives nothing.
    """
    disk, filling = reads
    s = guest.sample
    active = s.active_file_mb if _active_list_is_a_knee(segments) else 0
    protected = max(guards.floor_mb(guest, cfg),
                    s.used_mb + active + cfg.floor_margin_mb)
    donate = guest.actual_mb - protected
    if filling:
        fill_mb = disk * params.fill_horizon_s
        donate = min(donate, free_mb - cfg.floor_margin_mb - fill_mb)
    if s.psi_some_avg10 is not None and (
            s.psi_some_avg10 >= params.psi_protect):
        donate = 0
    return donate


def _active_list_is_a_knee(segments):
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


def _resized(guest, last_resize, params):
    """+1 grown, -1 shrunk by the balloon within the rate window, else 0.

    A window that began just after a resize this policy recorded (an
    agent that also samples on its own timer) still holds its echo.
    """
    s = guest.sample
    change = s.mem_total_kb - guest.previous.mem_total_kb
    resized = 0 if abs(change) < RESIZE_KB else (1 if change > 0 else -1)
    if (not resized and last_resize is not None
            and guest.previous.timestamp < last_resize[0] + params.settle_s):
        resized = last_resize[1]
    return resized


def _measured(guest, r, segments, seen, reads, params):
    """(seen, segments) after a clean measurement at the current size.

    ``reads``: (disk, refaults) in MiB/s. Averaged with the earlier ones
    at this size, it is this guest's value from now on; where the guest
    was measured larger, its own disk reads there price the memory in
    between (:func:`_priced_by_disk_reads`).
    """
    disk, refault = reads
    length, density = segments[0]
    seen = _with_seen(seen, Seen(guest.actual_mb, density, length,
                                 guest.sample.timestamp, disk),
                      r.interval_s, params)
    mean = seen[0].density
    segments = ((length, mean),) + tuple(
        (rest, min(slope, mean)) for rest, slope in segments[1:])
    return seen, _priced_by_disk_reads(guest, segments, seen, refault)


def _witnessed(here, larger, refault_mb_s):
    """Whether this window's refaults bear out a larger size's saving.

    A read that more memory would save is, at the smaller size, a miss
    on a page evicted not long ago: a refault (mm/workingset.c). When the
    reads a larger size saved are far more than the refaults now, that
    measurement is of another workload: the guest's phase changed.
    """
    saving = here.disk_mb_s - larger.disk_mb_s
    return saving <= (WITNESS_SLACK * refault_mb_s
                      + NOISE_SHARE * here.disk_mb_s)


def _priced_by_disk_reads(guest, segments, seen, refault_mb_s):
    """Segments with the memory up to a larger measured size priced by it.

    That measurement, not the refault model, prices what the memory in
    between saved, up or down. (Refaults overvalue a guest that reads far
    more data than it caches when its kernel keeps shadow entries for
    several cache sizes: nearly every miss is a refault.) Beyond it the
    curve stays concave. A disk rate is noisy too: over less than
    EMPIRICAL_REACH_MB its difference is mostly noise.
    """
    above = [x for x in seen[1:]
             if x.size_mb >= guest.actual_mb + EMPIRICAL_REACH_MB
             and _witnessed(seen[0], x, refault_mb_s)]
    if not above:
        return segments
    nearest = min(above, key=lambda x: x.size_mb)
    slope = seen[0].slope_to(nearest)
    reach = nearest.size_mb - guest.actual_mb
    beyond = tuple((rest, min(density, slope)) for rest, density in segments)
    # Refaults the measured step did not explain are reads whose reuse
    # lies beyond the larger size but within the shadow entries' reach (a
    # scan that fits only in more memory: a flat step, then a cliff).
    # Spread over all of that reach, at most what the guest still reads,
    # and only when they are more than the disk rates' noise.
    left = min(nearest.disk_mb_s,
               sum(length * density for length, density in segments)
               - slope * reach)
    spread = (guest.actual_mb + SHADOW_REACH * guest.sample.file_lru_mb
              - nearest.size_mb)
    if (spread > 0 and left / spread > slope
            and left > NOISE_SHARE * seen[0].disk_mb_s):
        beyond = ((spread, left / spread),)
    return ((reach, slope),) + beyond
    return ((reach, slope),) + beyond


def _last_resize(guest):
    """(time, direction) of the guest's last balloon change, or None.

    The policy state keeps the size at each plan; a different size now
    means a change after that plan (taken as right after it).
    """
    state = guest.policy_state.get(STATE_KEY)
    if not isinstance(state, dict):
        return None
    try:
        size, at = int(state['size_mb']), float(state['at'])
    except (KeyError, TypeError, ValueError):
        size = at = None
    if size is not None and abs(guest.actual_mb - size) * 1024 >= RESIZE_KB:
        return at, 1 if guest.actual_mb > size else -1
    last = state.get('last_resize')
    try:
        at, direction = float(last[0]), int(last[1])
    except (TypeError, ValueError, IndexError):
        return None
    return (at, direction) if direction in (-1, 1) else None


def _fill_density(guest, r, params):
    """Hits per second per MiB of a filling cache, or None.

    Without reclaim nothing leaves the active list, so its growth over the
    window is the cache pages read a second time while cached: the reuse
    the cache delivered, per MiB of it. For a miss-ratio curve that is
    concave this average is at least the value of the next MiB, so it
    bounds what the guest's free memory would have been worth. It is
    evidence only when the guest read at least a granule in the window.
    """
    if r.disk_read_mb_s * r.interval_s < params.granule_mb:
        return None
    s, prev = guest.sample, guest.previous
    promoted = max(0.0, s.active_file_mb - prev.active_file_mb)
    return promoted / r.interval_s / max(s.file_lru_mb,
                                         params.min_segment_mb)


def _with_seen(seen, new, window_s, params):
    """``seen`` with ``new`` first, merged with the one at its size."""
    kept = [new]
    for old in seen:
        if abs(old.size_mb - new.size_mb) < params.granule_mb:
            kept[0] = old.merged(new, window_s)
        else:
            kept.append(old)
    return tuple(kept[:MAX_SEEN])


def _moves(host, cfg, params, curves):
    """Greedy water-filling; returns ({uuid: delta_mb}, saved MiB/s)."""
    guests = {g.uuid: g for g in host.guests if g.uuid in curves}
    # Room at the start of the cycle; it shifts by exactly what has moved.
    # No reversal of a resize whose echo is still in the rates.
    up = {u: guards.room_up(g, cfg) if curves[u].resized >= 0 else 0
          for u, g in guests.items()}
    down = {u: min(curves[u].donate_mb, guards.room_down(g, cfg))
            if curves[u].resized <= 0 else 0 for u, g in guests.items()}
    delta = dict.fromkeys(guests, 0)
    g_mb = params.granule_mb
    threshold = params.min_value / 1024.0  # per MiB moved
    saved = 0.0
    order = sorted(guests)
    while True:
        taker = donor = None
        gain = loss = 0.0
        for u in order:
            d = delta[u]
            if d >= 0 and up[u] - d >= g_mb:
                slope, seg_left = curves[u].hull_at(d)
                if taker is None or slope > gain:
                    taker, gain, t_room = u, slope, up[u] - d
                    t_seg = seg_left
        for u in order:
            d = delta[u]
            if u != taker and d <= 0 and down[u] + d >= g_mb:
                u_loss = curves[u].loss_at(-d, g_mb)
                if donor is None or u_loss < loss:
                    donor, loss, d_room = u, u_loss, down[u] + d
        if taker is None or donor is None:
            break
        if gain - loss * (1 + params.value_band) <= threshold:
            break
        amount = min(t_room, d_room, max(t_seg, g_mb))
        amount -= amount % g_mb
        # Only as far as the donor's loss stays what was priced.
        while (amount > g_mb and curves[donor].loss_at(
                -delta[donor], amount) > loss):
            amount -= g_mb
        saved += curves[taker].gain(delta[taker] + amount) \
            - curves[taker].gain(delta[taker]) - amount * loss
        delta[taker] += amount
        delta[donor] -= amount
    return delta, saved


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
    threshold = params.min_value / 1024.0
    takers = [m for m in steps.moves if m.target_mb > m.current_mb]
    donors = [m for m in steps.moves if m.target_mb < m.current_mb]
    if not takers or not donors:
        return None
    for t in takers:
        for d in donors:
            if t.instance not in curves or d.instance not in curves:
                return None
            if (curves[t.instance].resized < 0
                    or curves[d.instance].resized > 0):
                return None
            taker, donor = curves[t.instance], curves[d.instance]
            if taker.disk_mb_s / t.delta_mb <= threshold:
                # It cannot save more than it reads.
                return None
            gain = taker.density_at(0)[0]
            if donor.filling:
                # A donor with free memory has evicted nothing: only what
                # its cache served while it filled says anything of it,
                # and only when it read (an idle guest shows nothing). It
                # gives only when that is below min_value, the bar under
                # which this policy calls memory worthless: refaults at a
                # smaller size would overvalue a guest that never showed
                # its value at this one (real kernels keep shadow entries
                # for several cache sizes).
                if taker.filling and taker.fill_density is not None:
                    gain = max(gain, taker.fill_density)
                if donor.fill_density is None or (
                        donor.unfilled_mb > donor.disk_mb_s * donor.window_s
                        or donor.fill_density > threshold
                        or gain - donor.fill_density * (1 + params.value_band)
                        <= threshold):
                    return None
                continue
            loss = donor.loss_at(0, d.current_mb - d.target_mb)
            if gain < loss * (1 - params.value_band) - threshold:
                return None
    steps.moves = [dataclasses.replace(
        m, reason='utility, a tie broken by %s' % m.reason)
        for m in steps.moves]
    return steps


def _measured_slope_below(curve):
    """Reads saved per MiB from the nearest smaller measured size, or None.

    Between that size and this one: an upper bound of the next MiB's worth
    on a concave curve, and the best local guess where the counters cannot
    see (a hot set larger than the active list).
    """
    here = curve.here
    below = [x for x in curve.seen[1:] if x.size_mb < curve.size_mb]
    if here is None or not below:
        return None
    return here.slope_to(max(below, key=lambda x: x.size_mb))


def _probe(host, cfg, params, curves):
    """One granule toward a guest worth more than its counters say, or None.

    That guest's host-measured reads fell more between its last two sizes
    than its counters value memory now.

    Bounded: one granule per host and cycle, from the donor whose loss is
    lowest and only while the measured bound beats it. The next clean
    window measures the new size: reads that fell bear the probe out and
    the next one may follow; reads that did not make the granule the
    cheapest memory this guest has, and the water-filling takes it back.
    """
    g_mb = params.granule_mb
    threshold = params.min_value / 1024.0
    taker, bound = None, 0.0
    for u, c in sorted(curves.items()):
        slope = _measured_slope_below(c)
        if (slope is None or c.resized or c.filling
                or guards.room_up(host.guest(u), cfg) < g_mb
                or slope <= c.density_at(0)[0] * (1 + params.value_band)):
            continue
        if slope > bound:
            taker, bound = u, slope
    if taker is None:
        return None
    donor, loss = None, 0.0
    for u, c in sorted(curves.items()):
        room = min(c.donate_mb, guards.room_down(host.guest(u), cfg))
        if u == taker or c.resized > 0 or c.filling or room < g_mb:
            continue
        u_loss = c.loss_at(0, g_mb)
        if donor is None or u_loss < loss:
            donor, loss = u, u_loss
    if donor is None or bound - loss * (1 + params.value_band) <= threshold:
        return None
    why = ('utility, a probe: measured up to %.3f MiB/s per GiB, the donor '
           '%.3f' % (bound * 1024, loss * 1024))
    proposals = {taker: (host.guest(taker).actual_mb + g_mb, why),
                 donor: (host.guest(donor).actual_mb - g_mb, why)}
    return model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))


def _remember(host, curves):
    """Policy state: measurements (this cycle's too), size, last resize."""
    states = {}
    for uuid, c in curves.items():
        state = {'seen': [s.to_list() for s in c.seen], 'size_mb': c.size_mb,
                 'at': host.guest(uuid).sample.timestamp}
        if c.last_resize is not None:
            state['last_resize'] = list(c.last_resize)
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
    delta, saved = _moves(host, cfg, params, curves)
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
                'utility: value %.3f MiB/s per GiB, %s %d MiB'
                % (density, 'gets' if d > 0 else 'gives', abs(d)))
    result = model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))
    result.predicted_reads_avoided_mb_s = max(0.0, saved)
    result.policy_state = states
    return result
