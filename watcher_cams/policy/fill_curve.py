"""What a cache's reads did while it filled: a host-measured slope.

While a cache fills, nothing is evicted: it holds every block its guest
read since the fill began, and a read hits only a block read before. So
the disk reads the host measured at each cache size it passed are the
guest's miss-ratio curve there, measured for free: a hot/cold reader's
fall steeply as its hot set comes in, a reader over far more data than
it caches and a scan larger than its cache read as much all along. A
guest without a guest agent has no other sign of which of its neighbours
more memory helps before a probe measures it; the fill's slope orders
those probes (host_only.HostOnlyCurve.prior), and prices nothing. A
guest with an agent keeps its fill too: where its counters value the
next MiB at less than its fill saved and no smaller size was measured,
the fill bounds one probe (probes.fill_probe).

Only the fill's last MIN_SPAN_MB or so count: the next MiB is worth what
the last ones saved, not what the first did (a hot/cold reader's reads
fall steeply until its hot set is in, then hardly at all). Against the
whole fill they tell a fill past its knee (Fill.flattened), whose free
memory a probe may take before it is full. A fill also measured the
curve over the whole span it passed: its mean slope (Fill.mean), on a
concave curve no less than what the memory nearest the full cache
saves, prices memory below any size the guest held, down to the cache
the fill began at (:mod:`flat_search`); all of it for a fill that began
nearly empty (at most FROM_EMPTY_SHARE of where it ended: a boot, a new
workload's first reads). Kept in utility mode's
policy state: the fill's first window and its recent ones (the cache's
mean size over each, its reads), then, once the cache stopped filling,
the slope from the latest at least MIN_SPAN_MB below the full cache
(MiB/s saved per MiB). A resize ends a fill unmeasured; a new workload
forgets the slope.
"""

import dataclasses
import math

from watcher_cams.policy import mrc

POINTS_KEY = 'fill_points'
SLOPE_KEY = 'fill_slope'
MEAN_KEY = 'fill_mean'
MEAN_FROM_KEY = 'fill_mean_from'
# A fill over fewer MiB than this measures no slope: a few windows' noise.
MIN_SPAN_MB = 128
# A fall of the reads within this many standard deviations of chance
# shows no reuse (see _noise_share).
FILL_SIGMAS = 2.0
# A fill that began with at most this share of the cache it ended with
# measured the curve from near its bottom (Fill.mean).
FROM_EMPTY_SHARE = 0.25
# A fill whose last span saved at most this share of its whole fill's
# mean per MiB is past its knee (see _flattened).
KNEE_RATIO = 2
# More windows than a fill keeps (see _recent) are junk in the state.
MAX_POINTS = 64
# What one window measured weighs (mrc.Seen.count) in mrc.read_noise_share.
_ONE_WINDOW = mrc.Seen(size_mb=0, density=0.0, length_mb=0.0, timestamp=0.0)


@dataclasses.dataclass(frozen=True)
class Fill:
    """A fill's first and recent windows ((cache MiB, reads MiB/s), ...).

    ``slope``: reads saved per MiB over its last span (0.0 within the
    noise).
    """

    points: tuple = ()
    slope: float = None
    # Still filling, past the knee of its curve (see _flattened).
    flattened: bool = False
    # Still filling, its reads falling beyond chance (see _falling).
    falling: bool = False
    # Reads saved per MiB over the whole of the last fill (see
    # _mean_slope), None when none ended; and the cache (MiB) that fill
    # began at, the bottom of the span it measured: 0.0 from nearly empty.
    mean: float = None
    mean_from_mb: float = None

    @property
    def from_empty(self):
        """Whether its mean measured the curve from a nearly empty cache."""
        return self.mean_from_mb == 0.0


def measured(guest, disk_mb_s, window, new_phase):
    """This window's Fill of the guest.

    ``window``: (whether its cache is filling, whether it was resized in
    the window); ``new_phase``: its reads at this size moved (a new
    workload: mrc.of_this_phase dropped what was measured).
    """
    filling, resized = window
    before = _remembered(guest)
    kept = Fill() if new_phase else Fill(
        slope=before.slope, mean=before.mean,
        mean_from_mb=before.mean_from_mb)
    if resized:
        return kept
    if filling:
        points = _recent(before.points + ((_mean_cache_mb(guest),
                                           disk_mb_s),))
        return dataclasses.replace(kept, points=points,
                                   flattened=_flattened(guest, points),
                                   falling=_falling(guest, points))
    cache_mb = guest.sample.file_lru_mb
    below = [p for p in before.points if p[0] <= cache_mb - MIN_SPAN_MB]
    if not below:
        return kept
    cache_from, disk_from = below[-1]
    fall = disk_from - disk_mb_s
    ended = _mean_slope(before.points[0], (cache_mb, disk_mb_s), kept)
    if fall <= _noise_share(guest) * disk_from:
        # No reuse showed: a scan's first pass or a reader over far more
        # data than it caches reads as flat, whatever lies beyond.
        return dataclasses.replace(ended, slope=0.0)
    return dataclasses.replace(ended, slope=fall / (cache_mb - cache_from))


def _mean_slope(first, end, earlier):
    """A Fill of the reads saved per MiB from ``first`` to ``end``.

    Each (cache MiB, reads MiB/s). A hot/cold reader's reads fall
    steeply, a reader's over far more data than it caches and a scan's
    first pass hardly at all. Its span reaches down to ``first``, or to
    nothing from nearly empty. ``earlier``'s mean where that fill of
    this workload reached as low: its span holds this one's.
    """
    if earlier.mean is not None and earlier.mean_from_mb <= first[0]:
        return Fill(mean=earlier.mean, mean_from_mb=earlier.mean_from_mb)
    from_empty = first[0] <= FROM_EMPTY_SHARE * end[0]
    return Fill(mean=max(0.0, _saved_per_mb(first, end)),
                mean_from_mb=0.0 if from_empty else first[0])


def _saved_per_mb(first, last):
    """Reads saved per MiB of cache from one fill point to a later one."""
    return (first[1] - last[1]) / (last[0] - first[0])


def _noise_share(guest):
    """Share of its reads two windows' reads may differ by, by chance.

    FILL_SIGMAS standard deviations of the difference of two windows
    (mrc.read_noise_share), where the host counted their requests; else
    mrc.NOISE_SHARE.
    """
    requests = mrc.requests_in_window(guest)
    if not requests:
        return mrc.NOISE_SHARE
    return mrc.read_noise_share(_ONE_WINDOW, _ONE_WINDOW, requests,
                                FILL_SIGMAS)


def remember(state, fill):
    """Write ``fill`` into a guest's policy ``state``."""
    if fill.points:
        state[POINTS_KEY] = [[round(c, 1), round(d, 4)]
                             for c, d in fill.points]
    if fill.slope is not None:
        state[SLOPE_KEY] = round(fill.slope, 7)
    if fill.mean is not None:
        state[MEAN_KEY] = round(fill.mean, 7)
        state[MEAN_FROM_KEY] = round(fill.mean_from_mb, 1)


def _flattened(guest, points):
    """Whether a fill's reads fell, then all but stopped falling.

    What its last MIN_SPAN_MB or more saved per MiB, plus the chance of
    the two windows' reads, is at most 1/KNEE_RATIO of what the whole
    fill saved per MiB: a concave curve past its knee (a hot set in, only
    cold blocks trickling after it), whose free memory the fill would
    spend on reads that hardly pay. Not a fill that never fell (a scan's
    first pass: its cliff may lie just beyond), nor a slow reader's whose
    windows are too few requests to tell.
    """
    first, newest = points[0], points[-1]
    start = _last_span_start(points)
    if start is None or newest[0] - first[0] < MIN_SPAN_MB:
        # Too short, or a cache that shrank since (the guest dropped it).
        return False
    most = (max(0.0, start[1] - newest[1])
            + _noise_share(guest) * start[1]) / (newest[0] - start[0])
    whole = _saved_per_mb(first, newest)
    return most * KNEE_RATIO <= whole


def _falling(guest, points):
    """Whether a fill's last MIN_SPAN_MB or more saved reads beyond chance.

    Its reads fell over that span by more than the chance of its two
    windows' reads: the MiB it fills next still pay. Not where the fill
    spans too little to tell.
    """
    start = _last_span_start(points)
    if start is None:
        return False
    return start[1] - points[-1][1] > _noise_share(guest) * start[1]


def _last_span_start(points):
    """The latest point at least MIN_SPAN_MB below the newest, or None.

    Not the fill's first point: the span from there is the whole fill.
    """
    newest = points[-1]
    recent = [p for p in points[1:-1] if p[0] <= newest[0] - MIN_SPAN_MB]
    return recent[-1] if recent else None


def _recent(points):
    """The fill's first point and its last MIN_SPAN_MB or more of points.

    From the latest at least MIN_SPAN_MB below the newest on, at most
    MAX_POINTS in all: a cache trickling full keeps its latest windows.
    """
    top = points[-1][0]
    start = max((i for i, p in enumerate(points)
                 if p[0] <= top - MIN_SPAN_MB), default=0)
    start = max(start, len(points) - MAX_POINTS + 1)
    return points[:1] + points[max(1, start):]


def _mean_cache_mb(guest):
    """The cache's mean size over the window: its reads' cache size."""
    return (guest.sample.file_lru_mb + guest.previous.file_lru_mb) / 2


def _remembered(guest):
    """The Fill the policy state keeps; malformed entries are dropped."""
    points = mrc.state_entry(guest, POINTS_KEY)
    slope, mean, mean_from = (mrc.state_entry(guest, key) for key in (
        SLOPE_KEY, MEAN_KEY, MEAN_FROM_KEY))
    if mean_from is None:
        # Kept before the key was: only a fill from nearly empty had one.
        mean_from = 0.0
    if not (isinstance(points, list) and len(points) <= MAX_POINTS
            and all(_point(p, guest.max_mb) for p in points)):
        points = []
    slope, mean, mean_from = (v if _finite(v) and v >= 0 else None
                              for v in (slope, mean, mean_from))
    if mean is None or mean_from is None:
        mean = mean_from = None
    return Fill(tuple(tuple(p) for p in points), slope, mean=mean,
                mean_from_mb=mean_from)


def _point(value, max_mb):
    return (isinstance(value, list) and len(value) == 2
            and all(_finite(v) for v in value)
            and 0 <= value[0] <= max_mb and value[1] >= 0)


def _finite(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
