"""A guest's value curve: what each MiB more, or less, is worth to it.

Built per guest and window from its counters' shape (refaults and
activations, mm/workingset.c) and the host-measured points of its
miss-ratio curve (:mod:`watcher_cams.policy.mrc`), with what it may give.
See :mod:`watcher_cams.policy.utility` and doc/source/strategies.rst.
"""

import dataclasses
import functools
import math

from watcher_cams.policy import cache_window
from watcher_cams.policy import cliff_trade
from watcher_cams.policy import donation
from watcher_cams.policy import fill_curve
from watcher_cams.policy import first_reuse
from watcher_cams.policy import given_back
from watcher_cams.policy import grow_check
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import rest_hold
from watcher_cams.policy import stale_active
from watcher_cams.policy import touched_turn


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
    # (When a clean window last bore out its measurements, those up to
    # what size): mrc.confirmed_at and mrc.borne_out_mb, each or None.
    borne_out: tuple = (None, None)
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
    # size alone (see donation.measured_down_to).
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
    # re-read nothing of it (see cache_window.first_pass()).
    first_pass: bool = False
    # Memory its cache never filled, above the floor margin (MiB).
    free_mb: float = 0.0
    # What its reads did while its cache last filled (fill_curve).
    fill: fill_curve.Fill = fill_curve.Fill()
    # All its free memory when its cache did not grow over the window: its
    # cache holds all it re-reads in less (MiB). Without an agent, also
    # what a growing cache will not reach soon (host_only._unused_mb).
    unused_mb: float = 0.0
    # It reads nothing from disk and its CPUs idle (mrc.cpu_idle).
    quiet: bool = False
    # What it may give at no loss: its unused free memory (unused_mb), a
    # quiet guest's step (donation.step_mb), or a granule of what an old
    # workload left in the cache of one that reads and hits nothing
    # (donation.unread_active_mb).
    no_loss_mb: float = 0.0
    # Pages it had activated when its workload began (stale_active.base).
    activated_base: int = None
    # While it rests: when the rest began, MiB of its cache its return
    # re-reads (rest_hold.reread_mb), and what giving them (all it gives
    # beyond held_from_mb) costs per MiB of re-read (rest_hold.density;
    # see return_cost); when it last came back from a rest.
    rest_since: float = None
    reread_mb: int = None
    hold_density: float = 0.0
    returned_at: float = None
    # How long its last rest lasted (s, rest_hold.rested_s), or None.
    rested_s: float = None
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
    # A fitted scan's memory traded below its cliff, or a first pass's
    # free memory lent: (the cliff, MiB/s it reads below it), until it
    # holds it again (cliff_trade.remembered).
    traded: tuple = None
    # The full window a run of grows is audited from (grow_check.full_base).
    full_base: mrc.Seen = None
    # This window measured a step from a smaller size that saved less than
    # half what its counters promised there (grow_check.step_belies).
    counters_belied: bool = False

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
        hold = self.hold_at(given_mb, amount_mb)
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

    def hold_at(self, given_mb, amount_mb):
        """What giving ``amount_mb`` after ``given_mb`` costs its return.

        What a resting guest gives beyond :attr:`held_from_mb`, its return
        re-reads (rest_hold, :meth:`return_cost`); 0.0 for anything else.
        """
        if self.hold_density and given_mb + amount_mb > self.held_from_mb:
            return self.return_cost(given_mb, amount_mb)
        return 0.0

    def return_cost(self, given_mb, amount_mb):
        """What a resting guest's return costs per MiB it gave, per second.

        rest_hold prices one re-read per MiB of its active list. Where the
        host measured it reading more at the smaller size, its return reads
        that much more until it is grown back, a rate window at least: a
        scan that fitted thrashes whole once a step short of its cliff
        (wide host 1: a scan resting 600 s of every 1,800 gave 192 MiB at
        each rest and re-read 819 MiB at each return). A scan that no
        longer fits re-reads all its reach (rest_hold.reread_mb) at its
        return, however little it gave, where the host measured it
        reading at or below the size the step reaches (the reach alone is
        the guest's claim).
        """
        reread = max(1.0, self.measured_loss(given_mb, amount_mb)
                     * self.window_s)
        scan_mb = min(self.reach.scanned_mb or 0.0, self.reread_mb or 0)
        bottom_mb = self.size_mb - given_mb - amount_mb
        if scan_mb > self.capacity_mb - given_mb - amount_mb and any(
                x.size_mb <= bottom_mb and x.disk_mb_s >= mrc.READ_MB_S
                for x in self.seen):
            reread = max(reread, scan_mb / amount_mb)
        return self.hold_density * reread

    def priced_by_reads(self):
        """This curve, what it gives priced by the host's reads alone.

        Without what the counters priced: its loss density and the
        densities its measurements kept. :meth:`loss_at` then weighs only
        :meth:`measured_loss` (and what a rest holds).
        """
        return dataclasses.replace(self, loss_density=0.0, seen=tuple(
            dataclasses.replace(x, density=0.0) for x in self.seen))

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
        # donation.measured_down_to), the nearest: its mean slope, on a
        # concave curve no less than what the memory nearest this size
        # saves. Its free memory too where it was measured at this size: a
        # cache refilling where it was (grown back there) will use it.
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

    @functools.cached_property
    def here(self):
        """The measurement at the current size, if there is one.

        The newest one, unless it grew or shrank back to a size measured
        before (a guest back from idle to where it was). Kept once found:
        the water-filling and the ladders of scan_cliffs price a curve
        granule by granule, and each price looks here (a frozen curve's
        fields never change; dataclasses.replace makes a new one).
        """
        return next((x for x in self.seen if x.size_mb == self.size_mb),
                    None)

    @functools.cached_property
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
    disk, refault, activate = cache_window.read_rates_mb_s(r, guest.host_io)
    segments = _refault_segments(guest.sample, refault, activate, params)
    filling, free_mb = cache_window.cache_filling(
        guest, disk * r.interval_s, cfg)
    last_resize = cache_window.last_balloon_change(guest)
    resized = cache_window.resized_in_window(guest, last_resize, params)
    past = _history(guest, (disk, activate, filling, r.interval_s), resized,
                    params)
    seen, idle = past.seen, past.idle_since
    if idle is not None:
        # One flat segment: no knee keeps an idle guest's active list.
        segments, filling = ((params.min_segment_mb, 0.0),), False
    inactive_hits = cache_window.inactive_hit_density(guest, r, params)
    quiet = mrc.cpu_idle(guest, seen, disk, params)
    donate, released, unread = _what_it_gives(
        guest, (cfg, params), (r, disk, inactive_hits),
        (segments, filling, resized, quiet, free_mb), past)
    resumed = mrc.resumed_from(guest, idle, seen)
    reach = first_reuse.tracked(past.reach, guest, r, disk, resized)
    base = grow_check.full_base(guest, segments, (disk, resized, free_mb),
                                cfg, params)
    seen, clean, belied = _measuring(guest, cfg, seen, (
        disk, resized, free_mb, filling, idle), (base, past.phase_at))
    seen, segments, measured_mb = mrc.measured_since(
        guest, r, segments, seen, (disk, refault, activate), params,
        resumed) if clean else (seen, segments, 0.0)
    loss = _loss_fields(guest, (seen, segments, clean), inactive_hits)
    if not measured_mb:
        segments = _growth_belied(guest, seen, segments, (activate, idle))
    return ValueCurve(
        segments=segments, **loss,
        donate_mb=max(0, int(donate)), resized=resized, filling=filling,
        size_mb=guest.actual_mb, seen=seen, measured_mb=measured_mb,
        last_resize=last_resize, resumed_from=resumed,
        priced_below=released > 0, refault_mb_s=refault,
        activate_mb_s=activate, quiet=quiet, **past.curve_fields(),
        traded=cliff_trade.remembered(guest, disk), full_base=base,
        counters_belied=belied, fill=_fill(guest, disk, (filling, resized),
                                           past.phase_at),
        **rest_fields(guest, quiet, (r.interval_s, reach.scanned_mb)),
        **_given_back_fields(guest, disk, quiet, params), **_cache_fields(
            guest, (cfg, params), r, (disk, filling, free_mb, reach),
            max(unread, donation.step_mb(guest, cfg, free_mb)
                if quiet else 0.0)))


def _fill(guest, disk_mb_s, window, phase_at):
    """What its reads did while its cache last filled (fill_curve.Fill).

    ``window``: (whether its cache fills, whether it was resized in the
    window); ``phase_at``: when its reads last showed a new workload, which
    forgets an earlier fill's slope on the window it shows.
    """
    new_phase = phase_at is not None and phase_at >= guest.sample.timestamp
    return fill_curve.measured(guest, disk_mb_s, window, new_phase)


def _measuring(guest, cfg, seen, window, since):
    """(seen, whether the window measures the guest, whether it belies).

    A clean window measures it: no resize in it, its cache not filling,
    the guest not idle. So does one whose full memory belies the counters
    that grew it (grow_check.fill_belies, with the full_base), made with
    what that returns. Either belies the counters where the step from the
    last smaller measurement saved less than half what they promised
    there (grow_check.step_belies); a clean one does too where larger
    sizes measured before saved less than that, since its workload began
    (grow_check.larger_belies). ``window``: (disk reads in MiB/s,
    cache_window's resized, free MiB, whether its cache fills, when it
    went idle or None); ``since``: (the full_base, when its reads last
    showed a new workload or None).
    """
    disk, resized, free_mb, filling, idle = window
    base, phase_at = since
    if idle is not None:
        return seen, False, False
    if not filling and not resized:
        return seen, True, (grow_check.step_belies(guest, seen, disk)
                            or grow_check.larger_belies(
                                guest, seen, disk, phase_at))
    audited = grow_check.fill_belies(guest, seen, (disk, resized, free_mb),
                                     cfg, base)
    return (seen, False, False) if audited is None else (audited, True, True)


def _what_it_gives(guest, conf, rates, window, past):
    """(MiB it may give, MiB a smaller measurement prices, MiB unread).

    See :func:`donation.donatable_mb`. ``conf``: (GuardConfig,
    UtilityParams); ``rates``: (model.rates, its disk reads in MiB/s,
    cache_window.inactive_hit_density); ``window``: (its refault segments,
    whether its cache fills, whether it was resized, whether it is quiet,
    its free MiB); ``past``: its _History.
    """
    cfg, params = conf
    r, disk, inactive_hits = rates
    segments, filling, resized, quiet, free_mb = window
    # Reuse the cache showed while it filled prices its free memory.
    fill_mb = disk * params.fill_horizon_s if (
        cache_window.first_pass(guest.sample, r) or not inactive_hits) else 0.0
    # Reads measured smaller price the memory down to there, unless it
    # reads nothing now because it went idle, not because its data fits.
    released = 0 if quiet else donation.measured_down_to(
        guest, cfg, (past.seen, None if resized else disk), params)
    unread = 0 if filling or resized or past.idle_since is not None else (
        donation.unread_active_mb(guest, cfg, params,
                                  (disk, r.pgactivate_s), past))
    if not (filling or resized or quiet or past.idle_since is not None):
        unread = max(unread, donation.untouched_mb(
            guest, cfg, params, disk, (past.phase_at, rest_hold.returned_at(
                guest, False))))
    donate = donation.donatable_mb(
        guest, cfg, params, (fill_mb, filling, quiet),
        (segments, max(released, unread), donation.stall_belied(
            guest, past.seen, None if resized else disk, params)), free_mb)
    return donate, released, unread


def _growth_belied(guest, seen, segments, window):
    """``segments``, the first no steeper than a step below that belied it.

    The first segment is what the counters say the next active list's
    worth of memory saves: their activations, each a refault of a page
    evicted fewer evictions ago than the active list holds. Where the host
    measured a step below that saved less than 1/WITNESS_SLACK of what
    those activations promise over it (mrc.activations_belied), growing
    saves no more than that step did either, on a clean window or not.
    The refaults beyond the active list, a cliff the counters cannot
    place, keep their price: a scan short of its cliff reads as much
    below. Not where a larger size the host measured prices the step.
    (Forged-claims point seed-12: a stream whose tenant forged every read
    into an activated refault was measured at eight sizes over 1.7 GiB,
    reading 4.0 MiB/s at each, and its counters still priced the next
    192 MiB at 22 MiB/s per GiB.) ``window``: (its activations in MiB/s,
    when it went idle or None).
    """
    activate_mb_s, idle = window
    belied = None if idle is not None else mrc.activations_belied(
        guest, seen, activate_mb_s)
    if belied is None or segments[0][1] <= belied:
        return segments
    return ((segments[0][0], belied),) + tuple(segments[1:])


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


def rest_fields(guest, quiet, window):
    """The ValueCurve fields of a guest that may be resting.

    ``quiet``: it reads nothing and its CPUs idle (mrc.cpu_idle), which
    is how a rest shows. Where it came back from a rest before, its
    active list (or a scan's reach) is priced as rest_hold.density
    says: the ski rental, with the last rest's length as a prediction of
    this one's, its rest spread over no less than its rate window.
    (Spread over an hour at least, a rest just begun gave its cache to
    any taker saving more than that: wide host 1, a scan resting 600 s
    of every 1,800 gave a uniform reader 192 MiB at each rest and
    re-read 819 MiB at each return.) ``window``: (its rate window in s,
    its scan's reach in MiB or None, first_reuse.Reach.scanned_mb, or
    without an agent its whole cache: rest_hold.reread_mb).
    """
    window_s, scanned_mb = window
    rest = (rest_hold.rest_since(guest, quiet),
            rest_hold.returned_at(guest, quiet),
            rest_hold.rested_s(guest, quiet))
    return dict(
        rest_since=rest[0], returned_at=rest[1], rested_s=rest[2],
        reread_mb=rest_hold.reread_mb(guest, rest[0], scanned_mb),
        hold_density=rest_hold.density(guest, rest, window_s))


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
    unused_mb = 0.0 if cache_window.cache_grew(
        guest, disk * r.interval_s) else max(0.0, free_mb)
    return dict(
        unused_mb=unused_mb, no_loss_mb=max(unused_mb, no_loss_mb),
        fill_density=(cache_window.fill_density(guest, r, params)
                      if filling else None),
        capacity_mb=guest.actual_mb - guest.sample.used_mb,
        disk_mb_s=disk, window_s=r.interval_s,
        first_pass=(cache_window.first_pass(guest.sample, r)
                    or first_reuse.may_still_fit(
                        reach, guest, disk * r.interval_s)),
        free_mb=max(0.0, free_mb - cfg.floor_margin_mb), reach=reach)


@dataclasses.dataclass(frozen=True)
class _History:
    """What was measured of a guest's workload before this window."""

    seen: tuple
    dormant: tuple
    idle_since: object
    # As ValueCurve.borne_out.
    borne_out: tuple
    reach: first_reuse.Reach
    # (the grow to check once its echo ends, MiB to give it back to): see
    # _grow_checked.
    grow: tuple = (None, None)
    # Pages the guest had activated when its workload began (stale_active).
    activated_base: int = None
    # When its reads last showed a new workload (mrc.phase_at).
    phase_at: float = None

    def curve_fields(self):
        """The ValueCurve fields it carries over as they are."""
        return dict(
            grow_pending=self.grow[0], reads_less_at=self.grow[1],
            idle_since=self.idle_since, borne_out=self.borne_out,
            dormant=self.dormant, activated_base=self.activated_base,
            phase_at=self.phase_at)


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
        return _History((), seen, idle, (guest.sample.timestamp, None),
                        reach)
    borne_out = (mrc.confirmed_at(guest),
                 mrc.state_mb(guest, mrc.BORNE_OUT_KEY))
    # A scan that traded and reads more than all it read then: a new
    # workload, resized or not (cliff_trade.outread).
    new_phase = bool(seen) and (cliff_trade.outread(guest, disk)
                                or touched_turn.turned(guest, params))
    if new_phase:
        seen = ()
    elif not resized:
        if not _refilling(guest, seen, window):
            # By more than chance where the host counted the requests
            # (as without an agent): a workload that changed shape at
            # about the same reads left a curve no half-rule catches.
            kept = mrc.of_this_phase(seen, guest.actual_mb, disk, params,
                                     mrc.requests_in_window(guest))
            new_phase, seen = bool(seen) and not kept, kept
        # A clean window bears out what it kept (a refill's, all of it),
        # as far as it could belie it.
        borne_out = (guest.sample.timestamp, mrc.borne_out_mb(guest))
    if new_phase:
        # Its reads moved: a new workload, whose reach its own first
        # re-read will tell, counted from here (not from boot: the old
        # one's reads are no part of the new one's pass).
        reach = first_reuse.Reach(fresh_mb=0.0)
    seen, grow = _grow_checked(guest, seen, (window, resized), params)
    base = stale_active.base(guest, guest.policy_state.get(mrc.STATE_KEY),
                             (new_phase, resized < 0))
    phase = guest.sample.timestamp if new_phase else mrc.phase_at(guest)
    return _History(seen, (), idle, borne_out, reach, grow, base, phase)


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
    last = cache_window.last_balloon_change(guest)
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
    grow = grow_check.pending(guest, cache_window.grew_since_plan(guest))
    if resized:
        return seen, (grow, None)
    back_to = grow_check.read_less_at(grow, guest.actual_mb,
                                      (disk, activate))
    if back_to is not None and filling:
        seen = mrc.with_seen(seen, mrc.Seen(
            guest.actual_mb, 0.0, params.min_segment_mb,
            guest.sample.timestamp, disk), interval_s, params)
    return seen, (None, back_to)


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
