"""What one rate window says of a guest's cache.

Whether it is still filling (nothing evicted yet: its refaults understate
it), whether the balloon resized the guest within the window (its rates
still echo the old size), what it read from disk, refaulted and
activated, and the reuse its cache served while it filled. The value
curve (:mod:`cache_value`) and the host-only curve (:mod:`host_only`)
read a window through these.
"""

from watcher_cams.policy import model
from watcher_cams.policy import mrc

# MemTotal changes smaller than this (KiB) are not a balloon change.
RESIZE_KB = 4096
# File LRU growth (MiB) over the rate window that counts as filling.
GROWTH_MB = 32
# Refaults (a share of all reads since boot) and activations (of the reads
# now) that a first pass may show: the boot's own re-reads, and noise.
FIRST_PASS_REFAULTS = 0.01
FIRST_PASS_LRUS = 3


def first_pass(s, r):
    """Whether no counter can have shown the guest's reuse yet.

    A guest that has read, since it booted, less than FIRST_PASS_LRUS
    times its file LRU, refaulted (next to) nothing of it and hits nothing
    in its cache now (no page activated: ``r``, its rates) may be in the
    first pass of a scan that fits in more memory: its reuse has not come
    round yet. Zero refaults are evidence of a stream only once it read
    further than that. (Three: a scan up to three times its cache is
    protected; a tie step away from a reader over far more data waits at
    most three cache fills.)
    """
    return (s.read_mb < FIRST_PASS_LRUS * s.file_lru_mb
            and s.refault_mb <= FIRST_PASS_REFAULTS * s.read_mb
            and r.pgactivate_s * model.MB_PER_PAGE
            <= FIRST_PASS_REFAULTS * r.disk_read_mb_s)


def read_rates_mb_s(r, io=None):
    """(disk reads, refaults, activations) in MiB/s, refaults capped.

    The disk reads are what QEMU read for the guest (``io``, a
    host_io.HostIo) when the host measured them, else what the guest says
    (``pgpgin``). A guest cannot save more reads than it does: when its
    counters say otherwise they disagree or lie, and the refault figures
    are scaled down to the disk's.
    """
    disk = (io.read_mb_s if io is not None
            else r.pgpgin_kb_s / model.KB_PER_MB)
    refault = r.refault_s * model.MB_PER_PAGE
    activate = min(r.activate_s * model.MB_PER_PAGE, refault)
    if refault > disk:
        scale = disk / refault if refault > 0 else 0.0
        refault, activate = refault * scale, activate * scale
    return disk, refault, activate


def cache_filling(guest, read_mb, cfg):
    """(whether the guest's cache is still filling, its free MiB).

    A cache that grew over the window by more than GROWTH_MB, or kept at
    least half of the ``read_mb`` read into it, is still filling: what it
    evicts now has not come back yet, so its refaults understate its value
    (and the kernel keeps some free memory below its watermarks, so "free"
    alone misses the last few hundred MiB). Not a full cache whose size
    rose by less, refaulting nothing: the kernel reclaims it in batches
    down to a watermark and it refills to the next, and a reader whose
    misses nothing re-reads (cold blocks, or a stream) never refaults; so
    taken for filling, it was never measured and never valued.
    """
    s = guest.sample
    free = s.mem_available_kb / model.KB_PER_MB - s.file_lru_mb
    return free > cfg.floor_margin_mb or cache_grew(guest, read_mb), free


def cache_grew(guest, read_mb):
    """Whether the cache grew by more than GROWTH_MB or half its reads."""
    growth = guest.sample.file_lru_mb - guest.previous.file_lru_mb
    return growth > GROWTH_MB or (growth > 0 and growth >= read_mb / 2)


def resized_in_window(guest, last_resize, params):
    """+1 grown, -1 shrunk by the balloon within the rate window, else 0.

    A window that began just after a resize this policy recorded (an
    agent that also samples on its own timer) still holds its echo.
    """
    s = guest.sample
    change = s.mem_total_kb - guest.previous.mem_total_kb
    resized = 0 if abs(change) < RESIZE_KB else (1 if change > 0 else -1)
    if (not resized and last_resize is not None
            and guest.previous.timestamp < last_resize[0] + params.settle_s):
        resized = last_resize[1]
    return resized


def grew_since_plan(guest):
    """Whether the balloon grew the guest after the last plan."""
    change = change_since_plan(guest)
    return change is not None and change[1] > 0


def change_since_plan(guest):
    """(time of the last plan, direction) if the size changed since, or None.

    The policy state keeps the size at each plan; a different size now
    means a change after that plan (taken as right after it).
    """
    state = guest.policy_state.get(mrc.STATE_KEY)
    try:
        size, at = int(state['size_mb']), float(state['at'])
    except (KeyError, TypeError, ValueError):
        return None
    if abs(guest.actual_mb - size) * 1024 < RESIZE_KB:
        return None
    return at, 1 if guest.actual_mb > size else -1


def last_balloon_change(guest):
    """(time, direction) of the guest's last balloon change, or None.

    One since the last plan (:func:`change_since_plan`), or the one the
    policy state recorded.
    """
    state = guest.policy_state.get(mrc.STATE_KEY)
    if not isinstance(state, dict):
        return None
    change = change_since_plan(guest)
    if change is not None:
        return change
    last = state.get('last_resize')
    try:
        at, direction = float(last[0]), int(last[1])
    except (TypeError, ValueError, IndexError):
        return None
    return (at, direction) if direction in (-1, 1) else None


def fill_density(guest, r, params):
    """Hits per second per MiB of a filling cache, or None.

    Without reclaim nothing leaves the active list, so its growth over the
    window is the cache pages read a second time while cached: the reuse
    the cache delivered, per MiB of it. For a miss-ratio curve that is
    concave this average is at least the value of the next MiB, so it
    bounds what the guest's free memory would have been worth. It is
    evidence only when the guest read at least a granule in the window.
    """
    if r.disk_read_mb_s * r.interval_s < params.granule_mb:
        return None
    s, prev = guest.sample, guest.previous
    promoted = max(0.0, s.active_file_mb - prev.active_file_mb)
    return promoted / r.interval_s / max(s.file_lru_mb,
                                         params.min_segment_mb)


def inactive_hit_density(guest, r, params):
    """Hits per second per MiB of the inactive file list (0: unknown).

    ``pgactivate`` counts pages moved to an active list, mostly inactive
    pages hit again: the reads the cache's margin serves, which is what
    shrinking it loses. It sees a hot set larger than the active list,
    whose pages cycle through the inactive one and are hit there, where
    refaults see nothing (they are hits, not misses). A guest's claim: it
    may keep memory the guest has, never get it more (it prices losses
    only). Over at least ``min_segment_mb``: a list of a few MiB (a cache
    whose pages all became active) says little of the MiB behind it.
    """
    inactive = max(guest.sample.inactive_file_mb, params.min_segment_mb)
    return r.pgactivate_s * model.MB_PER_PAGE / inactive


def read_room_mb(guest, cfg):
    """MiB more memory that could hold data the guest has read.

    A cache saves only re-reads, and re-reads only of data read before:
    memory beyond its used memory, all it read since it booted and the
    floor margin holds nothing a read will ask for again. Or beyond what
    its file LRU holds, where that is more: pages it wrote. The paper
    grid's 2,000 files: a guest woken to read 2,000 MiB was given 688 MiB
    more than that by a neighbour gone idle, whose cache it read again
    on its return (5.93 GiB read, now 5.52). The guest's own counter
    (pgpgin; without an agent the host's count of its reads) can only cap
    what the guest takes, never get it more.
    """
    s = guest.sample
    return max(0.0, s.used_mb + max(s.read_mb, s.file_lru_mb)
               + cfg.floor_margin_mb - guest.actual_mb)
