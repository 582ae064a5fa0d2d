"""A guest's miss-ratio curve as the host measured it.

What memory is worth to a guest is how much less the host reads for it
when it has more. Each clean rate window (no balloon change in it, the cache
not filling) is one point of that curve: at the guest's size, the disk
reads QEMU measured for it and what its counters valued the next segment
at. The points live in the guest's policy state, kept by the host's agent,
averaged per size and forgotten after ``memory_s``. Between two sizes they
price memory without any model; a point that this window's refaults do not
bear out is of another workload (a phase change) and prices nothing.
"""

import dataclasses
import math


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
# ...and a nearer one, when its reads were fewer by more than this many
# standard deviations of chance (see read_noise_share): five leave a step
# of a granule to what noise cannot explain.
NEAR_SIGMAS = 5.0
# A difference of reads between two sizes within this many standard errors
# of the windows' own spread there is no slope (see within_spread): one is
# enough to stop single windows of a scan's wrap pricing memory; two left
# slopes the curve needed unpriced (more read on 700 random hosts, see
# doc/source/lab.rst, Stop 59).
SPREAD_SIGMAS = 1.0
# How far, in cache sizes beyond its file LRU, a guest's kernel remembers
# evicted pages: mm/workingset.c lets shadow nodes reach an eighth of the
# LRU pages, 64 entries each. The longest reach spreads a refault's value
# the thinnest.
SHADOW_REACH = 8
# Evictions, in file LRUs, that a guest's shadow entries surely still
# remember (the kernel keeps them for up to SHADOW_REACH, fewer under
# pressure): a re-read further back than this need not show as a refault.
SURE_SHADOW_LRUS = 2
# A saving measured at a larger size is borne out when this window's
# refaults are at least 1/WITNESS_SLACK of it (the kernel drops shadow
# entries under pressure, so refaults undercount), give or take
# NOISE_SHARE of the disk reads.
WITNESS_SLACK = 2.0
NOISE_SHARE = 0.1
# A guest that read at least READ_MB_S at its size and now reads at most
# IDLE_MB_S (MiB/s) went idle.
READ_MB_S = 0.1
IDLE_MB_S = 0.001
# Reads at a size measured before that moved by more than this share are
# of another workload (see of_this_phase).
PHASE_SHARE = 0.5
# Active lists' worth of memory within which an activated refault's page
# was evicted: the kernel activates a refault whose distance is within
# its workingset, the active list and a little more (mm/workingset.c). A
# scan short of its cliff saves nothing until it fits (random host 145:
# a 3.6 GiB scan, every refault activated, one active list short).
ACTIVE_REACH_LISTS = 2
# Standard errors by which one window's reads at a measured size show a
# new workload (see _moved_off): one window in ~16,000 by chance.
PHASE_SIGMAS = 4.0


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
    # CPU seconds per second it ran meanwhile (host_io; None: unknown).
    cpu_s: float = None
    # Mean square of its windows' disk reads ((MiB/s)^2; None: no more
    # than one window weighed in).
    square: float = None

    def to_list(self):
        fields = [self.size_mb, round(self.density * 1024, 4),
                  round(self.length_mb, 1), round(self.timestamp, 1),
                  round(self.disk_mb_s, 4), round(self.count, 3)]
        if self.cpu_s is not None or self.square is not None:
            fields.append(None if self.cpu_s is None
                          else round(self.cpu_s, 5))
        if self.square is not None:
            fields.append(round(self.square, 6))
        return fields

    def window_sd(self):
        """Standard deviation of its windows' reads (MiB/s), or None.

        None until two windows weighed in: one says nothing of the spread.
        """
        if self.square is None or self.count < 2:
            return None
        var = max(0.0, self.square - self.disk_mb_s ** 2)
        return (var * self.count / (self.count - 1)) ** 0.5

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
            if a is None or b is None:
                return b
            return (a * n + b * w) / (n + w)

        def square(x):
            return x.disk_mb_s ** 2 if x.square is None else x.square
        return Seen(newer.size_mb, mean(self.density, newer.density),
                    mean(self.length_mb, newer.length_mb), newer.timestamp,
                    mean(self.disk_mb_s, newer.disk_mb_s), n + w,
                    mean(self.cpu_s, newer.cpu_s),
                    mean(square(self), square(newer)))

    def slope_to(self, other):
        """Disk reads saved per MiB between this size and ``other``'s."""
        small, large = sorted((self, other), key=lambda s: s.size_mb)
        return max(0.0, (small.disk_mb_s - large.disk_mb_s)
                   / (large.size_mb - small.size_mb))

    @classmethod
    def from_list(cls, value):
        """A Seen, or None when ``value`` is not one.

        The agent keeps the state, but a corrupt file must not stop
        planning. (A state written before ``cpu_s`` has six fields.)
        """
        try:
            size, per_gib, length, timestamp, disk, count = value[:6]
            cpu = value[6] if len(value) > 6 else None
            sq = value[7] if len(value) > 7 else None
            seen = cls(int(size), float(per_gib) / 1024, float(length),
                       float(timestamp), float(disk), float(count),
                       None if cpu is None else float(cpu),
                       None if sq is None else float(sq))
        except (TypeError, ValueError):
            return None
        if (seen.size_mb <= 0 or not 0 <= seen.density < float('inf')
                or not 0 < seen.length_mb < float('inf')
                or not 0 <= seen.disk_mb_s < float('inf')
                or not 0 < seen.count < float('inf')
                or not (cpu is None or 0 <= seen.cpu_s < float('inf'))
                or not (sq is None or 0 <= seen.square < float('inf'))):
            return None
        return seen


def state_entry(guest, key):
    """What utility mode's policy state keeps under ``key``, or None."""
    state = guest.policy_state.get(STATE_KEY)
    return state.get(key) if isinstance(state, dict) else None


def remembered(guest, params):
    """The guest's measurements still trusted at its current sample.

    Each for ``memory_s`` after it was taken or, later, last borne out
    (:func:`confirmed_at`) by a window that could have belied it (one
    at most :func:`borne_out_mb` small).
    """
    state = guest.policy_state.get(STATE_KEY)
    entries = state.get('seen') if isinstance(state, dict) else None
    if not isinstance(entries, list) or guest.sample is None:
        return ()
    now = guest.sample.timestamp
    confirmed = confirmed_at(guest)
    # None where the state predates the bound: all were borne out.
    up_to_mb = state_mb(guest, BORNE_OUT_KEY)
    out = []
    for entry in entries[:MAX_SEEN]:
        seen = Seen.from_list(entry)
        if seen is None or seen.timestamp > now:
            continue
        at = seen.timestamp
        if confirmed is not None and (up_to_mb is None
                                      or seen.size_mb <= up_to_mb):
            at = max(at, confirmed)
        if now - at <= params.memory_s:
            out.append(seen)
    return tuple(out)


# The policy state's key for the largest size confirmed_at bore out.
BORNE_OUT_KEY = 'confirmed_mb'


def confirmed_at(guest):
    """When a clean window last bore out the guest's measurements.

    Those no larger than it could belie (:func:`borne_out_mb`, kept under
    BORNE_OUT_KEY).

    None when never (or not recorded: a guest without a guest agent,
    whose measurements are also the record of the sizes it was tried
    at, and forgetting them is what lets it be tried again). Set by
    cache_value for a window whose reads :func:`of_this_phase` found of
    the same workload as every measurement kept: those stay remembered
    while the workload does.
    """
    return state_time(guest, 'confirmed_at')


def borne_out_mb(guest):
    """The largest size whose measurement a clean window here bears out.

    The window's refaults show re-reads of what the guest's file LRU and
    its shadow entries remember (SURE_SHADOW_LRUS more LRUs): at a size
    whose file LRU is no larger, a workload whose reads there changed
    would refault here, and the window would not agree with its curve.
    Of larger sizes it shows nothing, and a measurement taken there of
    another workload, borne out by every window since, would price more
    memory for as long as the guest reads (wide host 342: a 6.6 GiB scan,
    shrunk to 384 MiB, turned into a uniform reader of 6 GiB at 12 MiB/s;
    what the scan read at 0.8 to 3 GiB, as much as at 384 MiB, held the
    new reader there for the rest of the run, and it read 69 GiB where it
    now reads 49). Capped at the guest's flavor memory.
    """
    return int(min(guest.max_mb, guest.actual_mb
                   + SURE_SHADOW_LRUS * guest.sample.file_lru_mb))


def phase_at(guest):
    """When the guest's reads last showed a new workload, or None.

    Set by cache_value for a window whose reads :func:`of_this_phase`
    found of another workload than every measurement kept before it.
    """
    return state_time(guest, 'phase_at')


def state_mb(guest, key):
    """A size in MiB the policy state keeps under ``key``, or None.

    An int (not a bool) above 0 and at most the guest's flavor memory.
    """
    value = state_entry(guest, key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= guest.max_mb else None


def state_time(guest, key):
    """A time the policy state recorded, if sane, or None.

    Sane: a number (not a bool), finite and not later than the guest's
    sample.
    """
    state = guest.policy_state.get(STATE_KEY)
    try:
        value = state[key]
        at = float(value)
    except (KeyError, TypeError, ValueError):
        return None
    if (isinstance(value, bool) or not math.isfinite(at)
            or at > guest.sample.timestamp):
        return None
    return at


def resumed_from(guest, idle, seen):
    """When the idle spell the guest came back from began, or None.

    ``idle``: :func:`idle_since` now (None: it reads again); ``seen``: its
    measurements. None too once none of them predates the spell: what was
    measured before it is of the workload that stopped, the same one back
    or another (see :func:`measured_since`).
    """
    if idle is not None:
        return None
    since = state_time(guest, 'resumed_from')
    if since is None:
        since = state_time(guest, 'idle_since')
    if since is None or all(x.timestamp > since for x in seen):
        return None
    return since


def measured(guest, r, segments, seen, reads, params):
    """(seen, segments, MiB host-measured) after a clean window.

    ``reads``: (disk, refaults, activations) in MiB/s. Averaged with the
    earlier ones at this size, it is this guest's value from now on; where
    the guest was measured larger, its own disk reads there price the
    memory in between (:func:`_priced_by_disk_reads`).
    """
    disk, refault, activate = reads
    length, density = segments[0]
    seen = with_seen(seen, Seen(guest.actual_mb, density, length,
                                guest.sample.timestamp, disk,
                                cpu_s=cpu_s(guest)),
                     r.interval_s, params)
    mean = seen[0].density
    segments = ((length, mean),) + tuple(
        (rest, min(slope, mean)) for rest, slope in segments[1:])
    seen, segments = _capped_by_step_below(guest, segments, seen)
    return (seen,) + _priced_by_disk_reads(guest, segments, seen,
                                           (refault, activate), params)


def measured_since(guest, r, segments, seen, reads, params, resumed):
    """:func:`measured`, for a guest back from an idle spell.

    ``resumed``: when the spell began (None: it never was idle, or nothing
    measured before it is left). Measurements from before the spell speed
    the return of the workload that stopped; they never slow another: the
    curve is the higher of the two, with them and without them. (With them
    alone, a new workload whose reads fall steeply over its first MiB
    would be priced by the chord to a size where the old one read more.)
    """
    both = measured(guest, r, segments, seen, reads, params)
    older = [x for x in seen if resumed is not None
             and x.timestamp <= resumed]
    if not older:
        return both
    fresh = measured(guest, r, segments,
                     tuple(x for x in seen if x not in older), reads, params)
    higher = _upper_envelope(both[1], fresh[1])
    priced = both if higher[0][1] <= both[1][0][1] else fresh
    return both[0], higher, priced[2]


def _upper_envelope(first, second):
    """Segments ((length_mb, density), ...) of the higher of two curves."""
    cuts = sorted({0.0} | set(_ends(first)) | set(_ends(second)))
    out = []
    for start, end in zip(cuts, cuts[1:]):
        density = max(segment_at(first, start)[0],
                      segment_at(second, start)[0])
        if out and out[-1][1] == density:
            out[-1] = (out[-1][0] + end - start, density)
        else:
            out.append((end - start, density))
    return tuple(out)


def _ends(segments):
    end = 0.0
    for length, _ in segments:
        end += length
        yield end


def segment_at(segments, offset_mb):
    """(density, MiB left in its segment) of a curve at ``offset_mb``.

    ``segments``: ((length_mb, density), ...); beyond them, nothing.
    """
    start = 0.0
    for length, density in segments:
        if offset_mb < start + length:
            return density, start + length - offset_mb
        start += length
    return 0.0, float('inf')


def _capped_by_step_below(guest, segments, seen):
    """(seen, segments) no steeper than the step below, if counters lied.

    At the nearest smaller measured size the counters valued the memory
    above it; the host then measured what growing over it saved. When
    that is far less than they promised (less than 1/WITNESS_SLACK of it,
    give or take the noise of the two measurements), the guest's counters
    do not agree with the host's reads: they may value its memory, here
    and at the sizes they were kept for, no higher than the host measured.
    The noise: NOISE_SHARE of the reads for a step of EMPIRICAL_REACH_MB or
    more; for a nearer one, only where the host counted the requests, the
    larger of their chance (NEAR_SIGMAS) and the windows' spread.
    """
    here = seen[0]
    if here.size_mb != guest.actual_mb:
        return seen, segments
    nearest = _belying_step(guest, seen, _promised_at_foot(here))
    if nearest is None:
        return seen, segments
    slope = nearest.slope_to(here)
    return (tuple(dataclasses.replace(x, density=min(x.density, slope))
                  for x in seen),
            tuple((length, min(density, slope))
                  for length, density in segments))


def loss_belied(guest, seen, segments):
    """What the host measured the step below cost, if the counters lied.

    The counters price the memory a guest holds as they price the next
    MiB (``segments``' first). Where the host measured the guest at a
    smaller size reading more by less than 1/WITNESS_SLACK of what that
    price promises over the step, give or take the noise (as
    :func:`_capped_by_step_below` weighs the promise made there), the
    host's step prices giving: its slope (MiB/s per MiB). None where the
    counters stand, or nothing measured this size. Only giving: a scan
    short of its cliff reads as much below as here, and what more would
    save it is another question. (Random host 354: a 1.8 GiB scan
    thrashing at 1,920 MiB, every refault activated, read as much at five
    smaller sizes.)
    """
    length, density = segments[0]
    return _belied_slope(guest, seen, lambda step_mb: density * min(
        step_mb, length))


def activations_belied(guest, seen, activate_mb_s):
    """The slope of a step below that belies the activations, or None.

    ``activate_mb_s``: the refaults activated now, which the counters say
    an active list's worth more memory saves (and a step of ``d`` MiB
    below, ``d`` of that list's MiB's share). A step below the host
    measured (:func:`_belying_step`) that saved less than 1/WITNESS_SLACK
    of that, give or take the noise, belies them: its slope (MiB/s per
    MiB). None where it does not, or nothing was measured at this size.
    """
    active_mb = max(guest.sample.active_file_mb, 1.0)
    return _belied_slope(guest, seen, lambda step_mb: activate_mb_s * min(
        1.0, step_mb / active_mb))


def read_as_much_below(seen, size_mb, disk_mb_s, step_mb):
    """Whether the host measured as many reads further below.

    A measurement in ``seen`` ``step_mb`` or more below ``size_mb`` that
    read no more than ``disk_mb_s``, give or take NOISE_SHARE of it: the
    memory in between saved nothing.
    """
    return any(mb <= size_mb - step_mb
               for mb in sizes_reading_as_much(seen, size_mb, disk_mb_s))


def sizes_reading_as_much(seen, size_mb, disk_mb_s):
    """The sizes in ``seen`` below ``size_mb`` that read no more.

    No more than ``disk_mb_s``, give or take NOISE_SHARE of it.
    """
    return [x.size_mb for x in seen if x.size_mb < size_mb
            and x.disk_mb_s <= (1 + NOISE_SHARE) * disk_mb_s]


def promise_belied(guest, seen):
    """Whether a step up to seen[0] belies what was promised at its foot.

    At each smaller measured size the counters valued the memory above
    it (its ``density`` over its ``length_mb``); as
    :func:`_capped_by_step_below` weighs it (:func:`_belying_step`).
    """
    return _belying_step(guest, seen, _promised_at_foot(seen[0])) is not None


def _promised_at_foot(here):
    """MiB/s the counters at a smaller measurement promised up to ``here``.

    A function of that measurement: its density over the step, at most
    its length (the segment its counters priced).
    """
    return lambda x: x.density * min(here.size_mb - x.size_mb, x.length_mb)


def _belied_slope(guest, seen, promised):
    """The slope of the step below seen[0] that belies a promise, or None.

    ``promised(MiB)``: the MiB/s the counters promise a step that large
    up to seen[0] saves (:func:`_belying_step`). None where nothing was
    measured at the guest's size.
    """
    if not seen or seen[0].size_mb != guest.actual_mb:
        return None
    here = seen[0]
    nearest = _belying_step(guest, seen, lambda x: promised(
        here.size_mb - x.size_mb))
    return None if nearest is None else nearest.slope_to(here)


def _belying_step(guest, seen, promised):
    """The nearest measurement below seen[0] whose step belies a promise.

    ``promised(x)``: the MiB/s the counters promise the step from ``x``
    to seen[0] saves. Belied where it saved less than 1/WITNESS_SLACK of
    that, give or take the noise of the two measurements
    (:func:`_steps_below`). None where no step belies it.
    """
    here = seen[0]
    for nearest, noise in _steps_below(guest, seen):
        saved = nearest.disk_mb_s - here.disk_mb_s
        if saved < promised(nearest) / WITNESS_SLACK - noise:
            return nearest
    return None


def _steps_below(guest, seen):
    """(nearest smaller measurement, the noise of its step) to weigh.

    See _capped_by_step_below: the nearest EMPIRICAL_REACH_MB or more
    below, then the nearest of all where the host counted the requests.
    """
    here = seen[0]
    below = [x for x in seen[1:] if x.size_mb < here.size_mb]
    far = [x for x in below
           if x.size_mb <= here.size_mb - EMPIRICAL_REACH_MB]
    if far:
        nearest = max(far, key=lambda x: x.size_mb)
        yield nearest, NOISE_SHARE * nearest.disk_mb_s
    requests = requests_in_window(guest)
    near = [x for x in below if x not in far]
    if near and requests:
        nearest = max(near, key=lambda x: x.size_mb)
        chance = nearest.disk_mb_s * read_noise_share(
            nearest, here, requests, NEAR_SIGMAS)
        yield nearest, max(chance, SPREAD_SIGMAS * (
            spread_error(nearest, here) or 0.0))


def _witnessed(here, larger, refault_mb_s, lru_mb):
    """Whether this window's refaults bear out a larger size's saving.

    A read that more memory would save is, at the smaller size, a miss
    on a page evicted not long ago: a refault (mm/workingset.c). When the
    reads a larger size saved are far more than the refaults now, that
    measurement is of another workload: the guest's phase changed. Not
    when the larger size is further above than the guest's shadow entries
    surely reach (SURE_SHADOW_LRUS of its file LRU, ``lru_mb``): what it
    saved there were misses on pages evicted longer ago, which need not
    refault now.
    """
    if larger.size_mb - here.size_mb > SURE_SHADOW_LRUS * lru_mb:
        return True
    saving = here.disk_mb_s - larger.disk_mb_s
    return saving <= (WITNESS_SLACK * refault_mb_s
                      + NOISE_SHARE * here.disk_mb_s)


def requests_in_window(guest):
    """Read requests the host counted in the guest's window (None: none)."""
    io = guest.host_io
    return io.read_req_s * io.window_s if io is not None else None


def request_mb(guest):
    """MiB per read request the host counted in the window (None: none)."""
    io = guest.host_io
    if io is None or io.read_req_s <= 0:
        return None
    return io.read_mb_s / io.read_req_s


def read_noise_share(one, other, window_reads, sigmas):
    """Share of the reads two measurements (Seen) may differ by chance.

    Which blocks a guest misses is chance: a window of n read requests
    varies by about 1/sqrt(n) of its rate, and a measurement averaged over
    c windows by 1/sqrt(n c); ``sigmas`` of that for the difference of
    two. ``window_reads``: read requests in a window (the host's count).
    """
    return sigmas * (1.0 / (window_reads * one.count)
                     + 1.0 / (window_reads * other.count)) ** 0.5


def within_chance(one, other, request_mb, window_s, sigmas):
    """Whether two measurements' reads differ by no more than chance.

    Which blocks a guest misses is chance: a rate measured over N read
    requests varies by about 1/sqrt(N) of itself, and each measurement
    (mrc.Seen) counts its own: its reads over its Seen.count windows of
    ``window_s``, in requests of ``request_mb`` (this window's, the host's
    count). Within ``sigmas`` standard deviations of their difference;
    False where the host counted no request.
    """
    if not request_mb or not window_s:
        return False
    variance = sum(x.disk_mb_s * request_mb / (window_s * x.count)
                   for x in (one, other))
    return abs(one.disk_mb_s - other.disk_mb_s) <= sigmas * variance ** 0.5


def within_spread(one, other, sigmas=SPREAD_SIGMAS):
    """Whether two measurements' reads differ by no more than their spread.

    A guest's reads vary from window to window by more than chance where
    its workload has a period longer than a window: a scan larger than its
    cache wraps through what the kernel's active list kept, and one window
    reads 4.4 MiB/s, the next 8.0, at the same size. Where either
    measurement averaged two windows or more, its windows' standard
    deviation (Seen.window_sd, the larger of the two) gives the standard
    error of the difference of the two means; a difference within
    ``sigmas`` of that is no evidence of a slope. (Random host 354: one
    window at 1,728 MiB read 8.0 against a six-window mean of 7.4 at 1,920,
    which priced the 192 MiB between at 3 MiB/s per GiB; the scan kept
    1.9 GiB it read as much with, and its neighbour read more.) False
    where no spread is known.
    """
    error = spread_error(one, other)
    if error is None:
        return False
    return abs(one.disk_mb_s - other.disk_mb_s) <= sigmas * error


def spread_error(one, other):
    """Standard error of two measurements' difference from their spread.

    The larger of their windows' standard deviations (Seen.window_sd),
    for the two means; None where neither averaged two windows.
    """
    spreads = [x.window_sd() for x in (one, other)]
    spreads = [sd for sd in spreads if sd is not None]
    if not spreads:
        return None
    return max(spreads) * (1.0 / one.count + 1.0 / other.count) ** 0.5


def _read_clearly_less(larger, here, window_reads):
    """Whether ``larger`` read fewer than ``here`` by more than chance."""
    if not window_reads or larger.disk_mb_s >= here.disk_mb_s:
        return False
    return here.disk_mb_s - larger.disk_mb_s > here.disk_mb_s * (
        read_noise_share(larger, here, window_reads, NEAR_SIGMAS))


def _larger_pricing(guest, seen, refault_mb_s):
    """The larger measurements that may price growing (see below)."""
    requests = requests_in_window(guest)
    return [x for x in seen[1:]
            if (x.size_mb >= guest.actual_mb + EMPIRICAL_REACH_MB
                or (x.size_mb > guest.actual_mb and _read_clearly_less(
                    x, seen[0], requests)))
            and _witnessed(seen[0], x, refault_mb_s,
                           guest.sample.file_lru_mb)]


def _priced_by_disk_reads(guest, segments, seen, refaults, params):
    """(segments, MiB of them host-measured) after larger measured sizes.

    The nearest larger measurement this window's refaults bear out, not
    the refault model, prices what the memory in between saved, up or
    down. (Refaults overvalue a guest that reads far more data than it
    caches when its kernel keeps shadow entries for several cache sizes:
    nearly every miss is a refault.) Beyond it the curve stays concave,
    but for a cliff the refaults still show. A disk rate is noisy too:
    over less than EMPIRICAL_REACH_MB its difference is mostly noise,
    unless the host counted enough read requests to tell (NEAR_SIGMAS): a
    step that cost a guest reads then prices growing back over that step,
    not averaged over a larger one that saved little more.
    ``refaults``: (refaults, activations) in MiB/s; ``params``: the
    UtilityParams (``memory_s``).
    """
    refault_mb_s, activate_mb_s = refaults
    above = _larger_pricing(guest, seen, refault_mb_s)
    if not above:
        return segments, 0.0
    nearest = min(above, key=lambda x: x.size_mb)
    slope = seen[0].slope_to(nearest)
    step = nearest.size_mb - guest.actual_mb
    beyond = tuple((rest, min(density, slope)) for rest, density in segments)
    # Refaults the measured step did not explain are reads whose reuse
    # lies beyond the larger size but within the shadow entries' reach (a
    # scan that fits only in more memory: a flat step, then a cliff).
    # Spread over all of that reach, at most what the guest still reads,
    # and only when they are more than the disk rates' noise. Larger
    # sizes measured reading as much put that reuse beyond them.
    flat = max((x for x in above if x.disk_mb_s
                >= (1 - NOISE_SHARE) * nearest.disk_mb_s),
               key=lambda x: x.size_mb)
    left = min(nearest.disk_mb_s, _unexplained(
        guest, segments, slope * step, (flat, activate_mb_s), params))
    spread = (guest.actual_mb + SHADOW_REACH * guest.sample.file_lru_mb
              - flat.size_mb)
    measured_mb = step
    if (spread > 0 and left / spread > slope
            and left > NOISE_SHARE * seen[0].disk_mb_s):
        beyond = ((spread, left / spread),)
        if flat is not nearest:
            beyond = ((flat.size_mb - nearest.size_mb,
                       nearest.slope_to(flat)),) + beyond
        measured_mb += flat.size_mb - nearest.size_mb + spread
    return ((step, slope),) + beyond, measured_mb


def _unexplained(guest, segments, explained_mb_s, flat, params):
    """MiB/s of refaults a measured step up did not explain.

    What ``segments`` sum to less ``explained_mb_s``; ``flat``: (the
    largest size measured reading as much, activations in MiB/s). Not
    the activations where that size is beyond their reach
    (ACTIVE_REACH_LISTS) and was measured within ``memory_s`` (kept
    longer, because windows since bore it out, it may be of a workload
    that changed since: allocator point phase-change, a reader measured
    at 1,237 MiB 45 minutes before): those lied (forged-claims point
    seed-8: a stream that forged every read into an activated refault,
    read as much at 640 and 2,176 MiB, was priced a cliff at its maximum
    and grown there).
    """
    flat_seen, activate_mb_s = flat
    unexplained = (sum(length * density for length, density in segments)
                   - explained_mb_s)
    if (flat_seen.size_mb >= guest.actual_mb + (
            ACTIVE_REACH_LISTS * guest.sample.active_file_mb)
            and guest.sample.timestamp - flat_seen.timestamp
            <= params.memory_s):
        unexplained -= activate_mb_s
    return unexplained


def idle_since(guest, seen, disk_mb_s, params):
    """When the guest stopped reading from disk at its size, or None.

    A guest that read at this size and now reads (next to) nothing did
    not get more cache: its workload stopped or changed, and what its
    cache holds is no longer read. (A guest whose data fits its cache
    reads nothing too, but never read at this size once its cache was
    full: see :func:`cpu_idle`.) Kept in the policy state while its reads
    stay at nothing.
    """
    if disk_mb_s > IDLE_MB_S:
        return None
    since = state_time(guest, 'idle_since')
    if since is not None:
        return since
    here = [x for x in seen
            if abs(x.size_mb - guest.actual_mb) < params.granule_mb]
    if here and here[0].disk_mb_s >= READ_MB_S and not _working_as_then(
            guest, here[0], params):
        return guest.sample.timestamp
    return None


def _working_as_then(guest, then, params):
    """Whether the guest runs as it did when it read at this size.

    At least half the CPU time the host measured it run then (``then``, a
    Seen), and well above what an idle guest runs (twice ``idle_cpu_s``:
    an idle guest under TCG runs about that): its reads go on, but hit
    its cache (a scan passing over what its active list kept shows a
    window of no disk reads), where a workload that stopped leaves its
    vCPUs idle.
    """
    cpu = cpu_s(guest)
    return (cpu is not None and then.cpu_s is not None
            and cpu > 2 * params.idle_cpu_s and cpu >= then.cpu_s / 2)


def cpu_s(guest):
    """CPU seconds per second the host measured the guest run, or None."""
    return guest.host_io.cpu_s if guest.host_io is not None else None


def cpu_idle(guest, seen, disk_mb_s, params):
    """Whether a guest that reads nothing from disk seems to read nothing.

    Reading from its cache is work: a guest whose data fits its cache but
    whose CPU time is next to nothing (at most ``idle_cpu_s``) reads
    little of it, if anything. Only a hint (a slow reader of a large
    cache runs little CPU too), so a guest seen idle this way gives in
    steps that the next window measures (see cache_value); and not when,
    running as little at a smaller size, it read from disk: that is such
    a reader, whose data fits only this large (shrunk once for seeming
    idle, it is not again while that measurement is remembered).
    """
    cpu = cpu_s(guest)
    if disk_mb_s > IDLE_MB_S or cpu is None or cpu > params.idle_cpu_s:
        return False
    return not any(x.size_mb < guest.actual_mb - params.granule_mb / 2
                   and x.disk_mb_s >= READ_MB_S and x.cpu_s is not None
                   and x.cpu_s <= params.idle_cpu_s for x in seen)


def of_this_phase(seen, size_mb, disk_mb_s, params, window_reads=None):
    """The measurements that agree with reading ``disk_mb_s`` at ``size_mb``.

    With nothing but disk reads to go by, a phase change shows as reads
    that no longer fit the curve: at this size, reads that moved by more
    than PHASE_SHARE, or beyond chance and spread (:func:`_moved_off`):
    the whole curve is of another workload, and all go;
    elsewhere, a point that would make the curve rise with size (reading
    less with less memory, or more with more) is of another workload:
    by more than PHASE_SHARE, or where the host counted the window's read
    requests (``window_reads``), by more than chance (NEAR_SIGMAS).
    """
    kept = []
    # Now: this window, with those measured at this size before it.
    windows = 1.0 + sum(min(x.count, MAX_COUNT) for x in seen
                        if abs(x.size_mb - size_mb) < params.granule_mb)
    now = Seen(size_mb, 0.0, 0.0, 0.0, disk_mb_s,
               count=min(windows, MAX_COUNT))
    for x in seen:
        slack = max(READ_MB_S,
                    PHASE_SHARE * max(x.disk_mb_s, disk_mb_s))
        if abs(x.size_mb - size_mb) < params.granule_mb:
            if abs(x.disk_mb_s - disk_mb_s) > slack or _moved_off(
                    x, disk_mb_s, window_reads):
                return ()
            kept.append(x)
            continue
        if window_reads:
            slack = max(READ_MB_S, min(slack, max(
                x.disk_mb_s, disk_mb_s) * read_noise_share(
                    x, now, window_reads, NEAR_SIGMAS)))
        less_with_less = (x.size_mb < size_mb
                          and x.disk_mb_s < disk_mb_s - slack)
        more_with_more = (x.size_mb > size_mb
                          and x.disk_mb_s > disk_mb_s + slack)
        if not (less_with_less or more_with_more):
            kept.append(x)
    return tuple(kept)


def _moved_off(here, disk_mb_s, window_reads):
    """Whether one window's reads left a measurement at its size.

    ``here``: the measurement (Seen) at the window's size; ``disk_mb_s``:
    the window's reads. By more than chance (PHASE_SIGMAS, where the host
    counted the window's read requests) and more than as many of the
    measurement's own windows' spread (Seen.window_sd: a scan wrapping
    through its active list varies by more than chance). PHASE_SHARE alone
    missed a scan at 2.0 MiB/s turned into a uniform reader at 3.1 at the
    same size (random host 19): ten windows of the scan outweighed the
    new workload's for five cycles, and valued its cache at nothing.
    """
    if not window_reads or here.window_sd() is None:
        return False
    window = Seen(here.size_mb, 0.0, 0.0, 0.0, disk_mb_s)
    moved = abs(here.disk_mb_s - disk_mb_s)
    chance = max(READ_MB_S, max(here.disk_mb_s, disk_mb_s) * read_noise_share(
        here, window, window_reads, PHASE_SIGMAS))
    return moved > chance and not within_spread(here, window, PHASE_SIGMAS)


def with_seen(seen, new, window_s, params):
    """``seen`` with ``new`` first, merged with the one at its size."""
    kept = [new]
    for old in seen:
        if abs(old.size_mb - new.size_mb) < params.granule_mb:
            kept[0] = old.merged(new, window_s)
        else:
            kept.append(old)
    return tuple(kept[:MAX_SEEN])
