"""LFU Cache FS: keep a frequency-chosen hot set in the upper cache.

Paper mode (papers.md, section 3): the data is cut into blocks; a history of
the last ``history`` accesses counts references per block; every
``check_every`` misses, if the most-referenced block outside the hot set has
more references than the least-referenced block inside, the two swap. The
hot set holds ``slots`` blocks; only its data stays in the guest's page cache
(the rest is dropped, fadvise DONTNEED), so the stream reaching the host
cache keeps the locality the guest's LRU would have taken from it.

``confidence`` (ours; 0 in paper mode) makes a swap need the outsider to
lead by ``confidence`` standard deviations of the difference of two
counts (``sqrt(a + b)`` for counts of random arrivals): under uniform access
the counts in a history are noise, and every swap throws away a cached
block, while a block that is really hotter wins by far more.

Pure Python: the simulator and the in-guest component both use it.
"""

import collections
import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class LfuParams:
    block_mb: int = 128
    check_every: int = 10
    history: int = 100
    confidence: float = 0.0

    def __post_init__(self):
        if self.block_mb < 1 or self.check_every < 1 or self.history < 1:
            raise ValueError('block_mb, check_every and history must be '
                             '>= 1')
        if not self.confidence >= 0:
            raise ValueError('confidence must be >= 0')


PAPER = LfuParams()


class HotSet:
    """The blocks kept cached, with the access history that picks them."""

    def __init__(self, slots, params=PAPER):
        self.slots = max(0, int(slots))
        self.params = params
        self.hot = set()
        self.counts = collections.Counter()
        self.window = collections.deque()
        self.misses = 0
        self.swaps = 0

    def record(self, block):
        """Count one access to ``block`` in the history."""
        self.window.append(block)
        self.counts[block] += 1
        if len(self.window) > self.params.history:
            old = self.window.popleft()
            self.counts[old] -= 1
            if not self.counts[old]:
                del self.counts[old]

    def miss(self, block):
        """A read of ``block`` missed the guest cache.

        Returns ``(admitted, evicted)``: whether ``block`` is now hot, and
        the block that left the hot set (None if none), whose cached data
        the caller drops.
        """
        self.misses += 1
        if block in self.hot:
            return True, None
        if len(self.hot) < self.slots:
            self.hot.add(block)
            return True, None
        if self.misses % self.params.check_every:
            return False, None
        return self._swap(block)

    def _swap(self, block):
        outside = [(n, b) for b, n in self.counts.items()
                   if b not in self.hot]
        if not outside or not self.hot:
            return False, None
        best_n, best = max(outside)
        worst_n, worst = min((self.counts.get(b, 0), b) for b in self.hot)
        lead = self.params.confidence * math.sqrt(best_n + worst_n)
        if best_n <= worst_n + lead:
            return False, None
        self.hot.discard(worst)
        self.hot.add(best)
        self.swaps += 1
        return block in self.hot, worst
