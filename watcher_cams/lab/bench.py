"""How long planning takes at cloud scale, without RPC.

Builds agent reports for ``nodes`` hosts of ``instances`` guests each (mixed
workloads, KSM savings, two LLCs, pairwise sharing), builds Watcher's
compute model from them, and times each strategy's ``execute()``: the
report parsing, the Watcher glue and the policy. Building the compute model
is Nova's collector's work in a real decision engine and is timed apart.
"""

import random
import statistics
import time

from watcher_cams.lab import example
from watcher_cams.lab import runner
from watcher_cams.policy import first_reuse
from watcher_cams.policy import mrc
from watcher_cams.policy import report as report_format

TARGET_S = 2.0
# Every this many guests of bench-plan's hosts, one is a scan that fits
# (fitted_scan_state). The hosts the cloud benchmarks serve have none:
# what their tests expect of the plans stays as it was.
FITTED_EVERY = 4
RUNS = (
    ('cache_aware_balloon', {'mode': 'paper'}),
    ('cache_aware_balloon', {'mode': 'utility'}),
    ('margin_balloon', {}),
    ('ksm_balloon', {'mode': 'paper'}),
    ('ksm_balloon', {'mode': 'utility'}),
    ('sharing_aware_pinning', {}),
)


def host_facts(index, j, actual_mb, read_mb_s):
    """What the agent measures on the host of a guest, as it reports it.

    For operators (balloon statistics, disks, QEMU's process) and for the
    policies (``host_io``: QEMU's reads, the same as the guest's own), so
    that a synthetic report is as large as an agent's.
    """
    kib = actual_mb * 1024
    read_bytes = int(read_mb_s * 2 ** 20 * 3600)
    return {
        'domain_name': 'instance-%08x' % (index * 1000 + j),
        'qemu_pid': 100000 + j, 'emulator_cpus': list(range(8)),
        'ksm_merging_pages': 1000 * j,
        'balloon': {'actual': kib, 'swap_in': 0, 'swap_out': 0,
                    'major_fault': 1200, 'minor_fault': 3400000,
                    'unused': kib // 4, 'available': kib - 4096,
                    'usable': kib // 3, 'last_update': 1059,
                    'disk_caches': kib // 2, 'hugetlb_pgalloc': 0,
                    'hugetlb_pgfail': 0, 'rss': kib + 40960},
        'disks': [{'dev': 'vda', 'cache': 'none',
                   'rd_req': read_bytes // 65536, 'rd_bytes': read_bytes,
                   'wr_req': 5000, 'wr_bytes': 2 ** 28}],
        'host_io': {'window_s': 60.0, 'start_mb': actual_mb,
                    'end_mb': actual_mb, 'read_mb_s': round(read_mb_s, 3),
                    'read_req_s': round(read_mb_s * 16, 3),
                    'disks': [{'dev': 'vda', 'read_mb_s': round(read_mb_s, 3),
                               'read_req_s': round(read_mb_s * 16, 3)}],
                    'balloon_s': {'major_fault': 0.2, 'swap_in': 0.0},
                    'cpu_s': 0.05}}


def fitted_scan_state(actual_mb, used_mb, missed_mb_s):
    """The utility policy state of a scan that fits (its cliff held).

    Its reach fills its cache but 64 MiB, and 512 MiB smaller it read
    ``missed_mb_s``: utility mode weighs trading its memory
    (policy.cliff_trade) on every host that has one.
    """
    reach = max(64, actual_mb - used_mb - 64)
    state = first_reuse.Reach(reuse_mb=reach, scanned_mb=reach).to_state()
    state['seen'] = [mrc.Seen(actual_mb - 512, 0.0, 64, 900.0,
                              round(missed_mb_s, 3), count=3).to_list()]
    return {mrc.STATE_KEY: state}


def _synthetic_guest(index, j, rng, uuid, fitted):
    """Guest ``j`` of host ``index``, drawn from ``rng``.

    ``fitted``: a scan that fits (:func:`fitted_scan_state`).
    """
    max_mb = rng.choice((2048, 4096, 8192))
    actual = rng.randrange(max_mb // 2, max_mb + 1, 64)
    used = rng.randrange(128, actual // 2, 32)
    active = rng.randrange(0, actual - used)
    read = rng.uniform(0, 20.0)
    refault = rng.uniform(0, read) * 256
    state = None
    if fitted:
        state = fitted_scan_state(actual, used, read)
        read, refault = 0.0, 0
    before = {'pgpgin': 10 ** 6, 'pgmajfault': 10,
              'workingset_refault_file': 10 ** 5,
              'workingset_activate_file': 10 ** 4}
    after = {'pgpgin': before['pgpgin'] + int(read * 1024 * 60),
             'pgmajfault': 20,
             'workingset_refault_file': before['workingset_refault_file']
             + int(refault * 60),
             'workingset_activate_file':
                 before['workingset_activate_file']
                 + int(refault * rng.random() * 60)}
    return report_format.guest_entry(
        uuid, 'vm-%d-%d' % (index, j), max_mb, actual,
        base_mb=max(256, actual - 256), vcpus=rng.choice((1, 2)),
        cpus=[list(range(8))], policy_state=state,
        sample=example.sample_dict(1060.0, actual, used, active, after),
        previous=example.sample_dict(1000.0, actual, used, active, before),
        **host_facts(index, j, actual, read))


def synthetic_report(index, instances, rng, host=None, uuids=None,
                     fitted_every=0):
    """Host ``index``'s report, named ``host``, its guests ``uuids``.

    ``fitted_every``: every this many guests, one is a scan that fits
    (:func:`fitted_scan_state`); 0, none.
    """
    host = host or 'cmp-%04d' % index
    guests = [_synthetic_guest(
        index, j, rng,
        uuids[j] if uuids else
        '%08x-%04x-4000-8000-%012x' % (index, j, index * 1000 + j),
        bool(fitted_every) and j % fitted_every == fitted_every - 1)
        for j in range(instances)]
    sharing = [{'a': guests[a]['uuid'], 'b': guests[b]['uuid'],
                'pages': rng.randrange(0, 200000)}
               for a in range(instances) for b in range(a + 1, instances)
               if rng.random() < 0.3]
    total = sum(g['actual_mb'] for g in guests)
    report = report_format.host_report(
        host, 1060.0, int(total * 1.05), 1024, guests,
        ksm=report_format.ksm_counters(pages_shared=1000,
                                       pages_sharing=2048 * 256),
        llc=({'name': 'L3-0', 'socket': 0, 'cpus': [0, 1, 2, 3]},
             {'name': 'L3-1', 'socket': 1, 'cpus': [4, 5, 6, 7]}),
        shared_cpus=range(8), sharing=sharing)
    # The agent's own figures for operators (accounting.HostAccount).
    report['accounting'] = {
        'ram_mb': int(total * 1.05), 'reserved_mb': 1024,
        'guests_actual_mb': total,
        'merged_pages': {g['uuid']: g['ksm_merging_pages'] for g in guests}}
    report['collection'] = {'guests': instances, 'total_ms': 180.0}
    return report


def host_report(seed, index, instances, host=None, uuids=None,
                fitted_every=0):
    """Host ``index``'s synthetic report, the same in any process.

    Its own random generator: bench-cloud's simulated agents each build
    the hosts they serve, the benchmark builds all of them for its model.
    ``host`` and ``uuids``: names a cloud gave the host and its guests;
    ``fitted_every``: as :func:`synthetic_report` takes it.
    """
    return synthetic_report(index, instances,
                            random.Random('%d/%d' % (seed, index)), host,
                            uuids, fitted_every)


def _timed_execute(name, params, model, reports):
    """Seconds one ``execute()`` of strategy ``name`` took, and its actions.

    Loading plugins happens once when a decision engine starts: the
    strategy is prepared outside the timing.
    """
    strategy = runner.prepare(name, model, runner.ReportAgent(reports),
                              params)
    t0 = time.perf_counter()
    solution = strategy.execute()
    return time.perf_counter() - t0, len(solution.actions)


def run(nodes=500, instances=20, seed=1, out=print, repeat=3):
    """Time each strategy ``repeat`` times; the slowest median, in s.

    The median, not one run: on a shared machine one run may read half as
    fast again as the next (lab.rst, stop 83), and the verdict should not
    hang on which one it was.
    """
    reports = [host_report(seed, i, instances, fitted_every=FITTED_EVERY)
               for i in range(nodes)]
    t0 = time.perf_counter()
    model = runner.compute_model(reports)
    model_s = time.perf_counter() - t0
    out('%d nodes x %d instances; Watcher compute model built in %.2f s '
        '(not counted); each strategy run %d times'
        % (nodes, instances, model_s, repeat))
    rows = []
    for name, params in RUNS:
        runs = [_timed_execute(name, params, model, reports)
                for _ in range(repeat)]
        rows.append((name, ' '.join('%s=%s' % kv for kv in params.items()),
                     sorted(r[0] for r in runs), runs[-1][1]))
    return _print_rows(rows, out)


def _print_rows(rows, out):
    """Print the table of ``rows``; return the slowest median (s)."""
    width = max(len(r[0]) + len(r[1]) for r in rows) + 2
    out('%-*s %8s %8s %8s  %s' % (width, 'strategy', 'median_s', 'min_s',
                                  'actions', 'target'))
    worst = 0.0
    for name, params, times, actions in rows:
        median = statistics.median(times)
        worst = max(worst, median)
        out('%-*s %8.2f %8.2f %8d  %s' % (
            width, (name + ' ' + params).strip(), median, times[0], actions,
            'ok' if median <= TARGET_S else 'OVER %.1f s' % TARGET_S))
    out('slowest strategy: %.2f s median (target <= %.1f s)'
        % (worst, TARGET_S))
    return worst
