"""A guest's value curve: what each MiB more, or less, is worth to it.

Built per guest and window from its counters' shape (refaults and
activations, mm/workingset.c) and the host-measured points of its
miss-ratio curve (:mod:`watcher_cams.policy.mrc`), with what it may give.
See :mod:`watcher_cams.policy.utility` and doc/source/strategies.rst.
"""

import dataclasses
import math

from watcher_cams.policy import cliff_trade
from watcher_cams.policy import first_reuse
from watcher_cams.policy import given_back
from watcher_cams.policy import grow_check
from watcher_cams.policy import guards
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import rest_hold
from watcher_cams.policy import stale_active

MB_PER_PAGE = model.MB_PER_PAGE
# MemTotal changes smaller than this (KiB) are not a balloon change.
RESIZE_KB = 4096
# File LRU growth (MiB) over the rate window that counts as filling.
GROWTH_MB = 32
# Refaults beyond the active list less dense than this share of those
# within it make the active list a knee of the curve (a hot set).
KNEE_SHARE = 0.5
# Refaults (a share of all reads since boot) and activations (of the reads
# now) that a first pass may show: the boot's own re-reads, and noise.
FIRST_PASS_REFAULTS = 0.01
FIRST_PASS_LRUS = 3


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
    # The first MiB of ``segments`` priced by host-measured reads.
    measured_mb: float = 0.0
    # When it stopped reading at this size (mrc.idle_since), or None.
    idle_since: float = None
    # When a clean window last bore out its measurements (mrc.confirmed_at).
    confirmed_at: float = None
    # When its reads last showed a new workload (mrc.phase_at), or None.
    phase_at: float = None
    # A grow still echoing in its rates, to check once it no longer does
    # (grow_check.pending), or None.
    grow_pending: tuple = None
    # The size it was grown from, where it read less than now (MiB,
    # grow_check.read_less_at), or None.
    reads_less_at: int = None
    # While idle: the measurements of the workload that stopped, kept in
    # the policy state (not priced) for when it comes back; once back,
    # when that idle spell began (mrc.resumed_from).
    dormant: tuple = ()
    resumed_from: float = None
    # Some of what it may give is priced by a measurement at a smaller
    # size alone (see _measured_down_to).
    priced_below: bool = False
    # While filling: reads the cache served per MiB of it (MiB/s per MiB),
    # measured when the guest read at least a granule in the window;
    # None when it read less (an idle guest shows nothing).
    fill_density: float = None
    # The last balloon change this policy saw: (time, +1 grown / -1 shrunk).
    last_resize: tuple = None
    # What it can hold (its size less its used memory), its disk reads and
    # their rate window.
    capacity_mb: float = 0.0
    disk_mb_s: float = 0.0
    window_s: float = 0.0
    # Refaults and activations (MiB/s, capped by the disk reads).
    refault_mb_s: float = 0.0
    activate_mb_s: float = 0.0
    # It read less, since it booted, than its kernel tells reuse over and
    # re-read nothing of it (see first_pass()).
    first_pass: bool = False
    # Memory its cache never filled, above the floor margin (MiB).
    free_mb: float = 0.0
    # All its free memory when its cache did not grow over the window: its
    # cache holds all it re-reads in less (MiB).
    unused_mb: float = 0.0
    # It reads nothing from disk and its CPUs idle (mrc.cpu_idle).
    quiet: bool = False
    # What it may give at no loss: its unused free memory (unused_mb), a
    # quiet guest's step (step_mb), or a granule of what an old workload
    # left in the cache of one that reads and hits nothing
    # (_unread_active_mb).
    no_loss_mb: float = 0.0
    # Pages it had activated when its workload began (stale_active.base).
    activated_base: int = None
    # While it rests: when the rest began, MiB of its cache its return
    # re-reads (rest_hold.reread_mb), and what giving them (all it gives
    # beyond held_from_mb) costs per MiB (rest_hold.density); when it last
    # came back from a rest.
    rest_since: float = None
    reread_mb: int = None
    hold_density: float = 0.0
    returned_at: float = None
    # The size a probe gives back at once (given_back.restore_mb): what it
    # held while it read nothing, or, without an agent, under a workload
    # that has changed since.
    restore_mb: int = None
    # The largest size it held while it read nothing, until it reads
    # again (given_back.LENT_KEY).
    lent_mb: int = None
    # A scan's reach, from what it read before its first re-read.
    reach: first_reuse.Reach = first_reuse.Reach()
    # Where that puts its cliff, once it prices the curve (utility).
    cliff_mb: float = None
    # A scan that fits: (the size below which it no longer does, the MiB/s
    # it then reads), once it prices the curve (first_reuse.held_cliff).
    held_cliff: tuple = None
    # Its counters priced giving far above what the host measured a step
    # below it cost (mrc.loss_belied): that step prices it (but see
    # utility._on_the_way).
    loss_belied: bool = False
    # A fitted scan's memory traded below its cliff: (the cliff, MiB/s it
    # reads below it), until it holds it again (cliff_trade.remembered).
    traded: tuple = None

    @property
    def held_from_mb(self):
        """MiB it gives before what it gives is what its return re-reads.

        Free memory and pages it read once: all it can hold (its size
        less its used memory) but :attr:`reread_mb`.
        """
        return max(0.0, self.capacity_mb - (self.reread_mb or 0))

    def density_at(self, offset_mb):
        return mrc.segment_at(self.segments, offset_mb)

    def hull_at(self, offset_mb, room_mb=None):
        """(best mean density from ``offset_mb`` on, MiB it holds for).

        The concave hull's slope there: a curve with a flat step before a
        cliff (a scan that fits only in more memory) is worth what the
        whole step to the cliff saves per MiB. Only within ``room_mb``
        more (None: no limit): what lies beyond the memory a guest may
        ever have saves it nothing, and must not price what it may take.
        """
        best, best_len = self.density_at(offset_mb)
        end = math.inf if room_mb is None else offset_mb + room_mb
        start = 0.0
        for length, _ in self.segments:
            start += length
            if start > offset_mb:
                top = min(start, end)
                span = top - offset_mb
                mean = (self.gain(top) - self.gain(offset_mb)) / span
                if mean > best:
                    best, best_len = mean, span
                if top == end:
                    break
        return best, best_len

    def loss_at(self, given_mb, amount_mb):
        """Loss density of giving ``amount_mb`` more after ``given_mb``.

        The current estimate, or more where an earlier measurement at a
        smaller size covered the memory given, or where the disk reads
        measured at a smaller size say so.
        """
        # What a resting guest gives of its active list, its return
        # re-reads (rest_hold).
        hold = (self.hold_density if self.hold_density
                and given_mb + amount_mb > self.held_from_mb else 0.0)
        if given_mb + amount_mb <= self.no_loss_mb:
            # No read needs free memory its cache left unused, nor, in a
            # guest that reads nothing, the step of its cache it gives,
            # whatever a measurement of an earlier workload priced them
            # (the next window measures the step: a reader it cost reads
            # again, and is neither quiet nor unread). Only the return of
            # a resting guest (a probe may still try the step: probes).
            return hold
        top = self.size_mb - given_mb
        loss = self.loss_density
        for seen in self.seen:
            if (seen.size_mb < top
                    and seen.size_mb + seen.length_mb > top - amount_mb):
                loss = max(loss, seen.density)
        if self.held_cliff is not None:
            fits_mb, reads_mb_s = self.held_cliff
            if top >= fits_mb > top - amount_mb:
                # All its reads come back with the step that crosses it,
                # however large: not a slope between two measurements.
                loss = max(loss, reads_mb_s / amount_mb)
        return max(loss, hold, self.measured_loss(given_mb, amount_mb))

    def measured_loss(self, given_mb, amount_mb):
        """The part of :meth:`loss_at` the host measured (0.0: none).

        The guest's own disk reads at a smaller size (within
        mrc.EMPIRICAL_REACH_MB of what the move reaches), against what it
        reads now (:attr:`reads_here`).
        """
        here = self.reads_here
        below = [x for x in self.seen if x.size_mb < self.size_mb]
        if here is None or not below:
            return 0.0
        cache_end_mb = here.size_mb - self.unused_mb
        if self.unused_mb and all(x.size_mb < cache_end_mb for x in below):
            # It reads as much where its cache ends as at this size: what
            # was measured smaller was saved below there. (Not when it was
            # measured at or above there: that read another workload.)
            here = dataclasses.replace(here, size_mb=cache_end_mb)
        bottom = self.size_mb - given_mb - amount_mb
        near = [x for x in below
                if x.size_mb >= bottom - mrc.EMPIRICAL_REACH_MB]
        # Else, for memory only a measurement prices (see
        # _measured_down_to), the nearest: its mean slope, on a concave
        # curve no less than what the memory nearest this size saves. Its
        # free memory too where it was measured at this size: a cache
        # refilling where it was (grown back there) will use it.
        if not near and self.priced_below and (
                given_mb + amount_mb > self.free_mb
                or self.here is not None):
            near = [max(below, key=lambda x: x.size_mb)]
        return max([self.measured_slope(x, here) for x in near] or [0.0])

    def measured_slope(self, one, other):
        """Reads saved per MiB between two measurements (mrc.Seen).

        Nothing (0.0) within their windows' spread (mrc.within_spread).
        """
        if mrc.within_spread(one, other):
            return 0.0
        return one.slope_to(other)

    def probe_loss_at(self, given_mb, amount_mb):
        """:meth:`loss_at` for a probe (see host_only.HostOnlyCurve)."""
        return self.loss_at(given_mb, amount_mb)

    def gain_is_measured(self, offset_mb):
        """Whether host-measured reads priced the gain at ``offset_mb``."""
        return offset_mb < self.measured_mb

    def loss_is_measured(self, given_mb, amount_mb):
        """Whether host-measured reads priced :meth:`loss_at`.

        They did when they stopped: a guest that went idle; or when a
        step below belied its counters (:attr:`loss_belied`).
        """
        if self.idle_since is not None:
            return True
        if self.loss_belied and self.loss_at(
                given_mb, amount_mb) <= self.loss_density:
            return True
        measured = self.measured_loss(given_mb, amount_mb)
        return measured > 0 and measured >= self.loss_at(given_mb, amount_mb)

    @property
    def here(self):
        """The measurement at the current size, if there is one.

        The newest one, unless it grew or shrank back to a size measured
        before (a guest back from idle to where it was).
        """
        return next((x for x in self.seen if x.size_mb == self.size_mb),
                    None)

    @property
    def reads_here(self):
        """What the guest reads at its size, as a mrc.Seen, or None.

        The measurement there or, while its cache fills (and was not just
        resized), this window's reads: no less than it will read once
        filled, nor than its steady reads.
        """
        if self.here is not None or not self.filling or self.resized:
            return self.here
        return mrc.Seen(self.size_mb, 0.0, max(self.capacity_mb, 1.0),
                        0.0, self.disk_mb_s)

    def gain(self, mb):
        """MiB/s of reads saved by ``mb`` more MiB."""
        total, left = 0.0, mb
        for length, slope in self.segments:
            used = min(left, length)
            total += used * slope
            left -= used
        return total


def value_curve(guest, cfg, params):
    """The guest's gain curve, or None when it has no usable rates."""
    r = model.rates(guest)
    if r is None or not guest.has_data:
        return None
    disk, refault, activate = _read_rates_mb_s(r, guest.host_io)
    segments = _refault_segments(guest.sample, refault, activate, params)
    filling, free_mb = cache_filling(guest, disk * r.interval_s, cfg)
    last_resize = last_balloon_change(guest)
    resized = resized_in_window(guest, last_resize, params)
    past = _history(guest, (disk, activate, filling, r.interval_s), resized,
                    params)
    seen, idle, confirmed = past.seen, past.idle_since, past.confirmed_at
    if idle is not None:
        # One flat segment: no knee keeps an idle guest's active list.
        segments, filling = ((params.min_segment_mb, 0.0),), False
    inactive_hits = _inactive_hit_density(guest, r, params)
    # Reuse the cache showed while it filled prices its free memory.
    fill_mb = disk * params.fill_horizon_s if (
        first_pass(guest.sample, r) or not inactive_hits) else 0.0
    quiet = mrc.cpu_idle(guest, seen, disk, params)
    # Reads measured smaller price the memory down to there, unless it
    # reads nothing now because it went idle, not because its data fits.
    released = 0 if quiet else _measured_down_to(
        guest, cfg, (seen, None if resized else disk), params)
    unread = 0 if filling or resized or idle is not None else (
        _unread_active_mb(guest, cfg, params, (disk, r.pgactivate_s), past))
    donate = _donatable_mb(guest, cfg, params, (fill_mb, filling, quiet),
                           (segments, max(released, unread)), free_mb)
    resumed = mrc.resumed_from(guest, idle, seen)
    reach = first_reuse.tracked(past.reach, guest, r, disk)
    clean = idle is None and not filling and not resized
    seen, segments, measured_mb = mrc.measured_since(
        guest, r, segments, seen, (disk, refault), params,
        resumed) if clean else (seen, segments, 0.0)
    return ValueCurve(
        segments=segments, **_loss_fields(guest, (seen, segments, clean),
                                          inactive_hits),
        donate_mb=max(0, int(donate)), resized=resized, filling=filling,
        size_mb=guest.actual_mb, seen=seen, measured_mb=measured_mb,
        last_resize=last_resize, grow_pending=past.grow[0],
        reads_less_at=past.grow[1], idle_since=idle, confirmed_at=confirmed,
        dormant=past.dormant, resumed_from=resumed, priced_below=released > 0,
        refault_mb_s=refault, activate_mb_s=activate, quiet=quiet,
        activated_base=past.activated_base, phase_at=past.phase_at,
        traded=cliff_trade.remembered(guest, disk),
        **_rest_fields(guest, quiet, params),
        **_given_back_fields(guest, disk, quiet, params), **_cache_fields(
            guest, (cfg, params), r, (disk, filling, free_mb, reach),
            max(unread, step_mb(guest, cfg, free_mb) if quiet else 0.0)))


def _loss_fields(guest, curve, inactive_hits):
    """The ValueCurve fields of what giving memory costs the guest.

    ``curve``: (its measurements, its segments, whether this window was
    clean). The counters' price of the next MiB, unless a step below the
    host measured belies it (mrc.loss_belied); and no less than what
    hits on its inactive list (MiB/s per MiB) say shrinking loses.
    """
    seen, segments, clean = curve
    belied = mrc.loss_belied(guest, seen, segments) if clean else None
    density = segments[0][1] if belied is None else min(segments[0][1],
                                                        belied)
    return dict(loss_density=max(density, inactive_hits),
                loss_belied=belied is not None)


def _rest_fields(guest, quiet, params):
    """The ValueCurve fields of a guest that may be resting.

    ``quiet``: it reads nothing and its CPUs idle (mrc.cpu_idle), which
    is how a rest shows. Where it came back from a rest before, its
    active list is priced as rest_hold says, its rest spread over no
    less than ``fill_horizon_s`` (the horizon over which a cache's reuse
    prices memory here): a rest just begun holds its cache only from
    takers that save less than a re-read of it in that long.
    """
    rest = (rest_hold.rest_since(guest, quiet),
            rest_hold.returned_at(guest, quiet))
    return dict(
        rest_since=rest[0], returned_at=rest[1],
        reread_mb=rest_hold.reread_mb(guest, rest[0]),
        hold_density=rest_hold.density(guest, rest, params.fill_horizon_s))


def _given_back_fields(guest, disk_mb_s, quiet, params):
    """The ValueCurve fields of what a guest gave while it read nothing.

    It lends while it reads (next to) nothing and its CPUs idle
    (``quiet``): a guest whose data fits its cache reads nothing from
    disk either, and what the water-filling took from it was measured
    not to cost it reads. Once it reads, what it held is probed back
    (given_back.restore_mb): random host 259, an idle guest's memory went
    to a reader over 16 GiB and it woke to a 1 GiB scan that its 128 MiB
    cache read like a stream, 4 MiB/s for 90 minutes (2.33x the oracle,
    now 1.08x).
    """
    reads = disk_mb_s >= mrc.READ_MB_S
    return dict(
        lent_mb=given_back.lent_mb(guest, quiet and not reads),
        restore_mb=given_back.restore_mb(guest, disk_mb_s, params)
        if reads else None)


def _cache_fields(guest, conf, r, window, no_loss_mb):
    """The ValueCurve fields of the guest's cache in this rate window.

    ``conf``: (GuardConfig, UtilityParams); ``r``: its rates; ``window``:
    (its disk reads in MiB/s, whether its cache fills, its free MiB, its
    first_reuse.Reach); ``no_loss_mb``: what else it gives at no loss
    (ValueCurve.no_loss_mb) than the free memory its cache left.
    """
    cfg, params = conf
    disk, filling, free_mb, reach = window
    # Free memory its cache left while it did not grow: no read needs it.
    unused_mb = 0.0 if cache_grew(guest, disk * r.interval_s) else max(
        0.0, free_mb)
    return dict(
        unused_mb=unused_mb, no_loss_mb=max(unused_mb, no_loss_mb),
        fill_density=_fill_density(guest, r, params) if filling else None,
        capacity_mb=guest.actual_mb - guest.sample.used_mb,
        disk_mb_s=disk, window_s=r.interval_s,
        first_pass=first_pass(guest.sample, r) or first_reuse.may_still_fit(
            reach, guest, disk * r.interval_s),
        free_mb=max(0.0, free_mb - cfg.floor_margin_mb), reach=reach)


@dataclasses.dataclass(frozen=True)
class _History:
    """What was measured of a guest's workload before this window."""

    seen: tuple
    dormant: tuple
    idle_since: object
    confirmed_at: float
    reach: first_reuse.Reach
    # (the grow to check once its echo ends, MiB to give it back to): see
    # _grow_checked.
    grow: tuple = (None, None)
    # Pages the guest had activated when its workload began (stale_active).
    activated_base: int = None
    # When its reads last showed a new workload (mrc.phase_at).
    phase_at: float = None


def _history(guest, window, resized, params):
    """The measurements (and reach) that still describe the guest's reads.

    Those an idle guest's old workload left wait, dormant, for its return;
    those its reads at this size contradict are dropped, reach included.
    ``window``: (its disk reads and activations in MiB/s, whether its
    cache is filling, the rate window in s).
    """
    disk = window[0]
    seen = mrc.remembered(guest, params)
    idle = mrc.idle_since(guest, seen, disk, params)
    reach = first_reuse.remembered(guest.policy_state.get(mrc.STATE_KEY))
    if idle is not None:
        # What its cache holds is no longer read, and what was measured
        # was of its old workload: all but its used memory may go. Those
        # measurements wait for its return: nothing it read since
        # contradicts them.
        return _History((), seen, idle, guest.sample.timestamp, reach)
    confirmed, new_phase = mrc.confirmed_at(guest), False
    if not resized:
        if not _refilling(guest, seen, window):
            # By more than chance where the host counted the requests
            # (as without an agent): a workload that changed shape at
            # about the same reads left a curve no half-rule catches.
            kept = mrc.of_this_phase(seen, guest.actual_mb, disk, params,
                                     mrc.requests_in_window(guest))
            new_phase = bool(seen) and not kept
            if new_phase:
                # Its reads at this size moved: a new workload, whose
                # reach its own first re-read will tell, counted from
                # here (not from boot: the old one's reads are no part
                # of the new one's pass).
                reach = first_reuse.Reach(fresh_mb=0.0)
            seen = kept
        # A clean window bears out what it kept; a refill's, all of it.
        confirmed = guest.sample.timestamp
    seen, grow = _grow_checked(guest, seen, (window, resized), params)
    base = stale_active.base(guest, guest.policy_state.get(mrc.STATE_KEY),
                             (new_phase, resized < 0))
    phase = guest.sample.timestamp if new_phase else mrc.phase_at(guest)
    return _History(seen, (), idle, confirmed, reach, grow, base, phase)


def _refilling(guest, seen, window):
    """Whether the window is a cache refilling what a grow gave back.

    A guest grown back over sizes it was measured at re-reads what its
    shrink evicted, while its cache fills again: its reads at this size
    rise for as long as that takes, but no higher than at the smaller
    sizes it held. No new workload: mrc.of_this_phase would drop every
    measurement, the one below that priced the memory included, and the
    guest would give it again a window later (random host 485: a 1,331
    MiB scan gave the same 320 MiB every nine minutes for an hour, and
    read 1.03x static). ``window``: as :func:`_history`'s.
    """
    disk, _, filling, _ = window
    last = last_balloon_change(guest)
    below = [x.disk_mb_s for x in seen if x.size_mb < guest.actual_mb]
    return (filling and last is not None and last[1] > 0 and bool(below)
            and disk <= min(below) * (1 + mrc.NOISE_SHARE))


def _grow_checked(guest, seen, window, params):
    """(seen, (grow to carry, MiB to give back to)) after a grow's echo.

    See grow_check. ``window``: (as :func:`_history`'s, resized). While
    the grow echoes, it is carried; the first window after decides. A
    filling cache's window measures nothing, but what the memory cost
    is kept, so that what it gives back is not priced as before.
    """
    (disk, activate, filling, interval_s), resized = window
    grow = grow_check.pending(guest, _grew_since_plan(guest))
    if resized:
        return seen, (grow, None)
    back_to = grow_check.read_less_at(grow, guest.actual_mb,
                                      (disk, activate))
    if back_to is not None and filling:
        seen = mrc.with_seen(seen, mrc.Seen(
            guest.actual_mb, 0.0, params.min_segment_mb,
            guest.sample.timestamp, disk), interval_s, params)
    return seen, (None, back_to)


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


def first_pass(s, r):
    """Whether no counter can have shown the guest's reuse yet.

    A guest that has read, since it booted, less than FIRST_PASS_LRUS
    times its file LRU, refaulted (next to) nothing of it and hits nothing
    in its cache now (no page activated: ``r``, its rates) may be in the
    first pass of a scan that fits in more memory: its reuse has not come
    round yet. Zero refaults are evidence of a stream only once it read
    further than that. (Three: a scan up to three times its cache is
    protected; a tie step away from a reader over far more data waits at
    most three cache fills.)
    """
    return (s.read_mb < FIRST_PASS_LRUS * s.file_lru_mb
            and s.refault_mb <= FIRST_PASS_REFAULTS * s.read_mb
            and r.pgactivate_s * MB_PER_PAGE
            <= FIRST_PASS_REFAULTS * r.disk_read_mb_s)


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
    second = max(mrc.SHADOW_REACH * s.file_lru_mb, params.min_segment_mb)
    s1 = activate / first
    s2 = (refault - activate) / second
    if s2 > s1:
        return ((first + second, refault / (first + second)),)
    return ((first, s1), (second, s2))


def cache_filling(guest, read_mb, cfg):
    """(whether the guest's cache is still filling, its free MiB).

    A cache that grew over the window by more than GROWTH_MB, or kept at
    least half of the ``read_mb`` read into it, is still filling: what it
    evicts now has not come back yet, so its refaults understate its value
    (and the kernel keeps some free memory below its watermarks, so "free"
    alone misses the last few hundred MiB). Not a full cache whose size
    rose by less, refaulting nothing: the kernel reclaims it in batches
    down to a watermark and it refills to the next, and a reader whose
    misses nothing re-reads (cold blocks, or a stream) never refaults; so
    taken for filling, it was never measured and never valued.
    """
    s = guest.sample
    free = s.mem_available_kb / model.KB_PER_MB - s.file_lru_mb
    return free > cfg.floor_margin_mb or cache_grew(guest, read_mb), free


def cache_grew(guest, read_mb):
    """Whether the cache grew by more than GROWTH_MB or half its reads."""
    growth = guest.sample.file_lru_mb - guest.previous.file_lru_mb
    return growth > GROWTH_MB or (growth > 0 and growth >= read_mb / 2)


def _donatable_mb(guest, cfg, params, fill, curve, free_mb):
    """What the guest may give: above its floor and its active set.

    ``fill``: (MiB its reads will fill soon, whether the cache is
    filling, whether mrc.cpu_idle() calls it idle); ``curve``: (its
    refault segments, MiB :func:`_measured_down_to` releases). The
    active list is
    kept when it is the knee of the curve (see
    :func:`_active_list_is_a_knee`). While the cache fills, nothing was
    evicted, so the refault counters say nothing about what the cache is
    worth: only the free memory may go, less what the reads will fill
    soon where the cache showed no reuse yet (where it did, its inactive
    pages' hits price that memory: see :func:`_inactive_hit_density`). A
    guest whose CPUs idle gives at least :func:`step_mb`. A guest
    stalled on memory (PSI) gives nothing.
    """
    fill_mb, filling, quiet = fill
    segments, released = curve
    active = 0
    if _active_list_is_a_knee(segments):
        active = guest.sample.active_file_mb
    donate = guest.actual_mb - kept_mb(guest, cfg, active)
    if filling:
        donate = min(donate, free_mb - cfg.floor_margin_mb - fill_mb)
    donate = max(donate, released)
    if quiet:
        donate = max(donate, step_mb(guest, cfg, free_mb))
    if stalled_on_memory(guest, params):
        donate = 0
    return donate


def _unread_active_mb(guest, cfg, params, rates, past):
    """MiB of its active list a guest that reads nothing may give a cycle.

    ``rates``: (its disk reads in MiB/s, the host's where it measured
    them; pages its kernel activated per second); ``past``: its _History.
    The active list is kept as the knee of the curve
    (:func:`_active_list_is_a_knee`), but the kernel ages active pages
    only under pressure, and those an old phase left stay active for hours
    beside a new workload that fits. A guest that reads nothing from disk
    and hits nothing on its inactive list (no activation) loses nothing
    while only pages its workload never activated go (stale_active): one
    granule may, while it holds that many and its inactive list holds as
    much (the kernel refills that list from the active list's oldest
    pages). The next window measures the step: reads that come back are a
    measurement at the smaller size and price the memory back, activations
    price the inactive list (:func:`_inactive_hit_density`), and an
    emptied inactive list ends the steps. Whatever one measurement at a
    smaller size read (the first window of a new phase reads its first
    pass at any size), but not where two or more did: a curve that agrees
    with itself prices that memory (:func:`_measured_down_to`). Not from a
    guest stalled on memory. A guest's claims can only lose it memory
    here, never gain it.
    """
    disk_mb_s, activated_s = rates
    if (disk_mb_s > mrc.IDLE_MB_S
            or activated_s * MB_PER_PAGE > mrc.IDLE_MB_S
            or guest.sample.inactive_file_mb < params.granule_mb
            or stalled_on_memory(guest, params)):
        return 0
    if len(_read_more_below(guest, past.seen, disk_mb_s, params)) >= 2 or (
            stale_active.never_activated_mb(guest, past.activated_base)
            < params.granule_mb):
        return 0
    return min(params.granule_mb, guest.actual_mb - kept_mb(guest, cfg))


def stalled_on_memory(guest, params):
    """Whether the guest reports stalls on memory (PSI) worth protecting.

    The one test every donor rule shares, so that the water-filling and
    the probes can never disagree on which guest may not give.
    """
    psi = guest.sample.psi_some_avg10
    return psi is not None and psi >= params.psi_protect


def _measured_down_to(guest, cfg, curve, params):
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


def _inactive_hit_density(guest, r, params):
    """Hits per second per MiB of the inactive file list (0: unknown).

    ``pgactivate`` counts pages moved to an active list, mostly inactive
    pages hit again: the reads the cache's margin serves, which is what
    shrinking it loses. It sees a hot set larger than the active list,
    whose pages cycle through the inactive one and are hit there, where
    refaults see nothing (they are hits, not misses). A guest's claim: it
    may keep memory the guest has, never get it more (it prices losses
    only). Over at least ``min_segment_mb``: a list of a few MiB (a cache
    whose pages all became active) says little of the MiB behind it.
    """
    inactive = max(guest.sample.inactive_file_mb, params.min_segment_mb)
    return r.pgactivate_s * MB_PER_PAGE / inactive


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


def resized_in_window(guest, last_resize, params):
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


def _grew_since_plan(guest):
    """Whether the balloon grew the guest after the last plan."""
    change = _change_since_plan(guest)
    return change is not None and change[1] > 0


def _change_since_plan(guest):
    """(time of the last plan, direction) if the size changed since, or None.

    The policy state keeps the size at each plan; a different size now
    means a change after that plan (taken as right after it).
    """
    state = guest.policy_state.get(mrc.STATE_KEY)
    try:
        size, at = int(state['size_mb']), float(state['at'])
    except (KeyError, TypeError, ValueError):
        return None
    if abs(guest.actual_mb - size) * 1024 < RESIZE_KB:
        return None
    return at, 1 if guest.actual_mb > size else -1


def last_balloon_change(guest):
    """(time, direction) of the guest's last balloon change, or None.

    One since the last plan (:func:`_change_since_plan`), or the one the
    policy state recorded.
    """
    state = guest.policy_state.get(mrc.STATE_KEY)
    if not isinstance(state, dict):
        return None
    change = _change_since_plan(guest)
    if change is not None:
        return change
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
