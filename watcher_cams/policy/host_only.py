"""The value curve of a guest without a guest agent: host signals only.

Such a guest's sample comes from its balloon's statistics and the reads
QEMU made for it (:func:`watcher_cams.policy.report.balloon_sample`): its
size, what it uses, its page cache and its disk reads, but none of the
counters that shape a curve (refaults, activations, PSI). So its curve is
only what the host measured at the sizes it held (:mod:`mrc`), and what
was never measured is unknown, not worthless:

- it gives, in the water-filling, only its free memory (cache never
  filled it, and a quarter of its cache while its CPUs idle:
  mrc.cpu_idle), memory priced by a measurement at a smaller size, or
  all but its used memory once it stopped reading (idle), but for the
  cache of a guest back from an earlier rest: rest_hold prices it as
  what its return re-reads (without its active list, all of it);
- it takes only what a measurement at a larger size priced;
- anything else is learned by probes (:mod:`utility`), one per host and
  cycle: one granule toward a guest that reads from disk and was measured
  at no other size, from the donor that reads least per MiB it caches
  (the exploration prior, which only orders the probes); the next clean
  window measures both ends, the measured slopes then move memory back,
  or the next step, twice the last, follows (:func:`next_step_mb`).
  Not from a guest whose cache serves reads that never reach the disk
  (its CPUs run, its disk does not): what it caches is unknown. A guest
  that gave memory under a workload since replaced, or while it read
  nothing, gets it back in one probe's step (:func:`restore_target`).
  Differences of reads within their noise price nothing
  (:func:`significant_slope`); reads that no longer fit the curve beyond
  chance are of another workload (:func:`mrc.of_this_phase`).

MoM and Proxmox size such guests by free memory alone; this lets their
page cache count for what it saves, as measured, and nothing else.
"""

import dataclasses

from watcher_cams.policy import cache_value
from watcher_cams.policy import cache_window
from watcher_cams.policy import donation
from watcher_cams.policy import fill_curve
from watcher_cams.policy import given_back
from watcher_cams.policy import mrc

UNKNOWN = float('inf')
# A difference of reads within this many standard deviations of chance
# is none (see significant_slope).
NOISE_SIGMAS = 1.0
# Free memory a growing cache will not reach in this many more windows of
# its growth is unused for now (_unused_mb). 5 to 30 measured in lab.rst
# (Stop 110).
UNUSED_HORIZON_WINDOWS = 10


@dataclasses.dataclass(frozen=True)
class HostOnlyCurve(cache_value.ValueCurve):
    """A ValueCurve whose unmeasured losses are unknown (infinite).

    Its ``no_loss_mb`` also holds its ``free_mb`` while it reads;
    ``prior``: reads per MiB of cache it holds, the exploration order of
    :meth:`probe_loss_at`.
    """

    prior: float = 0.0
    # Its exploration prior as a donor: reads lost per MiB (_priors).
    prior_loss: float = 0.0
    # MiB per read request the host counted in the window (None: none).
    request_mb: float = None

    def loss_at(self, given_mb, amount_mb):
        if self.idle_since is not None or (
                given_mb + amount_mb <= self.no_loss_mb):
            return self.hold_at(given_mb, amount_mb)
        bottom = self.size_mb - given_mb - amount_mb
        below = [x.size_mb for x in self.seen if x.size_mb < self.size_mb]
        if self.here is None or not below or bottom < min(below):
            return UNKNOWN
        return self.measured_loss(given_mb, amount_mb)

    def probe_loss_at(self, given_mb, amount_mb):
        """:meth:`loss_at`, or where unknown its best local estimate.

        The slope measured just above its size where there is one (the
        curve's local slope), else the exploration prior. Unknown still
        for a guest that reads (next to) nothing while its CPUs run: its
        data fits its cache, a scan's perhaps, which a step below the
        cache makes read all it scans again (random host 7 without
        agents: a fitted scan probed down read 2.2x static).
        """
        loss = self.loss_at(given_mb, amount_mb)
        if loss != UNKNOWN:
            return loss
        if self.measured_mb:
            return self.segments[0][1]
        if self.disk_mb_s < mrc.READ_MB_S and not self.quiet:
            return UNKNOWN
        return self.prior_loss

    def loss_is_measured(self, given_mb, amount_mb):
        return self.loss_at(given_mb, amount_mb) != UNKNOWN

    def measured_slope(self, one, other):
        return significant_slope(one, other, self.request_mb, self.window_s)


def significant_slope(one, other, request_mb, window_s):
    """Reads saved per MiB between two measurements, 0 within the noise.

    Which blocks a guest misses is chance: between sizes a granule apart
    that is more than a reader over far more data than it caches saves,
    so a difference within NOISE_SIGMAS of it is none
    (mrc.within_chance). Each measurement is as noisy as its own reads
    made it; weighed by this window's requests instead, a guest that now
    reads next to nothing (its data fits) saw every step to a size where
    it read more written off as chance. Where the host counted no
    request, mrc.NOISE_SHARE of the reads is the noise.
    """
    if request_mb:
        if mrc.within_chance(one, other, request_mb, window_s, NOISE_SIGMAS):
            return 0.0
    elif abs(one.disk_mb_s - other.disk_mb_s) <= mrc.NOISE_SHARE * max(
            one.disk_mb_s, other.disk_mb_s):
        return 0.0
    return one.slope_to(other)


def value_curve(guest, r, cfg, params):
    """The guest's HostOnlyCurve; ``r`` its rates (model.rates)."""
    disk = guest.host_io.read_mb_s if guest.host_io else r.disk_read_mb_s
    s = guest.sample
    filling, free_mb = cache_window.cache_filling(
        guest, disk * r.interval_s, cfg)
    last_resize = cache_window.last_balloon_change(guest)
    resized = _resized(guest, last_resize, params)
    seen = mrc.remembered(guest, params)
    idle = mrc.idle_since(guest, seen, disk, params)
    kept = mrc.of_this_phase(seen, guest.actual_mb, disk, params,
                             mrc.requests_in_window(guest))
    restore = None if idle is not None else restore_target(
        guest, (seen, kept), disk, params)
    lent = given_back.lent_mb(guest, disk < mrc.READ_MB_S)
    fill = fill_curve.measured(guest, disk, (filling, resized),
                               bool(seen) and not kept)
    if idle is not None:
        seen = ()
    elif not filling and not resized:
        seen = mrc.with_seen(kept, mrc.Seen(
            guest.actual_mb, 0.0, params.min_segment_mb, s.timestamp, disk,
            cpu_s=mrc.cpu_s(guest)),
            r.interval_s, params)
    request_mb = mrc.request_mb(guest)
    segments, measured_mb = _measured_segments(
        guest, seen, (request_mb, r.interval_s), params)
    quiet = mrc.cpu_idle(guest, seen, disk, params)
    spare_mb = max(0.0, free_mb - cfg.floor_margin_mb)
    return HostOnlyCurve(
        unused_mb=_unused_mb(guest, (disk * r.interval_s, fill), spare_mb,
                             params),
        segments=segments, loss_density=UNKNOWN,
        donate_mb=max(0, int(guest.actual_mb - donation.kept_mb(
            guest, cfg))), resized=resized,
        filling=filling, size_mb=guest.actual_mb, seen=seen,
        measured_mb=measured_mb, idle_since=idle, last_resize=last_resize,
        capacity_mb=guest.actual_mb - s.used_mb, disk_mb_s=disk,
        window_s=r.interval_s,
        free_mb=spare_mb, quiet=quiet,
        no_loss_mb=max(spare_mb, donation.step_mb(
            guest, cfg, free_mb) if quiet else 0.0),
        **_priors(disk, s.file_lru_mb, fill, params), fill=fill,
        request_mb=request_mb, restore_mb=restore, lent_mb=lent,
        # No active list without an agent: all its cache may be what its
        # return re-reads (the balloon reports only the cache).
        **cache_value.rest_fields(guest, quiet,
                                  (r.interval_s, s.file_lru_mb)))


def _unused_mb(guest, window, spare_mb, params):
    """MiB of its free memory (``spare_mb``) no read will need soon.

    ``window``: (MiB it read in the window, its fill_curve.Fill). All of
    it where its cache did not grow over the window: an idle guest's
    memory too, which a probe may take (probes). Where the cache grew,
    none while its reads fall as it fills (fill_curve.Fill.falling: the
    MiB it fills next pay), else what lies beyond UNUSED_HORIZON_WINDOWS
    more windows of that growth, in whole granules: a slow reader's cache
    takes hours to fill what it was given, and until it does no read
    needs the rest (wide host 89 without agents: a hot/cold reader over
    3 GiB, its cache growing 10 MiB a window, kept 1.1 GiB it never
    filled for two hours beside a 3.6 GiB scan that fits with it, 12x
    agent mode's reads). A probe takes it as any free memory, and the
    next windows measure both guests: a cache that came to need it reads
    more.
    """
    read_mb, fill = window
    if not cache_window.cache_grew(guest, read_mb):
        return spare_mb
    if fill.falling:
        return 0.0
    growth_mb = guest.sample.file_lru_mb - guest.previous.file_lru_mb
    unused_mb = max(0.0, spare_mb - UNUSED_HORIZON_WINDOWS * growth_mb)
    return unused_mb - unused_mb % params.granule_mb


def _priors(disk_mb_s, cache_mb, fill, params):
    """The exploration priors: what a MiB more saves, and less loses.

    Its reads per MiB of cache it holds: a guess that ranks a reader over
    far more data than it caches with one whose hot set it lacks and with
    a scan whose cliff lies a cache further. Where its reads fell as its
    cache last filled (fill_curve), measured by the host, what they saved
    per MiB is what more may save; on a concave curve, no less than what
    the last MiB it holds saves, so it prices what it gives at most. A
    fill that showed no reuse says nothing: a scan's first pass reads as
    flat as a stream, whatever lies beyond.
    """
    guess = disk_mb_s / max(cache_mb, params.min_segment_mb)
    if not fill.slope:
        return dict(prior=guess, prior_loss=guess)
    return dict(prior=fill.slope, prior_loss=min(guess, fill.slope))


def restore_target(guest, measured, disk_mb_s, params):
    """MiB to give back a guest shrunk under a workload since replaced.

    Without an agent, what a guest gives is priced by its reads at the
    sizes it held, and those of a workload that reads the same whatever
    its cache (a reader over far more data) price its memory at nothing.
    When its reads no longer fit the measurements at larger sizes
    (mrc.of_this_phase drops them), a new workload came, and the memory
    went on evidence that no longer holds: a scan that fits a few hundred
    MiB above reads as flat as the old workload did to the probes' single
    steps, which never find it, and a hot/cold reader that took a
    stream's place reads less than the stream did but needs its hot set
    back (phase-change without agents: the probes' steps of 64-512 MiB
    took 40 minutes to bring it back). So the largest size dropped is a
    step for a probe to take back at once (given_back.restore_mb, which
    also gives back what it held while it read nothing). ``measured``:
    (its remembered measurements, those mrc.of_this_phase keeps). None:
    nothing to give back.
    """
    seen, kept = measured
    dropped = [x.size_mb for x in seen
               if x not in kept and x.size_mb > guest.actual_mb]
    return given_back.restore_mb(guest, disk_mb_s, params,
                                 max(dropped, default=None))


def _resized(guest, last_resize, params):
    """+1 grown, -1 shrunk within the rate window, else 0.

    The host saw the balloon at both ends of its read window: only that
    window holds the change. (The settling time after a resize is for
    the guest's own counters' echo; disk reads have none, and a cache
    still filling after a grow is caught as filling.)
    """
    io = guest.host_io
    if io is None:
        return cache_window.resized_in_window(guest, last_resize, params)
    if not io.resized:
        return 0
    return 1 if io.end_mb > io.start_mb else -1


def _measured_segments(guest, seen, requests, params):
    """(segments, MiB host-measured): the step to the nearest larger size.

    What growing to the nearest size it was measured at saved per MiB
    (between two of its own running means), then nothing known.
    ``requests``: (MiB per read request the host counted, the window's
    seconds).
    """
    here = seen[0] if seen and seen[0].size_mb == guest.actual_mb else None
    above = [x for x in seen
             if x.size_mb >= guest.actual_mb + params.granule_mb / 2]
    if here is None or not above:
        return ((params.min_segment_mb, 0.0),), 0.0
    nearest = min(above, key=lambda x: x.size_mb)
    step = nearest.size_mb - guest.actual_mb
    return ((step, significant_slope(here, nearest, *requests)),
            (params.min_segment_mb, 0.0)), float(step)


def explore_bound(curve, params):
    """(prior, one granule): a probe toward a guest measured at no other size.

    Only a guest that reads from disk (at least mrc.READ_MB_S) with a full
    cache; None otherwise. Once measured at another size, its measured
    slopes decide (a probe that saved nothing is not tried again while
    that measurement is remembered).
    """
    if (not isinstance(curve, HostOnlyCurve)
            or curve.disk_mb_s < mrc.READ_MB_S
            or any(abs(x.size_mb - curve.size_mb) >= params.granule_mb / 2
                   for x in curve.seen)):
        return None
    return curve.prior, params.granule_mb


def next_step_mb(curve, room_mb, params):
    """MiB of the next probe toward a guest whose last step paid off.

    Twice that step (from the nearest smaller size it was measured at),
    at most a quarter of its cache and its room: each probe is measured
    before the next, so the steps grow while the reads keep falling as
    fast, and a step that overshoots is measured and taken back.
    """
    below = [x.size_mb for x in curve.seen if x.size_mb < curve.size_mb]
    last = curve.size_mb - max(below) if below else params.granule_mb
    step = min(room_mb, max(params.granule_mb, 2 * last),
               max(params.granule_mb, curve.capacity_mb // 4))
    return int(step - step % params.granule_mb)
