"""A probe into donors' active lists toward a scan short of its cliff.

A scan whose first re-read placed its cliff (:mod:`first_reuse`) saves
all it re-reads once its cache holds its data, and nothing before. The
water-filling (:mod:`utility`) lets a donor give only down to its active
list where that is the knee of its curve (donation.donatable_mb): a
hot set's hits show in no counter, so the memory within it has no price
the counters could give. Where what donors may give falls short of the
cliff, the scan reads at its full rate for as long as the phase lasts
(a 1,331 MiB scan at 6 MiB/s held 115 MiB short of its cliff for two
hours, beside a 1 MiB/s hot/cold reader).

Only a measurement prices memory within an active list. One step takes
all the scan lacks from the active lists of donors whose other losses
are below what the scan would save, and the next clean windows measure
both: the donor's reads at its smaller size price that memory from then
on (cache_value.ValueCurve.measured_loss), and where they rose more than
the scan saves, the water-filling gives it back. That measurement keeps
the probe from being tried again while it is remembered.
"""

from watcher_cams.policy import donation
from watcher_cams.policy import first_reuse
from watcher_cams.policy import guards
from watcher_cams.policy import mrc
from watcher_cams.policy import probes

# Share of its file LRU a cache that refaults nothing may give a probe.
FITTED_SHARE = 0.5


def cliff_probe(host, cfg, params, curves, rooms):
    """All a scan lacks to its cliff, from donors' active lists, or None.

    ``rooms``: what each guest may give the water-filling ({uuid: MiB}).
    The taker is the scan short of a placed cliff that would save the
    most per MiB (:func:`_short_of_cliff`); the donors, the cheapest by
    their priced losses (probes.probe's), each giving at most what lies
    above its floor and its used memory (:func:`_active_room_mb`). Only
    when the whole step saves more per MiB than the donors' priced loss,
    by ``value_band``, and the step fits within what the taker may grow.
    """
    taker, need = _short_of_cliff(host, cfg, params, curves)
    if taker is None:
        return None
    down = {u: max(rooms.get(u, 0),
                   _active_room_mb(host.guest(u), cfg, params, c))
            for u, c in curves.items() if u != taker}
    if sum(down.values()) < need:
        return None
    donors, loss = probes.probe_donors(curves, down, taker, need, params)
    gain = curves[taker].refault_mb_s / need
    if (sum(donors.values()) < need
            or gain - loss * (1 + params.value_band)
            <= params.min_value / 1024.0):
        return None
    why = ('utility (%s): %d MiB to a scan short of its cliff, from '
           'active lists; saves up to %.3f MiB/s of reads, the donors '
           'priced at %.3f MiB/s per GiB' % (
               probes.PROBE, need, curves[taker].refault_mb_s,
               loss * 1024))
    return probes.probe_plan(host, cfg, donors, taker, why)


def _short_of_cliff(host, cfg, params, curves):
    """(uuid, MiB it lacks) of the scan that gains most per MiB, or Nones.

    A scan whose cliff is placed above its size and still priced (not
    given up: scan_cliffs.weighed), its window clean, that may grow all
    it lacks this cycle (in whole granules).
    """
    best, best_need, best_gain = None, 0, 0.0
    g_mb = params.granule_mb
    for u, c in sorted(curves.items()):
        if (c.cliff_mb is None or c.cliff_mb <= c.size_mb or c.resized
                or c.filling or c.density_at(0)[0] <= 0):
            continue
        need = c.cliff_mb - c.size_mb
        need = int(need + (-need) % g_mb)
        if need > guards.room_up(host.guest(u), cfg):
            continue
        gain = c.refault_mb_s / need
        if gain > best_gain:
            best, best_need, best_gain = u, need, gain
    return best, best_need


def _active_room_mb(guest, cfg, params, curve):
    """MiB a donor may give a cliff probe: down to its used memory.

    Its floor and its used memory with the floor margin
    (donation.kept_mb without an active list), within this cycle's
    step. Nothing from a guest whose window a resize blurs, whose cache
    still fills (nothing it evicted came back yet; not one with less than
    a granule of free memory left, whose last few MiB trickle in: it
    evicts as a full cache does), whose reuse has not
    shown (first_pass), that holds a scan's cliff itself, that stalls on
    memory (donation.stalled_on_memory), or that has no guest
    agent (no active list is known; it gives what its curve lets it).
    One that refaults nothing holds all it re-reads: no counter prices
    any of it, and a cut of most of it loses most of its hits, so it
    gives at most FITTED_SHARE of its file LRU (random host 546: a
    uniform reader whose 1,024 MiB all sat on its active list gave 768
    MiB of it to a 2 MiB/s scan, and read 4.6 MiB/s; on host 246 a
    quarter of such a cache fitted a scan and saved twice what it cost).
    """
    if (guest.host_only or curve.resized
            or (curve.filling and curve.free_mb >= params.granule_mb)
            or curve.first_pass
            or curve.held_cliff is not None
            or first_reuse.unconfirmed(curve)
            or donation.stalled_on_memory(guest, params)):
        return 0
    room = guest.actual_mb - donation.kept_mb(guest, cfg)
    if curve.refault_mb_s <= mrc.IDLE_MB_S:
        room = min(room, int(guest.sample.file_lru_mb * FITTED_SHARE))
    return max(0, min(room, guards.room_down(guest, cfg)))
