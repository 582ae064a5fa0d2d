"""Random hosts: the allocator on cases nobody wrote by hand.

The built-in allocator points were each written to show one kind of
trouble, and a policy can come to fit them. Each seed here draws a host of
two to five guests of the same size from the kinds those points mix
(hot/cold readers of several ranges and shares, uniform readers, scans
that fit and scans that do not, idle guests, a phase change in some), so
the same checks run on hosts no one tuned for. A seed always draws the
same host, so a figure can be reproduced and a miss traced.
"""

import random

from watcher_cams.lab.sim import memory_scenarios as ms

SEEDS = tuple(range(1, 21))
# What a guest may run, drawn with these weights (idle the least).
KINDS = ('hot_cold',) * 2 + ('uniform',) * 2 + ('scan',) * 2 + ('idle',)
RATES_MB_S = (1.0, 2.0, 4.0, 6.0, 8.0)
# A scan's range as a share of the guest's boot size: some fit in it, some
# in more memory, some never.
SCAN_SHARES = (0.5, 0.9, 1.3, 1.8, 3.0, 10.0)
UNIFORM_RANGES_MB = (1024, 2048, 4096, 8192, 32768, 65536)
HOT_COLD_RANGES_MB = (1024, 2048, 4096, 8192, 16384)
HOT_SHARES = (0.7, 0.8, 0.9, 0.95)
PHASE_CHANGE_SHARE = 0.3
PHASE_S = (1800, 2400, 3600)


def scale(seeds):
    """The scale line of a run over ``seeds``."""
    return ms.ALLOCATOR_SCALE + '; one host per seed, %d seeds' % len(seeds)


def parse_seeds(text):
    """Seeds from ``'61-160'``, ``'3,7,12'`` or both mixed, in order.

    Raises ValueError on anything else (an empty range too).
    """
    seeds = []
    for part in text.split(','):
        first, sep, last = part.strip().partition('-')
        low, high = int(first), int(last) if sep else int(first)
        if low < 0 or high < low:
            raise ValueError('bad seed range %r' % part)
        seeds.extend(range(low, high + 1))
    return tuple(dict.fromkeys(seeds))


def _workload(rng, size_mb):
    kind = rng.choice(KINDS)
    if kind == 'idle':
        return {'pattern': 'idle'}
    rate = rng.choice(RATES_MB_S)
    if kind == 'scan':
        range_mb = max(256, int(size_mb * rng.choice(SCAN_SHARES)))
        return ms.reader('scan', range_mb, rate)
    if kind == 'uniform':
        return ms.reader('uniform', rng.choice(UNIFORM_RANGES_MB), rate)
    return ms.reader('hot_cold', rng.choice(HOT_COLD_RANGES_MB), rate,
                     hot_share=rng.choice(HOT_SHARES))


def spec(seed):
    """The host seed ``seed`` draws, as a scenario spec (not validated)."""
    rng = random.Random(seed)
    count = rng.choice((2, 3, 3, 4, 5))
    size_mb = rng.choice((1024, 1536, 2048))
    guests = []
    for i in range(count):
        phases = [_workload(rng, size_mb)]
        if rng.random() < PHASE_CHANGE_SHARE:
            phases = [dict(phases[0], duration_s=rng.choice(PHASE_S)),
                      _workload(rng, size_mb)]
        guests.append(ms.vm('g%d' % i, size_mb, 2 * size_mb + 512, *phases,
                            used_mb=rng.choice((256, 256, 384, 512))))
    out = ms.allocator_host('random-%d' % seed, size_mb * count, guests)
    for i, guest in enumerate(out['guests']):
        guest['seed'] = seed * 100 + i + 1
    return out


def describe(host):
    """One line per guest: its name and what it runs, phase by phase."""
    return ['%s: %s' % (g['name'], ', then '.join(
        '%s %s MiB' % (p['pattern'], p.get('range_mb', '-'))
        for p in g['phases'])) for g in host['guests']]
