"""Double caching: how much of a guest's disk reads the host cache serves.

A disk whose cache mode keeps the host's page cache (QEMU's writeback,
writethrough and unsafe modes; libvirt's ``default`` is QEMU's writeback)
holds what the guest read twice, once in each page cache. That pays only
if the host's copy serves reads the guest's cache missed; with an LRU guest
cache over an LRU host cache it mostly does not (papers.md, section 3): what
the guest reads again hits in the guest, and what reaches the host is what
the guest has not read for a while.

The agent measures it on the host, with nothing from inside the guest:
the bytes the guest read from those disks (QEMU's block statistics,
``rd_bytes``) against the bytes the guest's QEMU process read from storage
(``read_bytes`` of ``/proc/<pid>/io``, which counts what the storage layer
fetched for the process, so page cache hits are not in it). Reads of the
guest's disks that bypass the host cache (``none``, ``directsync``) reach
storage whole and are taken off the process's count. The host's readahead
can read more than the guest asked for, so the share served is clamped to
[0, 1].
"""

import dataclasses
from typing import Optional

# Cache modes whose reads go through the host's page cache.
HOST_CACHED = frozenset(('writeback', 'writethrough', 'unsafe', 'default'))
MB = 1 << 20


@dataclasses.dataclass(frozen=True)
class HostCacheService:
    """One guest's reads through host-cached disks over a window."""

    disks: tuple
    window_s: float
    guest_read_mb: float
    storage_read_mb: float
    # None when the guest read too little in the window to tell.
    hit_ratio: Optional[float]

    @property
    def double_caching(self) -> bool:
        """The guest reads through the host's cache: both cache its data."""
        return self.hit_ratio is not None

    def as_dict(self):
        return {'disks': list(self.disks),
                'window_s': round(self.window_s, 3),
                'guest_read_mb': round(self.guest_read_mb, 3),
                'storage_read_mb': round(self.storage_read_mb, 3),
                'hit_ratio': (None if self.hit_ratio is None
                              else round(self.hit_ratio, 4)),
                'double_caching': self.double_caching}


def io_sample(timestamp, qemu_pid, disks, qemu_read_bytes):
    """The counters one window needs, or None without a host-cached disk.

    ``disks``: the domain's disks as the agent lists them (``dev``,
    ``cache``, ``rd_bytes``); ``qemu_read_bytes``: ``read_bytes`` of the
    guest's QEMU process, None when it could not be read.
    """
    cached = [d for d in disks if d.get('cache') in HOST_CACHED
              and isinstance(d.get('rd_bytes'), int)]
    if not cached or qemu_pid is None or qemu_read_bytes is None:
        return None
    return {'timestamp': timestamp, 'qemu_pid': qemu_pid,
            'disks': sorted(d['dev'] for d in cached),
            'guest_read_bytes': sum(d['rd_bytes'] for d in cached),
            'uncached_read_bytes': sum(
                d.get('rd_bytes') or 0 for d in disks
                if d.get('cache') not in HOST_CACHED),
            'qemu_read_bytes': qemu_read_bytes}


def service(current, previous, min_read_mb):
    """HostCacheService between two io_sample()s, or None.

    None when either sample is missing, QEMU restarted or the disks changed
    in between (counters started anew), or no time passed. The hit ratio is
    given only when the guest read at least ``min_read_mb`` MiB through
    host-cached disks in the window.
    """
    if current is None or previous is None:
        return None
    if (current['qemu_pid'] != previous['qemu_pid']
            or current['disks'] != previous['disks']):
        return None
    window = current['timestamp'] - previous['timestamp']
    deltas = [current[k] - previous[k] for k in (
        'guest_read_bytes', 'uncached_read_bytes', 'qemu_read_bytes')]
    if window <= 0 or min(deltas) < 0:
        return None
    guest, uncached, qemu = deltas
    storage = max(0, qemu - uncached)
    ratio = None
    if guest > 0 and guest >= min_read_mb * MB:
        ratio = min(1.0, max(0.0, 1.0 - storage / guest))
    return HostCacheService(disks=tuple(current['disks']), window_s=window,
                            guest_read_mb=guest / MB,
                            storage_read_mb=storage / MB, hit_ratio=ratio)


def lfu_candidate(svc, below_hit_ratio):
    """Whether an LFU hot set in the guest should help the host's cache.

    The guest reads through the host's cache and the host serves less than
    ``below_hit_ratio`` of what reaches it.
    """
    return (svc is not None and svc.hit_ratio is not None
            and svc.hit_ratio < below_hit_ratio)
