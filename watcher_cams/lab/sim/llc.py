"""Sharing-aware vCPU placement: guests on last-level caches.

The Keio evaluation (papers.md, section 2): guests read their data at
random; pages KSM merged between two guests are one physical page, so two
such guests on the same LLC cache it once and both hit it. Each LLC is an
LRU of 4 KiB pages; guests on one LLC take turns. A read that misses the
LLC goes to DRAM, ``DRAM_COST`` times slower than a hit.

Placements come from :func:`watcher_cams.policy.affinity.plan` on a HostView
of the scenario (the code the ``sharing_aware_pinning`` strategy runs):
``pinning-paper`` is its greedy pairing alone, ``pinning-ours`` adds the
local search and the exact search; ``static`` keeps the initial placement
(guests spread round robin in name order, as a scheduler balancing load
would) and ``oracle`` is the best placement by running every one.
"""

import itertools
import random

from watcher_cams.lab.sim import cache as cache_mod
from watcher_cams.policy import affinity
from watcher_cams.policy import model

STRATEGIES = ('static', 'pinning-paper', 'pinning-ours', 'oracle')
DRAM_COST = 5.0
PAGE_KB = 4
SCALE = ('LLC of 20 MiB as in the paper, 4 KiB pages, 15 MiB random reads '
         'per guest, %d reads per guest; DRAM %gx slower than an LLC hit')


def spec(name):
    """Guests, their shared fractions and the LLCs of one point."""
    if name == 'paper-4vm':
        return {'name': name, 'llcs': 2, 'cpus_per_llc': 2,
                'guests': ['a1', 'a2', 'b1', 'b2'],
                'sharing': {('a1', 'a2'): 0.6, ('b1', 'b2'): 0.6,
                            ('a1', 'b1'): 0.01, ('a2', 'b2'): 0.01},
                'llc_mb': 20, 'data_mb': 15, 'reads': 120000}
    return {'name': name, 'llcs': 3, 'cpus_per_llc': 2,
            'guests': ['a', 'b', 'c', 'd', 'e', 'f'],
            'sharing': {('a', 'b'): 0.7, ('a', 'c'): 0.65, ('b', 'c'): 0.65,
                        ('c', 'd'): 0.55, ('d', 'e'): 0.6, ('e', 'f'): 0.1},
            'llc_mb': 20, 'data_mb': 15, 'reads': 90000}


def _pages(s):
    return s['data_mb'] * 1024 // PAGE_KB


def frames(s):
    """Physical frame of each guest page: merged pages share a frame."""
    n = _pages(s)
    table = {g: ['%s:%d' % (g, i) for i in range(n)] for g in s['guests']}
    # Merged content: the first fraction of each guest's pages, identical
    # between the pair; a page merged with several guests keeps one frame.
    for (a, b), rate in sorted(s['sharing'].items(), key=lambda kv: -kv[1]):
        for i in range(int(n * rate)):
            table[b][i] = table[a][i]
    return table


def host_view(s, placement):
    """The HostView the pinning policy plans on."""
    n = _pages(s)
    per = s['cpus_per_llc']
    domains = tuple(
        model.LlcDomain('L3-%d' % d, tuple(range(d * per, (d + 1) * per)), d)
        for d in range(s['llcs']))
    guests = tuple(model.GuestView(
        uuid=g, name=g, max_mb=1024, actual_mb=1024, vcpus=1,
        cpus=(domains[placement[g]].cpus,), ram_pages=n)
        for g in s['guests'])
    table = frames(s)
    sharing = {}
    for a, b in itertools.combinations(s['guests'], 2):
        common = len(set(table[a]) & set(table[b]))
        if common:
            sharing[model.pair_key(a, b)] = common
    return model.HostView('sim-llc', 65536, guests=guests,
                          llc_domains=domains,
                          shared_cpus=tuple(c for d in domains
                                            for c in d.cpus),
                          sharing=sharing)


def static_placement(s):
    return {g: i % s['llcs'] for i, g in enumerate(s['guests'])}


def policy_placement(s, params):
    start = static_placement(s)
    result = affinity.plan(host_view(s, start), params)
    placed = dict(start)
    for pin in result.pins:
        placed[pin.instance] = int(pin.llc.split('-')[1])
    return placed


def measure(s, placement, seed=11):
    """LLC hits and misses per guest for one placement."""
    table = frames(s)
    n = _pages(s)
    llcs = [cache_mod.LruCache(s['llc_mb'] * 1024 // PAGE_KB)
            for _ in range(s['llcs'])]
    rng = random.Random(seed)
    order = list(s['guests'])
    out = {g: [0, 0] for g in order}
    for _ in range(s['reads']):
        for g in order:
            frame = table[g][int(rng.random() * n)]
            hit = llcs[placement[g]].access(frame)
            out[g][0 if hit else 1] += 1
    return out


def best_placement(s):
    """Every placement with at most cpus_per_llc guests per LLC."""
    best = None
    for combo in itertools.product(range(s['llcs']), repeat=len(s['guests'])):
        if max(combo.count(d) for d in range(s['llcs'])) > s['cpus_per_llc']:
            continue
        if combo[0] != 0:
            continue  # LLCs are interchangeable
        placement = dict(zip(s['guests'], combo))
        counts = measure(dict(s, reads=s['reads'] // 4), placement)
        misses = sum(m for _, m in counts.values())
        if best is None or misses < best[0]:
            best = (misses, placement)
    return best[1]


def placement_for(s, strategy):
    if strategy == 'static':
        return static_placement(s)
    if strategy == 'pinning-paper':
        return policy_placement(s, affinity.AffinityParams(
            cpu_allocation_ratio=1.0, exact_limit=0, max_rounds=0))
    if strategy == 'pinning-ours':
        return policy_placement(s, affinity.AffinityParams(
            cpu_allocation_ratio=1.0))
    if strategy == 'oracle':
        return best_placement(s)
    raise ValueError('unknown strategy %r' % strategy)


def cost(counts):
    """Time of the reads in LLC-hit units."""
    return sum(h + m * DRAM_COST for h, m in counts.values())
