"""What a resting guest's cache is worth: the re-read its return costs.

A guest that stopped reading (its disk reads and its CPUs idle: a web
tier between bursts, a batch between runs, the Balloon Controller
paper's alternating working sets) holds in its cache the data it read.
Given away, that memory saves nothing to the guest now; but when the
guest comes back, it reads again, once, every MiB of its working set it
lost. When it comes back nobody knows. Keeping the cache costs the
guests that would use the memory now (their reads per MiB per second);
giving it costs one re-read per MiB, later or never. That is the
ski-rental problem, and its deterministic answer loses at most twice
what knowing the future would: rent until the rent paid equals the
price, then buy. Here: what a resting guest gives of its active list
(pages it read twice, which its return reads again) costs one MiB of
reads per MiB spread over as long as it has rested, so a taker gets it
once it would have saved, over a time as long as the rest lasted so
far, as much as its re-read costs. The longer the rest, the cheaper the
cache. A guest that came back before told how long its rests last: the
last one predicts this one (:func:`density`), so a taker whose saving
pays the re-read within such a rest gets the cache early, and one whose
saving does not, late.

Only for a guest that came back from a rest before. A workload that
stops for good (a batch done, a scan that ran once) is the common case,
and it would hold its cache for nothing, for as long as its takers'
saving takes to pay its re-read: random host 1, a fitted scan that
stopped after an hour kept 1.8 GiB from a reader over 8 GiB to the end
(1.033x the oracle to 1.118x). A guest that rested and came back is
taken at its word: it rests to come back.
"""

from watcher_cams.policy import mrc

# Policy state keys: when the guest's current rest began, MiB of its
# cache its return re-reads (reread_mb), when it last came back from a
# rest, and how long that rest lasted (s).
STATE_KEY = 'rest_since'
HELD_KEY = 'rest_held_mb'
RETURNED_KEY = 'returned_at'
RESTED_KEY = 'rested_s'
# How far the rule trusts the last rest's length as the next one's
# (:func:`density`): the ski rental with a prediction of Purohit,
# Svitkina and Kumar (NeurIPS 2018) with their lambda, which costs at
# most (1 + TRUST) times what knowing the future would when the
# prediction holds and (1 + TRUST) / TRUST times whatever it is.
TRUST = 0.1


def rest_since(guest, resting):
    """When the guest's current rest began, or None when not resting.

    ``resting``: whether this window is one (the caller decides: it reads
    nothing and its CPUs idle, mrc.cpu_idle). A time the policy state
    keeps that is later than this window (junk) starts the rest anew.
    """
    if not resting:
        return None
    since = mrc.state_time(guest, STATE_KEY)
    return guest.sample.timestamp if since is None else since


def returned_at(guest, resting):
    """When the guest last came back from a rest, or None (never seen).

    This window, where the policy state keeps a rest and the guest no
    longer rests (``resting`` as for :func:`rest_since`).
    """
    if not resting and mrc.state_time(guest, STATE_KEY) is not None:
        return guest.sample.timestamp
    return mrc.state_time(guest, RETURNED_KEY)


def rested_s(guest, resting):
    """How long the guest's last rest lasted (s), or None (never seen).

    The rest the policy state keeps, where the guest no longer rests
    (``resting`` as for :func:`rest_since`); else what the state keeps
    under RESTED_KEY, if a positive finite number.
    """
    since = mrc.state_time(guest, STATE_KEY)
    if not resting and since is not None:
        return guest.sample.timestamp - since
    value = mrc.state_entry(guest, RESTED_KEY)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 < value < float('inf') else None


def density(guest, rest, shortest_s):
    """MiB/s per MiB that giving the resting guest's active list costs.

    ``rest``: (:func:`rest_since`, :func:`returned_at`, :func:`rested_s`);
    ``shortest_s``: the shortest rest its price is spread over (its rate
    window). 0.0 when it does not rest, or never came back from a rest.

    The ski rental: a taker gets the cache once it would have saved, over
    as long as the rest has lasted, one re-read of it. With the last
    rest's length as a prediction (TRUST): a taker that would save that
    much over a rest as long as the last one gets it sooner, one that
    would not later.
    """
    since, returned, last_s = rest
    if since is None or returned is None:
        return 0.0
    ski = 1.0 / max(guest.sample.timestamp - since, shortest_s, 1.0)
    if last_s is None:
        return ski
    predicted = 1.0 / max(last_s, shortest_s, 1.0)
    return min(max(predicted, TRUST * ski), ski / TRUST)


def reread_mb(guest, since, scanned_mb=None):
    """MiB of its cache the resting guest's return reads again.

    Its active list when the rest began (``since``, :func:`rest_since`), or
    a scan's reach (``scanned_mb``, first_reuse.Reach.scanned_mb; for a
    guest without an agent, whose active list nobody sees, its whole cache)
    if larger: a scan re-reads every page of its range once per pass, from
    the inactive list as much as the active one, and one that lost any
    misses all (wide host 12: a 3.2 GiB scan resting 40 minutes of every 70
    with 468 MiB active gave 900 MiB at its rest and read 4 MiB/s from its
    return on). As the policy state keeps it (HELD_KEY), and no more than
    its file LRU holds now: a shrink's reclaim demotes active pages to the
    inactive list, where they are still what it re-reads. (Not bounded by
    what it activated since its workload began, as stale_active bounds a
    reader's: a workload back from a rest hits the pages it left active, and
    activates none of them again.) None when it does not rest.
    """
    if since is None:
        return None
    s = guest.sample
    kept = mrc.state_mb(guest, HELD_KEY)
    if since == s.timestamp or kept is None:
        kept = max(s.active_file_mb, scanned_mb or 0)
    return int(min(kept, s.file_lru_mb))
