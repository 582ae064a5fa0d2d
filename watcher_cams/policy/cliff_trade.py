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
them to fit; 23.1 GiB read, now 7.1). All of it at once: the
water-filling's step at a time saves a taker that little that no step
pays for the pass's reads (wide host 9: a 36 GiB stream at 1 MiB/s kept
1.2 GiB free for half an hour beside a uniform reader over 6 GiB). And a
trial may take it, as it takes a fitted scan's block: the pass's reads
price its memory at the most it could save. What it gave is a loan
(:func:`loan`): its policy state keeps the size it lent from, what the
pass read and how much it lent, which prices what it lacks up to there
(scan_cliffs), so that the memory comes back once what the taker holds
is worth less to it. Without that, the pass had no value to take it
back with until its reuse showed (forged-claims point seed-19: a tenant
whose forged counters took 384 MiB of a pass held them for half an
hour, though the host measured them worth nothing to it, and the pass
read 3% more than beside an honest neighbour; now as much).
"""

import dataclasses
import math

from watcher_cams.policy import guards
from watcher_cams.policy import mrc

# Key of the policy state entry: [MiB its cliff lies at, MiB/s it reads
# below it]; for a first pass's loan, [the size it lent from, what the
# pass read, LENT, MiB lent] (see loan).
STATE_KEY = 'traded'
LENT = 'lent'
# Takers weighed per fitted scan, those that could save most first: a
# plan's cost stays linear in the guests (with 40 fitted scans and 40
# takers that could each pay, weighing every pair took 0.2 s a plan, and
# each weighing priced every guest of the host: 1.5 s).
MAX_TAKERS = 4
# Share of what it read when it traded below which it no longer reads
# as that scan did: it went idle, or fits again.
READS_SHARE = 0.1
# Share more than it read when it traded above which it no longer reads
# as that scan did either: below its cliff a scan reads all it reads, and
# no more (random host 1291: a 2.7 GiB scan at 2 MiB/s that traded its
# memory became one of 15 GiB at 6 MiB/s, and the record took 2 GiB
# back for it from a reader its trade had grown).
MORE_SHARE = 0.5
# Key of a trial's taker's policy state entry: when it was last tried.
TRIAL_KEY = 'trial_at'
# A guest is tried at most once in this many seconds. What places its
# refaults is its own claim: a tenant that forges them (refaults as dense
# beyond its active list as within, where its reads do not fall with
# memory) gets a fitted scan's block on trial, and the neighbour reads
# below its cliff until the memory comes back. However it shapes its
# reads (a new workload drops the measurement that bars a trial), that
# happens at most this often; an honest taker whose trial paid holds the
# memory, and needs no second one.
TRIAL_EVERY_S = 7200.0


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
    # Priced by refaults the counters could not place
    # (:func:`unplaced_refaults_mb_s`): a probe, which the next windows
    # measure.
    trial: bool = False


def trade(host, cfg, params, curves, up, moves):
    """The best Trade, or None where no block's memory pays.

    A block (:class:`Block`) is a fitted scan's memory above its floor
    or a first pass's free memory.

    ``up``: what each guest may take ({uuid: MiB}); ``moves``: utility's
    water-filling, ``moves(curves, up)`` -> (delta, saved, measured). One
    taker per trade: what several would save together is several curves'
    claims added up, and random host 197 gave a fitted scan's 6 MiB/s
    for a neighbour's 6 and a third guest's claim of 1.5 more (it saved
    0.8). Where none pays by the takers' curves, a trial of a block
    (:func:`unplaced_refaults_mb_s`) may: the same takers weighed again.
    """
    market = (host, cfg, params, curves, up, moves)
    return _best(market, _curve_saving) or _best(market, _trial_saving)


def _best(market, saving):
    """The best Trade whose takers' savings ``saving`` prices, or None.

    ``saving``: (taker's ValueCurve, what its curve says it saves with
    the block, MiB it takes, its GuestView) -> MiB/s, or None where it
    may not take it.
    """
    host, cfg, params, curves, up, moves = market
    best, bounds = None, None
    for uuid, curve in sorted(curves.items()):
        block = _scan_block(host, cfg, curve, uuid)
        if block is None:
            block = _pass_block(host, cfg, params, curve, uuid)
        if block is None:
            continue
        # Only on a host with a block that may trade: every host whose
        # water-filling moved nothing comes here.
        bounds = bounds if bounds is not None else _bounds(
            host, curves, up, saving)
        # Offered whole: the water-filling gives a first pass's memory a
        # step at a time (utility._first_pass_room), the trade all of it.
        free = dataclasses.replace(
            curve, held_cliff=None, loss_density=0.0,
            no_loss_mb=block.room_mb, donate_mb=block.room_mb,
            first_pass=False)
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
            saved = saving(curves[taker], saved, delta[taker],
                           host.guest(taker))
            net = _net(curve, block, -delta[uuid], (saved, params))
            if net > 0 and (best is None or net > best[0]):
                best = (net, Trade(
                    delta, saved - block.reads_mb_s, measured | {uuid},
                    uuid, block, saving is _trial_saving))
    return best and best[1]


def _curve_saving(taker, saved, taken_mb, guest):
    """What the taker's curve says it saves, no more than it reads.

    A curve's measured step and the refault slope beyond it may each
    price all of its reads.
    """
    return min(saved, taker.disk_mb_s)


def _trial_saving(taker, saved, taken_mb, guest):
    """The most its refaults may save with ``taken_mb``, or None.

    See :func:`unplaced_refaults_mb_s`; no less than its curve says.
    """
    most = unplaced_refaults_mb_s(taker, guest, taken_mb)
    return None if most is None else max(most, _curve_saving(
        taker, saved, taken_mb, guest))


def unplaced_refaults_mb_s(curve, guest, taken_mb):
    """MiB/s its refaults may save with ``taken_mb`` more, or None.

    A refault beyond the active list says a larger cache would have kept
    the page, not how much larger: the curve spreads those refaults over
    all that shadow entries reach (cache_value._refault_segments), the
    least they may save. The most, on a concave curve, is as dense as
    the refaults within the active list (activations per MiB of it), on
    until all its refaults are placed: where a hot set outgrew the active
    list, they lie that near. Random host 1339: a hot/cold reader of
    8 GiB whose 1.6 GiB hot set met a cache of 640 MiB read 5.3 MiB/s,
    1.1 of them activated within its 320 MiB active list and 2.4 more
    refaults beyond; its curve valued 2 GiB more at 1.8 MiB/s, below the
    2.4 a fitted scan's memory cost, and it saved 4.7 with them (at that
    density all its refaults lie within 1,030 MiB). A reader of uniformly
    spread data refaults as densely beyond its active list as within:
    the two bounds meet, and nothing is tried. Only where no host
    measurement at a larger size prices it (none since its workload
    began), while its cache is full and no resize echoes: the trade is
    then measured like any probe, and the scan's remembered cliff
    (:data:`STATE_KEY`) takes its memory back where the taker's reads did
    not fall. Capped by what the host read.
    """
    # Without an agent there are no refault counters to go by.
    if (guest.host_only or curve.filling or curve.resized
            or curve.first_pass or last_trial(guest) is not None
            or any(x.size_mb > curve.size_mb for x in curve.seen)):
        return None
    active_mb = max(guest.sample.active_file_mb, 1.0)
    return min(curve.refault_mb_s, curve.disk_mb_s,
               curve.activate_mb_s / active_mb * taken_mb)


def last_trial(guest):
    """When the guest was last tried, within TRIAL_EVERY_S, or None."""
    at = mrc.state_time(guest, TRIAL_KEY)
    if at is None or guest.sample.timestamp - at >= TRIAL_EVERY_S:
        return None
    return at


def _bounds(host, curves, up, saving):
    """[(most a taker could save, uuid), ...], the largest first.

    What ``saving`` makes of what its curve says all it may take saves:
    a trade weighs takers in that order, and stops where even the bound
    cannot beat the best trade found. Takers it may not price are left
    out.
    """
    found = [(saving(c, c.gain(up[u]), up[u], host.guest(u)), u)
             for u, c in curves.items() if up[u]]
    return sorted(((b, u) for b, u in found if b is not None),
                  key=lambda x: (-x[0], x[1]))


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
    again, or reads less than READS_SHARE of what it read below it or
    MORE_SHARE more (:func:`outread`).
    """
    found = _record(guest)
    if found is None or _reads_more(found, disk_mb_s):
        return None
    fits_mb, reads_mb_s = found[:2]
    if not (guest.actual_mb < fits_mb
            and disk_mb_s >= READS_SHARE * reads_mb_s):
        return None
    return found


def outread(guest, disk_mb_s):
    """Whether a scan that traded reads more than all it read then.

    Below its cliff a scan reads all it reads, at any size: reading
    MORE_SHARE more, it reads another workload, which no measurement of
    the scan describes (cache_value drops them as at a phase change,
    resized or not). Random host 1291: a scan that became one of 15 GiB
    kept the old one's fit at 3 GiB as a measurement, and took memory
    back by it for half an hour.
    """
    found = _record(guest)
    return found is not None and _reads_more(found, disk_mb_s)


def _reads_more(found, disk_mb_s):
    """Whether ``disk_mb_s`` is MORE_SHARE more than record ``found``'s."""
    return disk_mb_s > (1 + MORE_SHARE) * found[1]


def _record(guest):
    """The (cliff MiB, MiB/s) its policy state keeps, or None (junk).

    A first pass's loan: (the size it lent from, MiB/s, LENT, MiB lent).
    """
    found = mrc.state_entry(guest, STATE_KEY)
    tail = ()
    if isinstance(found, list) and len(found) == 4 and found[2] == LENT:
        lent_mb = found[3]
        if (isinstance(lent_mb, bool) or not isinstance(lent_mb, int)
                or not 0 < lent_mb <= guest.max_mb):
            return None
        found, tail = found[:2], (LENT, lent_mb)
    try:
        fits_mb, reads_mb_s = (float(x) for x in found)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(fits_mb) and math.isfinite(reads_mb_s)
            and fits_mb <= guest.max_mb and reads_mb_s > 0):
        return None
    return (fits_mb, reads_mb_s) + tail


def loan(guest, reads_mb_s, lent_mb):
    """The record of a first pass lending ``lent_mb`` more (a list).

    Added to what it lent before, from the size it lent that from.
    """
    found = remembered(guest, reads_mb_s)
    if not lent(found):
        return [guest.actual_mb, reads_mb_s, LENT, lent_mb]
    return [int(found[0]), reads_mb_s, LENT, found[3] + lent_mb]


def lent(record):
    """Whether a record (:func:`remembered`) is a first pass's loan."""
    return record is not None and record[2:3] == (LENT,)
