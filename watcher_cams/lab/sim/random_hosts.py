"""Random hosts: the allocator on cases nobody wrote by hand.

The built-in allocator points were each written to show one kind of
trouble, and a policy can come to fit them. Each seed here draws a host of
two to five guests of the same size from the kinds those points mix
(hot/cold readers of several ranges and shares, uniform readers, scans
that fit and scans that do not, idle guests, a phase change in some), so
the same checks run on hosts no one tuned for. A seed always draws the
same host, so a figure can be reproduced and a miss traced.

A policy can come to fit one family too. The wide hosts
(:func:`wide_spec`) are drawn otherwise: two to eight guests of mixed
sizes, readers as slow as 0.5 MiB/s and as fast as 12, hot sets from
60% to 97% of the reads, workloads that go idle and come back in turn,
and audits every 30 to 120 s.
"""

import collections
import random

from watcher_cams.lab.sim import memory_scenarios as ms

SEEDS = tuple(range(1, 21))


class Draws(collections.namedtuple('Draws', (
        'rates_mb_s', 'scan_shares', 'uniform_ranges_mb',
        'hot_cold_ranges_mb', 'hot_shares'))):
    """What a family draws a guest's workload from (:func:`_workload`).

    A scan's range is a share of the guest's boot size: some fit in it,
    some in more memory, some never.
    """


# What a guest may run, drawn with these weights (idle the least).
KINDS = ('hot_cold',) * 2 + ('uniform',) * 2 + ('scan',) * 2 + ('idle',)
DRAWS = Draws(rates_mb_s=(1.0, 2.0, 4.0, 6.0, 8.0),
              scan_shares=(0.5, 0.9, 1.3, 1.8, 3.0, 10.0),
              uniform_ranges_mb=(1024, 2048, 4096, 8192, 32768, 65536),
              hot_cold_ranges_mb=(1024, 2048, 4096, 8192, 16384),
              hot_shares=(0.7, 0.8, 0.9, 0.95))
PHASE_CHANGE_SHARE = 0.3
PHASE_S = (1800, 2400, 3600)

# The wide hosts (wide_spec).
WIDE_DRAWS = Draws(rates_mb_s=(0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0),
                   scan_shares=(0.4, 0.8, 1.2, 1.6, 2.2, 4.0, 12.0),
                   uniform_ranges_mb=(768, 1536, 3072, 6144, 12288, 49152),
                   hot_cold_ranges_mb=(1536, 3072, 6144, 12288),
                   hot_shares=(0.6, 0.75, 0.85, 0.9, 0.97))
WIDE_COUNTS = (2, 3, 4, 6, 8)
WIDE_SIZES_MB = (1024, 1536, 2048, 3072)
WIDE_USED_MB = (256, 384, 512, 768)
WIDE_CYCLES_S = (30, 60, 60, 120)
# A quarter of the wide hosts' guests work and rest in turn (busy first
# or idle first), a quarter change workload once.
ON_OFF_SHARE = 0.25
WIDE_CHANGE_SHARE = 0.25
ON_S = (600, 1200, 1800)
OFF_S = (600, 1200, 2400)
WIDE_PHASE_S = (1200, 2400, 3600)


def scale(seeds):
    """The scale line of a run over ``seeds``."""
    return ms.ALLOCATOR_SCALE + '; one host per seed, %d seeds' % len(seeds)


def wide_scale(seeds):
    """The scale line of a run of wide hosts over ``seeds``."""
    return ('1 MiB blocks, audit every 30 to 120 s, shadow entries for 4 '
            'cache sizes; 2 h, measured after 20 min; 2 to 8 guests of '
            'mixed sizes per host, one host per seed, %d seeds'
            % len(seeds))


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


def _workload(rng, size_mb, draws=DRAWS):
    kind = rng.choice(KINDS)
    if kind == 'idle':
        return {'pattern': 'idle'}
    rate = rng.choice(draws.rates_mb_s)
    if kind == 'scan':
        range_mb = max(256, int(size_mb * rng.choice(draws.scan_shares)))
        return ms.reader('scan', range_mb, rate)
    if kind == 'uniform':
        return ms.reader('uniform', rng.choice(draws.uniform_ranges_mb),
                         rate)
    return ms.reader('hot_cold', rng.choice(draws.hot_cold_ranges_mb), rate,
                     hot_share=rng.choice(draws.hot_shares))


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
    return _seeded(ms.allocator_host('random-%d' % seed, size_mb * count,
                                     guests), seed)


def wide_spec(seed):
    """The wide host seed ``seed`` draws, as a scenario spec.

    Not validated. Drawn from a generator of its own: seed N of the wide
    hosts is no kin of random host N.
    """
    rng = random.Random('wide-%d' % seed)
    guests = [_wide_guest(rng, 'g%d' % i)
              for i in range(rng.choice(WIDE_COUNTS))]
    out = ms.allocator_host('wide-%d' % seed,
                            sum(g['size_mb'] for g in guests), guests)
    out['cycle_s'] = rng.choice(WIDE_CYCLES_S)
    return _seeded(out, seed)


def _wide_guest(rng, name):
    """A wide host's guest: it works throughout, in turns, or changes."""
    size_mb = rng.choice(WIDE_SIZES_MB)
    work = _workload(rng, size_mb, WIDE_DRAWS)
    draw = rng.random()
    if draw < ON_OFF_SHARE:
        phases = [dict(work, duration_s=rng.choice(ON_S)),
                  {'pattern': 'idle', 'duration_s': rng.choice(OFF_S)}]
        if rng.random() < 0.5:
            phases.reverse()
    elif draw < ON_OFF_SHARE + WIDE_CHANGE_SHARE:
        phases = [dict(work, duration_s=rng.choice(WIDE_PHASE_S)),
                  _workload(rng, size_mb, WIDE_DRAWS)]
    else:
        phases = [work]
    return ms.vm(name, size_mb, 2 * size_mb + 512, *phases,
                 used_mb=rng.choice(WIDE_USED_MB))


def _seeded(host, seed):
    """``host`` with each guest's access sequence drawn from ``seed``."""
    for i, guest in enumerate(host['guests']):
        guest['seed'] = seed * 100 + i + 1
    return host


def describe(host):
    """One line per guest: its name and what it runs, phase by phase."""
    return ['%s: %s' % (g['name'], ', then '.join(
        '%s %s MiB' % (p['pattern'], p.get('range_mb', '-'))
        for p in g['phases'])) for g in host['guests']]
