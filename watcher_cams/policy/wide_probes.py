"""Wide probes: memory nobody used, toward a guest whose small steps were flat.

A guest without a guest agent shows its curve only through the reads the
host measures at the sizes it holds. A reader over far more data than it
caches and a scan whose cliff lies further than a probe steps read as
flat as each other to granule probes; only a wider step tells them
apart. These take memory nobody was seen to use (:func:`wide_probe`), or
memory donors gave without reading more, doubled
(:func:`_doubling_wide_probe`), and leave the rest to the water-filling.
"""

from watcher_cams.policy import guards
from watcher_cams.policy import host_only
from watcher_cams.policy import mrc
from watcher_cams.policy import probes

# A wide probe (see wide_probe) moves at least this many granules: fewer
# are what the probes it follows took.
WIDE_GRANULES = 4
# A donor gives a doubling wide probe (see _doubling_room_mb) as much again
# as it gave with no more reads, once that is at least this many granules.
DOUBLING_GRANULES = 2


def wide_probe(host, cfg, params, curves, rooms):
    """Memory nobody used, toward a guest without an agent whose curve is flat.

    Such a guest's small probes measured nothing (a uniform reader over
    far more data than it caches, or a scan whose cliff lies further than
    a probe steps): nothing but its reads can tell the two apart, and only
    at the size where the scan fits. Memory nobody was seen to use (of
    ``rooms``: :func:`_free_room_mb`) may show it:
    as much of it as one donor has, toward the guest that reads most, once
    per guest while its measurement at that larger size is remembered.
    The water-filling takes back what did not pay, at no loss. Where
    nobody left that much unused: :func:`_doubling_wide_probe`.
    """
    taker = max((u for u, c in curves.items()
                 if _flat_beyond_probes(c, host.guest(u), cfg, params)),
                key=lambda u: curves[u].disk_mb_s, default=None)
    if taker is None:
        return None
    donor, amount = None, 0
    for u in sorted(curves):
        free = _free_room_mb(curves[u], rooms[u], params)
        if u != taker and free > amount:
            donor, amount = u, free
    amount = min(amount, guards.room_up(host.guest(taker), cfg))
    amount -= amount % params.granule_mb
    if amount < WIDE_GRANULES * params.granule_mb:
        return _doubling_wide_probe(host, cfg, params, curves, rooms,
                                    taker)
    why = ('utility (%s): %d MiB nobody was seen to use, toward a guest '
           'whose reads did not fall by the steps probes took'
           % (probes.PROBE, amount))
    return probes.probe_plan(host, cfg, {donor: amount}, taker, why)


def _doubling_wide_probe(host, cfg, params, curves, rooms, taker):
    """:func:`wide_probe` from memory donors gave without reading more.

    Or None. Where nobody left enough memory unused: as much as the
    taker may take this cycle, from the cheapest donors, each giving at
    most :func:`_doubling_room_mb` (as much again as it already gave with
    no more reads), if all the taker's reads ending over the step would
    save more than the donors' price. A donor's flat span doubles with
    each step (128, 256, 512 MiB...), so a cliff a few GiB away is
    reached in a few steps, where granule probes took hours; a donor
    whose reads then rise is measured there, and the water-filling takes
    back what did not pay.
    """
    room = guards.room_up(host.guest(taker), cfg)
    down = probes.probe_donor_rooms(host, cfg, curves, rooms)
    down = {u: min(mb, _doubling_room_mb(curves[u], mb, params))
            for u, mb in down.items()}
    donors, loss = probes.probe_donors(curves, down, taker,
                                       room - room % params.granule_mb,
                                       params)
    amount = sum(donors.values())
    if amount < WIDE_GRANULES * params.granule_mb:
        return None
    saving = curves[taker].disk_mb_s / amount
    if saving - loss * (1 + params.value_band) <= params.min_value / 1024.0:
        return None
    why = ('utility (%s): %d MiB donors gave as much of without reading '
           'more, priced at %.3f MiB/s per GiB, toward a guest whose reads '
           'did not fall by the steps probes took'
           % (probes.PROBE, amount, loss * 1024))
    return probes.probe_plan(host, cfg, donors, taker, why)


def _doubling_room_mb(curve, room_mb, params):
    """MiB of ``room_mb`` a donor may give a doubling wide probe.

    Memory nobody was seen to use (:func:`_free_room_mb`), or as much as
    it already gave with its reads no higher (a larger size of this
    workload measured reading as much, within the noise): memory it was
    shown not to need, once more. At least DOUBLING_GRANULES of it: what
    one granule changes hides in the noise of a reader's windows (a
    uniform reader over 4 GiB at 6 MiB/s reads 0.1 MiB/s more per 64 MiB,
    a third of one window's chance), and doubling that took memory a
    reader needed (random host 549 without agents read 1.11x static, now
    1.01x). A donor never measured larger gives none of its cache.
    """
    here = curve.here
    gave_flat = 0 if here is None else max(
        (x.size_mb - curve.size_mb for x in curve.seen
         if x.size_mb > curve.size_mb
         and curve.measured_slope(here, x) == 0.0
         and here.disk_mb_s <= (1 + mrc.NOISE_SHARE) * x.disk_mb_s),
        default=0)
    if gave_flat < DOUBLING_GRANULES * params.granule_mb:
        gave_flat = 0
    return max(_free_room_mb(curve, room_mb, params),
               min(room_mb, gave_flat))


def reads_flat(curve, guest, params):
    """Whether a guest without an agent read as much at every size it held.

    Clean, reading from disk, measured at another size
    (host_only.explore_bound) and its reads no lower there than here.
    """
    return (guest.host_only and not (curve.resized or curve.filling)
            and curve.disk_mb_s >= mrc.READ_MB_S
            and host_only.explore_bound(curve, params) is None
            and not probes.measured_slope_below(curve, 0.0))


def _flat_beyond_probes(curve, guest, cfg, params):
    """Whether a wide probe may go toward this guest (see wide_probe)."""
    return (reads_flat(curve, guest, params)
            and not any(x.size_mb >= curve.size_mb + params.granule_mb / 2
                        for x in curve.seen)
            and guards.room_up(guest, cfg) >= WIDE_GRANULES
            * params.granule_mb)


def _free_room_mb(curve, room_mb, params):
    """MiB of ``room_mb`` (whole granules) nobody was seen to use.

    Its free memory (never filled) and, where it was measured at a smaller
    size reading as much as now (ValueCurve.measured_slope: nothing saved,
    beyond the noise), the memory down to that size. Not the cache of a
    guest that stopped reading, which is kept for its return unless a
    taker uses it now (:func:`utility._tie_allowed`); nor memory that only
    a curve rising with size prices at nothing (a workload that changed).
    """
    room_mb = min(room_mb, max(curve.free_mb, probes.flat_below_mb(curve)))
    return int(room_mb - room_mb % params.granule_mb)
