"""Built-in memory scenarios: the CAMS grid, the Balloon Controller, KSM.

Each point is a plain scenario spec (:mod:`~watcher_cams.lab.sim.spec`), so
a built-in runs exactly like a user's scenario file. ``paper`` gives what
the paper reports for a point and strategy (None where it reports nothing).
"""

KB = 1024
GB = 1024

# CAMS (papers.md section 1): VM1 hot/cold over 1-80 GB of 256 KiB files,
# one access every 10-80 ms; VM2 uniform over 1 TB, one access every 10 ms.
CAMS_FILE_KB = 256
CAMS_VM2_MB_S = CAMS_FILE_KB / KB / 0.010
CAMS_RATIOS = (1, 2, 4, 6, 8)
CAMS_RANGES_GB = (1, 10, 20, 40, 60, 80)
CAMS_DEFAULT_POINTS = ((1, 80), (8, 10), (8, 80))
CAMS_PAPER = {
    # (ratio, range GB): VM1 IO reduction improvement CAMS / SMS, and
    # VM1 reductions where the text gives them.
    (1, 80): {'improvement': 1.0},
    (8, 10): {'improvement': 2.9, 'vm1_io_reduction': {'cams-paper': 0.9,
                                                       'sms': 0.3}},
    (8, 80): {'improvement': 5.8, 'vm1_io_reduction': {'cams-paper': 0.44,
                                                       'sms': 0.08}},
}


def cams_spec(ratio, range_gb, duration_s=7200, warmup_s=2400):
    """The CAMS evaluation host at one grid point."""
    committed = 384
    sizes = {'max_mb': 7168, 'size_mb': 3840}
    return {
        'name': 'cams-r%d-%dg' % (ratio, range_gb),
        'block_kb': 2048, 'cycle_s': 30, 'rate_window_s': 300,
        'duration_s': duration_s, 'warmup_s': warmup_s,
        'host': {'ram_mb': 8192, 'reserved_mb': 512},
        'guests': [
            dict(sizes, name='vm1', phases=[{
                'pattern': 'hot_cold', 'range_mb': range_gb * GB,
                'rate_mb_s': CAMS_VM2_MB_S / ratio,
                'committed_mb': committed}]),
            dict(sizes, name='vm2', phases=[{
                'pattern': 'uniform', 'range_mb': 1024 * GB,
                'rate_mb_s': CAMS_VM2_MB_S, 'committed_mb': committed}]),
        ],
    }


CAMS_SCALE = ('1 block = 2 MiB (8 of the paper\'s 256 KiB files); host '
              'memory, ranges and access rates as in the paper; 2 h per run, '
              'the first 40 min not measured; audit cycle 30 s, rates over '
              '5 min (the agent\'s min_rate_interval = 300)')


def cams_paper(point, strategy):
    figures = CAMS_PAPER.get((point['ratio'], point['range_gb']))
    if not figures:
        return None
    out = {}
    if strategy == 'cams-paper':
        out['vm1_improvement_over_sms'] = figures['improvement']
    value = figures.get('vm1_io_reduction', {}).get(strategy)
    if value is not None:
        out['vm1_io_reduction'] = value
    return out or None


# Balloon Controller (section 4): host 4 GB, two VMs of at most 3072 MB
# (static 1536 MB), 1 MB files uniformly from a working set of n files that
# alternates every 10 min (A: n, 0, n; B: 0, n, 0), 30 min.
MARGIN_FILES = (500, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000)
MARGIN_DEFAULT_FILES = (1000, 2000, 5000)
MARGIN_SCALE = ('1 block = 4 MiB (4 of the paper\'s 1 MiB files); memory '
                'and phase lengths as in the paper; reads at 40 MiB/s while '
                'a working set is active; audit cycle 5 s (the paper sets '
                'the balloon every 1 s and the margin every 5 s)')


def margin_spec(files, rate_mb_s=40.0):
    phase = 600
    # Committed_AS above the memory really used, as on any Linux guest.
    mem = {'committed_mb': 512, 'used_mb': 256}
    busy = dict(mem, pattern='uniform', range_mb=files, rate_mb_s=rate_mb_s,
                duration_s=phase)
    idle = dict(mem, pattern='idle', duration_s=phase)
    sizes = {'max_mb': 3072, 'size_mb': 1536}
    return {
        'name': 'margin-%d' % files, 'block_kb': 4096, 'cycle_s': 5,
        'duration_s': 3 * phase, 'warmup_s': 0,
        'host': {'ram_mb': 4096, 'reserved_mb': 512, 'disk_mb_s': 100},
        'guests': [
            dict(sizes, name='vm-a', phases=[busy, idle], seed=1),
            dict(sizes, name='vm-b',
                 phases=[idle, dict(busy, offset_mb=20000), idle], seed=2),
        ],
    }


def margin_paper(point, strategy):
    n = point['files']
    if strategy != 'margin-paper':
        return None
    if n < 1500:
        return {'read_speed_vs_static': 0.86}
    if n <= 3000:
        return {'read_speed_vs_static_up_to': 9.5}
    if n >= 6000:
        return {'read_speed_vs_static': 1.0}
    return None


# KSM + ballooning (section 5): three guests of 2 GB base and 2.25 GB max;
# identical content is merged and the savings handed back.
KSM_SCALE = ('one host of the paper\'s two, 3 guests (base 2048 MiB, max '
             '2304 MiB) with 700 MiB identical content each; a Cassandra-'
             'like read workload as a hot/cold reader over each guest\'s '
             'share of the data; 1 block = 2 MiB; 1 h, first 20 min not '
             'measured; audit cycle 30 s')


def ksm_spec(tenancy):
    sizes = {'max_mb': 2304, 'size_mb': 2048, 'base_mb': 2048,
             'shared_mb': 700}
    if tenancy == 'single':
        loads = [('hot_cold', 5800, 20.0)] * 3
    else:
        loads = [('hot_cold', 3000, 20.0), ('uniform', 400 * GB, 20.0),
                 ('idle', 0, 0.0)]
    guests = [dict(sizes, name='vm%d' % (i + 1), phases=[{
        'pattern': p, 'range_mb': r, 'rate_mb_s': rate,
        'committed_mb': 1200}]) for i, (p, r, rate) in enumerate(loads)]
    return {
        'name': 'ksm-%s' % tenancy, 'block_kb': 2048, 'cycle_s': 30,
        'duration_s': 3600, 'warmup_s': 1200,
        'host': {'ram_mb': 6656, 'reserved_mb': 512},
        'ksm': {'ramp_s': 300}, 'guests': guests,
    }


def ksm_paper(point, strategy):
    if strategy == 'ksm-paper':
        return {'throughput_gain_of_ksm_alone':
                0.15 if point['tenancy'] == 'single' else 0.22}
    return None


# The real-guest lab (``watcher-cams-lab guests``) in the simulator: the same
# sizes, data file, block size, pace and audit cycle, so that the simulator
# can be held against real guests. Points: the hot/cold reader's share of
# reads on the hot fifth of the data.
REAL_LAB_HOT_PROBS = (0.8, 0.9)
REAL_LAB_SCALE = ('as the real-guest lab: 64 KiB blocks, one 3 GiB data '
                  'file per guest, two guests of 640 MiB (flavor 1280 MiB) '
                  'using about 170 MiB each, 100 reads/s, audit every 30 s, '
                  '600 s measured from 360 s; shadow entries for 8 cache '
                  'sizes, as a real guest kernel keeps them')


def real_lab_spec(hot_prob, data_mb=3072, reads_per_s=100, block_kb=64,
                  cloud=False):
    """The real-guest lab; ``cloud``: as ``watcher-cams-lab cloud`` runs it.

    Through Watcher the node's agent also collects on its own timer
    (collect_interval 30 s, not aligned with the audits) and its rates are
    over at least min_rate_interval = 10 s, so a rate window can start
    shortly after a plan's resize.
    """
    rate = reads_per_s * block_kb / KB
    mem = {'committed_mb': 170, 'used_mb': 170}
    sizes = {'max_mb': 1280, 'size_mb': 640}
    return {
        'name': 'real-lab-%d%s' % (round(hot_prob * 100),
                                   '-cloud' if cloud else ''),
        'block_kb': block_kb, 'cycle_s': 30,
        'rate_window_s': 10 if cloud else 30,
        'collect_at_s': 12 if cloud else 0, 'duration_s': 600,
        'warmup_s': 360,
        # A real guest kernel keeps shadow entries for several cache sizes
        # of evictions (mm/workingset.c lets shadow nodes reach an eighth
        # of the LRU pages, 64 entries each): a uniform reader refaults
        # on almost every miss.
        'host': {'ram_mb': 1280 + 512, 'reserved_mb': 512,
                 'shadow_factor': 8},
        'guests': [
            dict(sizes, name='hotcold', phases=[dict(
                mem, pattern='hot_cold', range_mb=data_mb, rate_mb_s=rate,
                hot_fraction=0.2, hot_share=hot_prob)]),
            dict(sizes, name='random', phases=[dict(
                mem, pattern='uniform', range_mb=data_mb, rate_mb_s=rate)]),
        ],
    }


# The allocator on kinds of host nobody tuned it for (issue 23): guests
# whose needs change, a hot set larger than the active list, and a dozen
# guests of every kind. Real kernels' shadow entries (several cache sizes).
ALLOCATOR_SCALE = ('1 MiB blocks, audit every 60 s, shadow entries for 4 '
                   'cache sizes; 2 h, measured after 20 min')
ALLOCATOR_POINTS = ('phase-change', 'big-hot-set', 'mixed-12', 'shifting-4',
                    'two-hot-sets', 'long-scan', 'bursty')


def allocator_host(name, ram_mb, guests):
    return {'name': name, 'block_kb': 1024, 'cycle_s': 60,
            'duration_s': 7200, 'warmup_s': 1200,
            'host': {'ram_mb': ram_mb + 512, 'reserved_mb': 512,
                     'shadow_factor': 4},
            'guests': guests}


def vm(name, size_mb, max_mb, *phases, used_mb=256):
    return {'name': name, 'size_mb': size_mb, 'max_mb': max_mb,
            'phases': [dict(p, committed_mb=used_mb, used_mb=used_mb)
                       for p in phases]}


def reader(pattern, range_mb, rate_mb_s, duration_s=None, **kw):
    phase = dict(kw, pattern=pattern, range_mb=range_mb, rate_mb_s=rate_mb_s)
    if duration_s is not None:
        phase['duration_s'] = duration_s
    return phase


def _phase_change():
    # Three guests share 4 GiB; after an hour the hot/cold reader and the
    # uniform one swap workloads; a scan that fits runs throughout.
    hour = 3600
    hot = reader('hot_cold', 4096, 6.0, hour, hot_share=0.9)
    far = reader('uniform', 65536, 6.0, hour)
    return allocator_host('phase-change', 4096, [
        vm('a', 1365, 3072, hot, far),
        vm('b', 1365, 3072, far, hot),
        vm('scan', 1366, 3072, reader('scan', 900, 4.0))])


def _big_hot_set():
    # The hot fifth (1,638 MiB) is more than the active list of any cache
    # this guest can have at its static size.
    return allocator_host('big-hot-set', 4096, [
        vm('hotcold', 2048, 3584,
            reader('hot_cold', 8192, 8.0, hot_share=0.9)),
        vm('uniform', 2048, 3584, reader('uniform', 65536, 8.0))])


def _mixed_12():
    return allocator_host('mixed-12', 16384, [
        vm('hotcold-a', 1365, 4096,
            reader('hot_cold', 8192, 6.0, hot_share=0.9)),
        vm('hotcold-b', 1365, 4096,
            reader('hot_cold', 4096, 3.0, hot_share=0.8)),
        vm('hotcold-small', 1365, 4096,
            reader('hot_cold', 1024, 2.0, hot_share=0.9)),
        vm('scan-fits', 1365, 4096, reader('scan', 2700, 10.0)),
        vm('scan-too-big', 1365, 4096, reader('scan', 20480, 10.0)),
        vm('uniform-2g', 1365, 4096, reader('uniform', 2048, 3.0)),
        vm('uniform-8g', 1365, 4096, reader('uniform', 8192, 3.0)),
        vm('uniform-64g', 1365, 4096, reader('uniform', 65536, 6.0)),
        vm('uniform-4g', 1365, 4096, reader('uniform', 4096, 1.0)),
        vm('idle-a', 1365, 4096, {'pattern': 'idle'}, used_mb=512),
        vm('idle-b', 1365, 4096, {'pattern': 'idle'}, used_mb=768),
        vm('idle-c', 1369, 4096, {'pattern': 'idle'}, used_mb=384)])


def _shifting_4():
    # A web guest that goes idle for 40 minutes and comes back, beside a
    # database that fits in 2.4 GiB, a batch scan a little larger than its
    # cache and a log reader over 100 GB.
    web = dict(hot_share=0.85)
    return allocator_host('shifting-4', 6144, [
        vm('web', 1536, 4096, reader('hot_cold', 6144, 5.0, 2400, **web),
            dict(pattern='idle', duration_s=2400),
            reader('hot_cold', 6144, 5.0, **web), used_mb=384),
        vm('db', 1536, 4096, reader('uniform', 2400, 4.0), used_mb=512),
        vm('batch', 1536, 4096, reader('scan', 1800, 6.0)),
        vm('logs', 1536, 4096, reader('uniform', 100000, 8.0))])


def _two_hot_sets():
    # Two hot/cold readers: one whose hot set is small and hot, one whose
    # hot set is larger than its static cache.
    return allocator_host('two-hot-sets', 4096, [
        vm('small-hot', 2048, 3584,
            reader('hot_cold', 4096, 6.0, hot_share=0.95), used_mb=300),
        vm('large-hot', 2048, 3584,
            reader('hot_cold', 12000, 6.0, hot_share=0.7), used_mb=300)])


def _long_scan():
    # A scan that fits only in twice its cache, beyond one probe's step,
    # beside a reader over far more data and a hot/cold reader.
    return allocator_host('long-scan', 4608, [
        vm('scan', 1536, 4096, reader('scan', 3000, 6.0)),
        vm('far', 1536, 4096, reader('uniform', 65536, 6.0)),
        vm('hot', 1536, 4096,
            reader('hot_cold', 2048, 4.0, hot_share=0.9))])


def _bursty():
    # Two web guests, each busy for 20 minutes then idle for 20, in turn,
    # whose data fits their static caches, beside a batch reader over far
    # more than its cache: a rest's cache is worth keeping for its return
    # (rest_hold), the batch's reads save little with it.
    twenty = 1200
    web = reader('uniform', 1536, 8.0, twenty)
    idle = dict(pattern='idle', duration_s=twenty)
    return allocator_host('bursty', 8192, [
        vm('web-a', 2730, 4608, web, idle),
        vm('web-b', 2730, 4608, idle, web),
        vm('batch', 2732, 4608, reader('uniform', 16384, 4.0))])


ALLOCATOR_BUILDERS = {
    'phase-change': _phase_change, 'big-hot-set': _big_hot_set,
    'mixed-12': _mixed_12, 'shifting-4': _shifting_4,
    'two-hot-sets': _two_hot_sets, 'long-scan': _long_scan,
    'bursty': _bursty}


def allocator_spec(point):
    """One point of the allocator scenarios (ALLOCATOR_POINTS)."""
    try:
        return ALLOCATOR_BUILDERS[point]()
    except KeyError:
        raise ValueError('unknown allocator point %r' % (point,)) from None


# Guests without a guest agent (issue 23 point 4): each point twice, every
# guest with its agent and every guest without; the default mode keeps
# what share of its gain over static. The real-guest lab's two hot shares
# and every allocator host.
AGENTLESS_POINTS = ('real-lab-80', 'real-lab-90') + ALLOCATOR_POINTS
AGENTLESS_SCALE = ('the real-lab and allocator points as built in, each '
                   'with every guest agent, then without any')


def agentless_spec(point, agent):
    """AGENTLESS_POINTS ``point``, its guests with or without an agent."""
    if point.startswith('real-lab-'):
        spec = real_lab_spec(int(point[len('real-lab-'):]) / 100)
    else:
        spec = allocator_spec(point)
    spec['name'] += '' if agent else '-agentless'
    spec['guests'] = [dict(g, agent=agent) for g in spec['guests']]
    return spec
