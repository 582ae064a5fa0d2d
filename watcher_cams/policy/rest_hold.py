"""What a resting guest's cache is worth: the re-read its return costs.

A guest that stopped reading (its disk reads and its CPUs idle: a web
tier at night, a batch between runs, the Balloon Controller paper's
alternating working sets) holds in its cache the data it read. Given
away, that memory saves nothing to the guest now; but when the guest
comes back, it reads again, once, every MiB of its working set it lost.
When it comes back nobody knows. Keeping the cache costs the guests that
would use the memory now (their reads per MiB per second); giving it
costs one re-read per MiB, later or never. That is the ski-rental
problem, and its deterministic answer loses at most twice what knowing
the future would: rent until the rent paid equals the price, then buy.
Here: a resting guest's cache costs, per MiB given, one MiB re-read over
as long as it has rested (``1 / rested_s``), so a taker gets it once it
would have saved, over a time as long as the rest lasted so far, as
much as its re-read costs. The longer a guest rests, the cheaper its
cache: one that never comes back gives it all, later than it would have
at no price; one that comes back soon finds it there.

No more than the memory saved the guest while it read: where the host
measured it read more at a smaller size, the steepest such slope caps
the price (a reader over far more data than it caches re-reads little
of what it lost); where the host never measured its memory worth
anything, nothing is held (its first rest gives as before). Only its
cache: free memory its cache left costs nothing.
"""

from watcher_cams.policy import mrc
from watcher_cams.policy import stale_active

# Policy state key: when the guest's current rest began.
STATE_KEY = 'rest_since'


def rest_since(guest, resting):
    """When the guest's current rest began, or None when not resting.

    ``resting``: whether this window is one (the caller decides: it reads
    nothing and its CPUs idle, mrc.cpu_idle). A time the policy state
    keeps that is later than this window (junk) starts the rest anew.
    """
    if not resting:
        return None
    now = guest.sample.timestamp
    since = mrc.state_entry(guest, STATE_KEY)
    if (isinstance(since, bool) or not isinstance(since, (int, float))
            or not 0 <= since <= now):
        return now
    return float(since)


def density(guest, since, shortest_s):
    """MiB/s per MiB that giving the resting guest's active list costs.

    ``since``: :func:`rest_since`; ``shortest_s``: the shortest rest its
    price is spread over. 0.0 when it does not rest.
    """
    if since is None:
        return 0.0
    return 1.0 / max(guest.sample.timestamp - since, shortest_s, 1.0)


def held_from_mb(guest, activated_base):
    """MiB it gives before what it gives comes out of what it re-read.

    What it holds beyond its used memory and its active list: free
    memory and pages read once (the inactive list), which its return
    need not read again. Nor, after a phase change, the active pages its
    workload since then never activated (stale_active): the old one's.
    ``activated_base``: stale_active.base, or None.
    """
    s = guest.sample
    reread_mb = min(s.active_file_mb, s.file_lru_mb
                    - stale_active.never_activated_mb(guest, activated_base))
    return max(0.0, guest.actual_mb - s.used_mb - reread_mb)
