"""A fitted scan's whole memory, traded at once where others save more.

A scan that fits (first_reuse.held_cliff) loses all its reads with the
first MiB taken below its cliff and nothing more with the rest: its loss
is a step, not a slope. Utility's water-filling prices what a donor gives
granule by granule, so such a scan's first granule carries its whole
cliff, no single taker's next granule beats it, and the exchange that
pays (all the scan holds above its floor, against all it would read) is
never reached. This is the knapsack choice the oracle makes: random host
1384 kept a 921 MiB scan fitted at 1,216 MiB while a 1,331 MiB scan
beside it, 256 MiB short of fitting, read three times as much.

Here the whole block is offered at no loss per MiB to one taker at a
time, which takes it by its curve's hull as water-filling would, and the
trade is made only when what that saves (no more than the taker reads)
beats the scan's reads at its cliff (measured by the host at a smaller
size) by ``value_band``, plus ``min_value`` per MiB. The scan then reads
below its cliff. What it traded stays in its policy
state (:data:`STATE_KEY`) until it holds its cliff again or stops reading,
and prices what it lacks as a scan whose cliff is placed (scan_cliffs):
memory that frees up later comes back to it, even once a window its host
cache served, or a shrink's echo, made it look like a new workload and
its reach went (random host 851). A trade back needs the same margin the
other way, so the two do not swap back and forth.

The free memory of a cache in its first pass is such a block too
(:func:`_pass_block`). While the pass lasts no counter shows its reuse,
so the free memory its reads will fill within ``fill_horizon_s`` is kept
from the water-filling (donation.donatable_mb): a scan that fits in it
saves all it reads once it comes round. It cannot save more than that:
all of it is traded where a taker saves more than the pass reads
(wide host 570: a 2.4 GiB scan at 1 MiB/s, 40 minutes into its first
pass, kept 576 MiB free beside a 1.8 GiB scan at 12 MiB/s that lacked
them to fit; 23.1 GiB read, now 7.1). Nothing is remembered of it: no
cliff was placed.
"""

import dataclasses
import math

from watcher_cams.policy import guards
from watcher_cams.policy import mrc

# Key of the policy state entry: [MiB its cliff lies at, MiB/s it reads
# below it].
STATE_KEY = 'traded'
# Takers weighed per fitted scan, those that could save most first: a
# plan's cost stays linear in the guests (with 40 fitted scans and 40
# takers that could each pay, weighing every pair took 0.2 s a plan, and
# each weighing priced every guest of the host: 1.5 s).
MAX_TAKERS = 4
# Share of what it read when it traded below which it no longer reads
# as that scan did: it went idle, or fits again.
READS_SHARE = 0.1


@dataclasses.dataclass(frozen=True)
class Block:
    """Memory one guest may give in one trade, and what giving it costs."""

    room_mb: int       # MiB, all at once
    reads_mb_s: float  # the most it reads for giving it
    cliff: tuple       # a fitted scan's (cliff MiB, MiB/s); None: a pass


@dataclasses.dataclass(frozen=True)
class Trade:
    """A trade, in utility._moves' terms, and the guest that gave."""

    delta: dict        # {uuid: MiB}
    saved: float       # MiB/s, what the giver reads for it taken off
    measured: set      # uuids whose moves host-measured reads priced
    donor: str
    block: Block       # what it gave


def trade(host, cfg, params, curves, up, moves):
    """The best Trade, or None where no block's memory pays.

    A block (:class:`Block`) is a fitted scan's memory above its floor
    or a first pass's free memory.

    ``up``: what each guest may take ({uuid: MiB}); ``moves``: utility's
    water-filling, ``moves(curves, up)`` -> (delta, saved, measured). One
    taker per trade: what several would save together is several curves'
    claims added up, and random host 197 gave a fitted scan's 6 MiB/s
    for a neighbour's 6 and a third guest's claim of 1.5 more (it saved
    0.8).
    """
    best, bounds = None, None
    for uuid, curve in sorted(curves.items()):
        block = (_scan_block(host, cfg, curve, uuid)
                 or _pass_block(host, cfg, params, curve, uuid))
        if block is None:
            continue
        # Only on a host with a block that may trade: every host whose
        # water-filling moved nothing comes here.
        bounds = bounds if bounds is not None else _bounds(curves, up)
        free = dataclasses.replace(
            curve, held_cliff=None, loss_density=0.0,
            no_loss_mb=block.room_mb, donate_mb=block.room_mb)
        cost = block.reads_mb_s * (1 + params.value_band)
        takers = [x for x in bounds if x[1] != uuid][:MAX_TAKERS]
        for bound, taker in takers:
            if bound - cost <= (best[0] if best else 0.0):
                # Neither it nor any after it can do better.
                break
            # The two alone: no other donor's memory was worth it to
            # anyone (water-filling moved nothing), and less so once the
            # taker holds more.
            delta, saved, measured = moves(
                {uuid: free, taker: curves[taker]},
                {uuid: 0, taker: up[taker]})
            # No more than it reads: a curve's measured step and the
            # refault slope beyond it may each price all of its reads.
            saved = min(saved, curves[taker].disk_mb_s)
            net = _net(curve, block, -delta[uuid], (saved, params))
            if net > 0 and (best is None or net > best[0]):
                best = (net, Trade(
                    delta, saved - block.reads_mb_s, measured | {uuid},
                    uuid, block))
    return best and best[1]


def _bounds(curves, up):
    """[(most a taker could save, uuid), ...], the largest first.

    No more than it reads, nor than its curve says all it may take
    saves: a trade weighs takers in that order, and stops where even the
    bound cannot beat the best trade found.
    """
    found = [(min(c.disk_mb_s, c.gain(up[u])), u)
             for u, c in curves.items() if up[u]]
    return sorted(found, key=lambda x: (-x[0], x[1]))


def _net(curve, block, given_mb, terms):
    """MiB/s a trade of ``given_mb`` of ``block`` saves beyond its cost.

    ``terms``: (MiB/s the taker saves, UtilityParams). Beyond what the
    block's guest reads and the margins: 0.0 where nothing is given, or
    where it does not take a fitted scan below its cliff.
    """
    saved, params = terms
    if given_mb <= 0 or (block.cliff is not None
                         and curve.size_mb - given_mb >= block.cliff[0]):
        return 0.0
    return saved - block.reads_mb_s * (1 + params.value_band) - (
        given_mb * params.min_value / 1024.0)


def _scan_block(host, cfg, curve, uuid):
    """A fitted scan's Block: down to its floor, or None.

    None for a guest that holds no fitted scan, or one grown within its
    rate window (its reads do not show the grow yet), or one that cannot
    go below its cliff this cycle.
    """
    if curve.held_cliff is None or curve.resized > 0:
        return None
    room = guards.room_down(host.guest(uuid), cfg)
    if curve.size_mb - room >= curve.held_cliff[0]:
        return None
    return Block(room, curve.held_cliff[1], curve.held_cliff)


def _pass_block(host, cfg, params, curve, uuid):
    """A Block of the free memory a first pass fills, or None.

    Its free memory above the floor margin, in granules, at what it reads
    (the most that memory could save it). None unless its cache fills in
    a first pass (ValueCurve.first_pass: no reuse shown) at a read rate
    that counts, and no resize of it echoes in this window.
    """
    if not (curve.filling and curve.first_pass and not curve.resized
            and curve.idle_since is None
            and curve.disk_mb_s >= mrc.READ_MB_S):
        return None
    room = min(int(curve.free_mb), guards.room_down(host.guest(uuid), cfg))
    room -= room % params.granule_mb
    return Block(room, curve.disk_mb_s, None) if room > 0 else None


def remembered(guest, disk_mb_s):
    """(cliff MiB, MiB/s) a guest traded and still lacks, or None.

    From its policy state; junk is dropped. Gone once it holds its cliff
    again, or reads less than READS_SHARE of what it read below it.
    """
    found = mrc.state_entry(guest, STATE_KEY)
    try:
        fits_mb, reads_mb_s = (float(x) for x in found)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(fits_mb) and math.isfinite(reads_mb_s)
            and guest.actual_mb < fits_mb <= guest.max_mb
            and disk_mb_s >= READS_SHARE * reads_mb_s > 0):
        return None
    return fits_mb, reads_mb_s
