"""Page caches as Linux keeps them, at block granularity.

:class:`LinuxCache` follows mm/vmscan.c and mm/workingset.c closely enough
for the counters the policies read:

- a block read for the first time goes to the inactive list; a second access
  while it is there promotes it to the active list;
- reclaim evicts from the inactive tail; when the inactive list is low
  (``inactive * ratio < active``, the kernel's ``inactive_is_low``) the
  active tail is demoted to the inactive head first;
- an evicted block leaves a shadow entry stamped with the eviction clock;
  reading it again is a refault, and a refault whose distance (evictions
  since) is at most the active list is activated at once (the kernel's
  ``workingset_refault``/``workingset_activate``);
- shadow entries are bounded (the kernel shrinks shadow nodes under memory
  pressure); the oldest go first.

Blocks stand for a fixed number of bytes chosen by the scenario; every
counter is in blocks and the host converts.
"""

import collections
import math


def inactive_ratio(cache_gib):
    """The kernel's active:inactive target for a file LRU of this size."""
    gb = int(cache_gib)
    return max(1, math.isqrt(10 * gb)) if gb else 1


class LinuxCache:
    """A file page cache with active/inactive lists and shadow entries."""

    def __init__(self, capacity, block_gib=0.0, shadow_factor=1.0):
        self.active = collections.OrderedDict()
        self.inactive = collections.OrderedDict()
        self.shadow = collections.OrderedDict()
        self.block_gib = block_gib
        self.shadow_factor = shadow_factor
        self.evictions = 0
        self.hits = self.misses = self.refaults = self.activations = 0
        # Inactive pages hit again (the kernel's pgactivate).
        self.promotions = 0
        self.capacity = 0
        self.resize(capacity)

    def __len__(self):
        return len(self.active) + len(self.inactive)

    def __contains__(self, block):
        return block in self.active or block in self.inactive

    def resize(self, capacity):
        """Set the number of blocks the cache may hold; evicts as needed."""
        self.capacity = max(0, int(capacity))
        self._ratio = inactive_ratio(self.capacity * self.block_gib)
        self._shadow_limit = int(self.shadow_factor * max(self.capacity, 1))
        self._reclaim()

    def access(self, block):
        """Read ``block``; True on a hit."""
        active, inactive = self.active, self.inactive
        if block in active:
            active.move_to_end(block)
            self.hits += 1
            return True
        if block in inactive:
            del inactive[block]
            active[block] = None
            self.hits += 1
            self.promotions += 1
            return True
        self.misses += 1
        stamp = self.shadow.pop(block, None)
        if stamp is not None:
            self.refaults += 1
            if self.evictions - stamp <= len(active):
                self.activations += 1
                active[block] = None
                self._reclaim()
                return False
        inactive[block] = None
        self._reclaim()
        return False

    def drop(self, block):
        """Remove ``block`` without a shadow entry (fadvise DONTNEED)."""
        self.active.pop(block, None)
        self.inactive.pop(block, None)

    def _reclaim(self):
        active, inactive, shadow = self.active, self.inactive, self.shadow
        while len(active) + len(inactive) > self.capacity:
            while active and len(inactive) * self._ratio < len(active):
                block, _ = active.popitem(last=False)
                inactive[block] = None
                inactive.move_to_end(block)
            if not inactive:
                block, _ = active.popitem(last=False)
            else:
                block, _ = inactive.popitem(last=False)
            shadow[block] = self.evictions
            self.evictions += 1
        while len(shadow) > self._shadow_limit:
            shadow.popitem(last=False)


class LruCache:
    """A plain LRU of blocks (the host cache of the LFU paper, an LLC)."""

    def __init__(self, capacity):
        self.blocks = collections.OrderedDict()
        self.capacity = max(0, int(capacity))
        self.hits = self.misses = 0

    def __len__(self):
        return len(self.blocks)

    def resize(self, capacity):
        self.capacity = max(0, int(capacity))
        while len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)

    def access(self, block):
        blocks = self.blocks
        if block in blocks:
            blocks.move_to_end(block)
            self.hits += 1
            return True
        self.misses += 1
        if self.capacity:
            blocks[block] = None
            if len(blocks) > self.capacity:
                blocks.popitem(last=False)
        return False
