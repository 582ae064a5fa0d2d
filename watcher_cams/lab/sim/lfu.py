"""Double caching: a guest cache over the host's page cache.

The LFU Cache FS evaluation (papers.md, section 3): one guest reads 1 MiB
chunks of a 4 GiB file at random; its page cache holds 2.625 GiB and the
host's page cache, under it, what the host has left. With the plain guest
cache (LRU-like) the host sees the chunks the guest has not read lately, the
negative temporal locality the paper names, and its hit ratio collapses;
with an LFU hot set in the guest (:mod:`watcher_cams.policy.lfu`) the data
outside the hot set keeps coming back to the host cache and hits there.

Strategies: ``static`` (the plain guest cache), ``lfu-paper`` (the paper's
parameters), ``lfu-ours`` (a longer history and a swap margin) and
``oracle`` (the hot set of the blocks read most over the whole run, known
in advance, never swapped).
"""

import collections
import random

from watcher_cams.lab.sim import cache as cache_mod
from watcher_cams.policy import lfu

KB = 1024
STRATEGIES = ('static', 'lfu-paper', 'lfu-ours', 'oracle')
OURS = lfu.LfuParams(history=2000, confidence=4.0)
SCALE = ('as in the paper: 4 GiB file, 1 MiB random reads, LFU Cache FS '
         'of 2.625 GiB with 128 MiB blocks; the plain guest cache 2.875 GiB '
         '(a 3 GiB guest); host page cache 2.5 GiB (6 GiB host less the '
         'guest and 0.5 GiB); 60,000 reads, the first third not measured')


def spec(pattern='uniform', kernel='lru', reads=60000):
    """The evaluation's setup; ``kernel`` chooses the cache model.

    'lru': caches as the paper describes them (its 2.6.32 kernels had no
    refault detection); 'linux': the two-list model with workingset
    activation of :class:`~watcher_cams.lab.sim.cache.LinuxCache`.
    """
    return {'pattern': pattern, 'kernel': kernel,
            'file_mb': 4096, 'chunk_mb': 1,
            'guest_cache_mb': 2944, 'lfu_cache_mb': 2688,
            'host_cache_mb': 2560, 'reads': reads,
            'seed': 7}


def trace(s):
    rng = random.Random(s['seed'])
    chunks = s['file_mb'] // s['chunk_mb']
    if s['pattern'] == 'uniform':
        return [int(rng.random() * chunks) for _ in range(s['reads'])]
    hot = chunks // 5
    return [int(rng.random() * hot) if rng.random() < 0.8
            else hot + int(rng.random() * (chunks - hot))
            for _ in range(s['reads'])]


def _cache(s, mb):
    blocks = mb // s['chunk_mb']
    if s['kernel'] == 'lru':
        return cache_mod.LruCache(blocks)
    return cache_mod.LinuxCache(blocks, block_gib=s['chunk_mb'] / KB)


class _PlainGuest:
    def __init__(self, s):
        self.cache = _cache(s, s['guest_cache_mb'])

    def read(self, chunk):
        return self.cache.access(chunk)


class _LfuGuest:
    """Only chunks of hot blocks stay cached; others pass through."""

    def __init__(self, s, params, fixed=None):
        per_block = params.block_mb // s['chunk_mb']
        self.per_block = per_block
        self.hot = lfu.HotSet(s['lfu_cache_mb'] // params.block_mb, params)
        if fixed is not None:
            self.hot.hot = set(fixed)
            self.hot.slots = len(fixed)
            self.hot.params = lfu.LfuParams(
                block_mb=params.block_mb, check_every=1 << 30)
        self.resident = collections.defaultdict(set)

    def read(self, chunk):
        block = chunk // self.per_block
        self.hot.record(block)
        if block in self.hot.hot and chunk in self.resident[block]:
            return True
        admitted, evicted = self.hot.miss(block)
        if evicted is not None:
            self.resident.pop(evicted, None)
        if admitted:
            self.resident[block].add(chunk)
        return False


def run(s, strategy, accesses=None):
    """Host hit ratio and traffic of one strategy over the trace."""
    accesses = accesses if accesses is not None else trace(s)
    if strategy == 'static':
        guest = _PlainGuest(s)
    elif strategy == 'lfu-paper':
        guest = _LfuGuest(s, lfu.PAPER)
    elif strategy == 'lfu-ours':
        guest = _LfuGuest(s, OURS)
    elif strategy == 'oracle':
        per_block = lfu.PAPER.block_mb // s['chunk_mb']
        counts = collections.Counter(c // per_block for c in accesses)
        slots = s['lfu_cache_mb'] // lfu.PAPER.block_mb
        guest = _LfuGuest(s, lfu.PAPER,
                          fixed=[b for b, _ in counts.most_common(slots)])
    else:
        raise ValueError('unknown strategy %r' % strategy)
    host = _cache(s, s['host_cache_mb'])
    start = len(accesses) // 3
    app = guest_miss = disk = 0
    for i, chunk in enumerate(accesses):
        hit = guest.read(chunk)
        host_hit = True if hit else host.access(chunk)
        if i >= start:
            app += 1
            guest_miss += not hit
            disk += not host_hit
    kb = s['chunk_mb'] * KB
    swaps = guest.hot.swaps if hasattr(guest, 'hot') else None
    return {'app_kb': app * kb, 'guest_miss_kb': guest_miss * kb,
            'disk_kb': disk * kb, 'swaps': swaps,
            'host_hit_ratio': ((guest_miss - disk) / guest_miss
                               if guest_miss else 0.0)}
