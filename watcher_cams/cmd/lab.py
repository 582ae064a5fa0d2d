"""watcher-cams-lab: run the strategies where people can see what they do.

``simulate`` (the default) runs scenarios in the simulator
(:mod:`watcher_cams.lab.sim`) and writes tables, results.json and plots.
``guests`` runs the lab on real guests (:mod:`watcher_cams.lab.real_guests`),
``cloud`` the same experiment through Nova and Watcher audits
(:mod:`watcher_cams.lab.cloud`). ``double-caching`` runs the LFU Cache FS
experiment on a real guest (:mod:`watcher_cams.lab.double_caching`).
``example`` runs every strategy once, through Watcher's own strategy loader
and compute model, on the built-in example of the CAMS paper and prints the
plans; then it runs audit cycles of ``cache_aware_balloon`` in both modes on
the example's feedback model and prints memory and disk reads per cycle.
"""

import argparse
import functools
import importlib
import os
import sys
import time
import warnings

from watcher_cams.lab import tables


STRATEGY_RUNS = (
    ('cache_aware_balloon', {'mode': 'paper'}),
    ('cache_aware_balloon', {'mode': 'utility'}),
    ('margin_balloon', {}),
    ('ksm_balloon', {'mode': 'paper'}),
    ('sharing_aware_pinning', {}),
)


def _example_plans(out):
    from watcher_cams.lab import example
    from watcher_cams.lab import runner

    ex = example.PaperExample()
    rep = ex.report()
    names = {g['uuid']: g['name'] for g in rep['guests']}
    out.write('Built-in example: host %s, %d MiB; %s\n\n' % (
        ex.host, ex.host_mb, ', '.join(
            '%s %d MiB (max %d)' % (g.name, g.actual_mb, g.max_mb)
            for g in ex.guests)))
    for name, params in STRATEGY_RUNS:
        strategy, solution = runner.run(
            name, runner.compute_model([rep]), runner.ReportAgent([rep]),
            params)
        title = '%s %s' % (name, ' '.join('%s=%s' % kv
                                          for kv in params.items()))
        out.write('== %s (goal %s)\n' % (title.strip(), strategy.goal.name))
        rows = []
        for action in solution.actions:
            for c in runner.guest_changes(action):
                change = ('%d -> %d MiB' % (c['current_mb'], c['target_mb'])
                          if c.get('target_mb') else 'cpus %s' % c['cpus'])
                rows.append((action['action_type'],
                             names.get(c['instance'], c['instance']),
                             change, c['reason']))
        headers = ('action', 'instance', 'change', 'reason')
        out.write((tables.table(headers, rows)
                   if rows else '(no actions)') + '\n')
        ind = ', '.join('%s=%s' % (i['name'], i['value'])
                        for i in solution.efficacy_indicators)
        out.write('indicators: %s\n\n' % ind)


def _example_cycles(out, cycles):
    from watcher_cams.lab import example
    from watcher_cams.lab import runner

    rows = []
    for mode in ('paper', 'utility'):
        ex = example.PaperExample()
        for cycle in range(cycles + 1):
            sizes, reads = ex.sizes(), ex.disk_read_mb_s()
            rows.append((mode, cycle, sizes[ex.VM1], sizes[ex.VM2],
                         '%.3f' % reads[ex.VM1], '%.3f' % reads[ex.VM2]))
            rep = ex.report()
            _, solution = runner.run(
                'cache_aware_balloon', runner.compute_model([rep]),
                runner.ReportAgent([rep]), {'mode': mode})
            ex.apply({c['instance']: c['target_mb']
                      for a in solution.actions
                      for c in runner.guest_changes(a)})
    out.write('== cache_aware_balloon over audit cycles (feedback model)\n')
    out.write(tables.table(('mode', 'cycle', 'vm1 MiB', 'vm2 MiB',
                            'vm1 disk MiB/s', 'vm2 disk MiB/s'), rows)
              + '\n')


def _simulate(parser, args):
    from watcher_cams.lab.sim import run
    from watcher_cams.lab.sim import scenarios
    from watcher_cams.lab.sim import spec
    try:
        if args.scenario_file:
            chosen, label = [scenarios.from_file(args.scenario_file)], \
                'file'
        else:
            chosen, label = scenarios.named(
                args.scenario, args.seeds, args.strategies), args.scenario
    except spec.ScenarioError as exc:
        parser.error(str(exc))
    _, checks = run.simulate(chosen, args.out, lambda line: print(
        line, flush=True), label, jobs=args.jobs)
    return _verdict(args, checks)


def _compare(parser, args):
    from watcher_cams.lab.sim import compare
    try:
        base, new = compare.load(args.base), compare.load(args.new)
        summaries = compare.compare(base, new, args.strategy, args.threshold)
        excess = args.by_workload and compare.by_workload(
            base, new, args.strategy, args.by_workload)
    except compare.CompareError as exc:
        parser.error(str(exc))
    for line in compare.lines(summaries, args.top):
        print(line)
    if excess:
        print()
        for line in compare.workload_lines(excess, args.by_workload):
            print(line)
    if args.plot:
        from watcher_cams.lab.sim import plots
        print('wrote %s' % plots.compare_changes(summaries, args.plot))
    return 0


def _verdict(args, checks):
    """Print the run's one-line summary and return the exit status.

    The tables above it can be long (paper-grid prints dozens): the last
    line says what ran, whether its targets held and where the files are.
    """
    passed = sum(1 for _, ok, _ in checks if ok)
    print('watcher-cams-lab %s: %d of %d targets passed in %.0f s; '
          'results.json and PNG plots in %s/' % (
              args.command, passed, len(checks),
              time.monotonic() - args.started, args.out.rstrip('/')),
          flush=True)
    return 0 if passed == len(checks) else 1


def _experiment(args):
    """The real-guest Experiment the ``guests``/``cloud`` arguments ask."""
    import dataclasses

    from watcher_cams.lab import real_guests
    default = real_guests.Experiment()
    sizes = {k: v for k, v in (('boot_mb', args.boot_mb),
                               ('max_mb', args.max_mb)) if v is not None}
    given = {k: v for k, v in (
        ('data_mb', args.data_mb), ('reads_per_s', args.reads_per_s),
        ('hot_prob', args.hot_prob),
        ('duration_s', args.duration), ('cycle_s', args.cycle),
        ('measure_from_s', args.measure_from),
        ('domain_type', getattr(args, 'domain_type', None)))
        if v is not None}
    if args.strategies:
        given['strategies'] = tuple(s.strip()
                                    for s in args.strategies.split(','))
    return dataclasses.replace(default, guests=tuple(
        dataclasses.replace(g, **sizes) for g in default.guests), **given)


def _guests(parser, args):
    _quiet_import('lab.local_lab')
    from watcher_cams.lab import core
    from watcher_cams.lab import local_lab
    from watcher_cams.lab import real_guests
    out = functools.partial(print, flush=True)
    try:
        exp = _experiment(args)
        lab = local_lab.LocalLab(exp, args.image_dir, out=out)
        _, checks = real_guests.run(exp, lab, args.out, out)
    except core.LabError as exc:
        parser.error(str(exc))
    return _verdict(args, checks)


def _cloud(parser, args):
    _quiet_import('lab.cloud')
    from watcher_cams.lab import cloud
    from watcher_cams.lab import cloud_api
    from watcher_cams.lab import core
    from watcher_cams.lab import real_guests
    if not args.host or not args.libvirt_uri:
        parser.error('--host and --libvirt-uri (or CAMS_LAB_HOST and '
                     'CAMS_LAB_LIBVIRT_URI) are needed')
    out = functools.partial(print, flush=True)
    try:
        exp = _experiment(args)
        api = cloud_api.Cloud(cloud_api.session_from_env(),
                              region=os.environ.get('OS_REGION_NAME'))
        lab = cloud.CloudLab(exp, api, args.host, args.libvirt_uri,
                             image=args.image, out=out)
        _, checks = real_guests.run(
            exp, lab, args.out, out, scenario='cloud',
            where='Nova (%s)' % args.host)
    except (core.LabError, cloud_api.CloudError) as exc:
        parser.error(str(exc))
    return _verdict(args, checks)


def _double_caching(parser, args):
    import dataclasses

    _quiet_import('lab.double_caching')
    from watcher_cams.lab import core
    from watcher_cams.lab import double_caching
    out = functools.partial(print, flush=True)
    given = {k: v for k, v in (
        ('guest_mb', args.guest_mb), ('guest_cache_mb', args.guest_cache_mb),
        ('data_mb', args.data_mb),
        ('block_mb', args.block_mb), ('lfu_cache_mb', args.lfu_cache_mb),
        ('host_cache_mb', args.host_cache_mb), ('reads', args.reads),
        ('warm_reads', args.warm_reads),
        ('reads_per_s', args.reads_per_s),
        ('domain_type', args.domain_type)) if v is not None}
    if args.strategies:
        given['strategies'] = tuple(s.strip()
                                    for s in args.strategies.split(','))
    try:
        exp = dataclasses.replace(double_caching.Experiment(), **given)
        lab = double_caching.Lab(exp, args.image_dir)
        _, checks = double_caching.run(exp, lab, args.out, out)
    except core.LabError as exc:
        parser.error(str(exc))
    return _verdict(args, checks)


def _experiment_arguments(sub, default_out):
    # Defaults (None) come from real_guests.Experiment, imported only when
    # the subcommand runs.
    sub.add_argument('--out', default=default_out,
                     help='directory for results.json and the plots')
    sub.add_argument('--strategies',
                     help='comma-separated, static first (static, utility, '
                          'cams-paper, margin-paper, utility-agentless: the '
                          'default mode on guests without a guest agent; '
                          'default static,cams-paper,utility)')
    sub.add_argument('--duration', type=int,
                     help='seconds of reading per run (default 600)')
    sub.add_argument('--measure-from', type=int,
                     help='seconds after which the target is measured '
                          '(default 360)')
    sub.add_argument('--cycle', type=int,
                     help='seconds between audits (default 30)')
    sub.add_argument('--reads-per-s', type=float,
                     help='pace of each reader, 64 KiB blocks (default 100)')
    sub.add_argument('--hot-prob', type=float,
                     help='share of the hot/cold reader\'s reads on the '
                          'hot fifth of the data (default 0.9)')
    sub.add_argument('--data-mb', type=int,
                     help='size of the data the readers read (default '
                          '3072)')
    sub.add_argument('--boot-mb', type=int,
                     help='memory of each guest at boot, the static size '
                          '(default 640)')
    sub.add_argument('--max-mb', type=int,
                     help='flavor memory of each guest (default 1280)')


def _quiet_import(module):
    """Import ``watcher_cams.<module>``, dropping its import's warnings.

    Watcher's dependencies warn about eventlet and cgi on import, noise in
    a lab run. watcher.common.clients replaces the warning filters when
    imported, so the import's warnings are recorded and dropped instead.
    """
    with warnings.catch_warnings(record=True):
        importlib.import_module('watcher_cams.' + module)
    warnings.simplefilter('ignore')


def _example(parser, args):
    if args.cycles < 0:
        parser.error('--cycles must be >= 0')
    _quiet_import('strategies.base')
    _example_plans(sys.stdout)
    _example_cycles(sys.stdout, args.cycles)
    return 0


def _bench_plan(parser, args):
    if args.nodes < 1 or args.instances < 1 or args.repeat < 1:
        parser.error('--nodes, --instances and --repeat must be >= 1')
    _quiet_import('strategies.base')
    from watcher_cams.lab import bench
    worst = bench.run(args.nodes, args.instances, args.seed,
                      out=lambda line: print(line, flush=True),
                      repeat=args.repeat)
    return 0 if worst <= bench.TARGET_S else 1


def _bench_agent(parser, args):
    if args.guests < 2 or args.cycles < 1 or args.memory_mb < 128:
        parser.error('need --guests >= 2, --cycles >= 1 and '
                     '--memory-mb >= 128')
    if args.fake_agents < 0 or not 0 <= args.hung <= args.fake_agents:
        parser.error('need --fake-agents >= 0 and 0 <= --hung <= '
                     '--fake-agents')
    from watcher_cams.lab import bench_agent
    bench_agent.run(args.guests, args.cycles, args.memory_mb,
                    args.image_dir, dtype=args.domain_type,
                    out=lambda line: print(line, flush=True),
                    ksm_wait=args.ksm_wait, read_mb=args.read_mb,
                    fake_agents=args.fake_agents, hung=args.hung)
    return 0


def _bench_cloud(parser, args):
    try:
        nodes = [int(n) for n in args.nodes.split(',')]
    except ValueError:
        parser.error('--nodes: comma-separated integers, e.g. 200,1000')
    if min(nodes) < 1 or args.instances < 1 or args.processes < 1 \
            or not 0 <= args.absent < 1:
        parser.error('need --nodes and --instances >= 1, --processes >= 1 '
                     'and 0 <= --absent < 1')
    _quiet_import('strategies.base')
    from watcher_cams.lab import bench_cloud
    rows = bench_cloud.run(
        nodes, args.instances, args.absent, args.strategy,
        {'mode': args.mode} if args.mode else {}, args.processes,
        args.report_timeout, args.seed, args.out,
        out=lambda line: print(line, flush=True),
        report_version=args.report_version,
        plan_on_agents=args.plan_on_agents)
    return 0 if all('OVER' not in bench_cloud.verdict(
        r, rows, args.report_timeout) for r in rows) else 1


def _bench_apply(parser, args):
    if args.nodes < 2 or args.instances < 1 or args.processes < 1:
        parser.error('need --nodes >= 2, --instances >= 1 and '
                     '--processes >= 1')
    _quiet_import('strategies.base')
    from watcher_cams.lab import bench_apply
    outcome = bench_apply.run(
        args.nodes, args.instances, args.strategy,
        {'mode': args.mode} if args.mode else {}, args.processes, args.seed,
        out=lambda line: print(line, flush=True), outdir=args.out)
    return 0 if outcome.failed_host_state == 'as before' and set(
        outcome.hosts) == {'as planned', 'as before'} else 1


def _add_example(sub):
    ex = sub.add_parser('example', help='run every strategy once on the '
                        'CAMS paper example and print the plans')
    ex.add_argument('--cycles', type=int, default=8,
                    help='audit cycles to run in the cycle table')
    ex.set_defaults(func=_example)


def _add_bench_plan(sub):
    bench = sub.add_parser('bench-plan', help='time planning for a large '
                           'cloud (no RPC) and print the figures')
    bench.add_argument('--nodes', type=int, default=500)
    bench.add_argument('--instances', type=int, default=20,
                       help='instances per node')
    bench.add_argument('--seed', type=int, default=1)
    bench.add_argument('--repeat', type=int, default=3,
                       help='runs of each strategy; the verdict is on '
                       'their median')
    bench.set_defaults(func=_bench_plan)


def _seeds(text):
    from watcher_cams.lab.sim import random_hosts
    try:
        return random_hosts.parse_seeds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            'seeds are N, N-M or a comma-separated list of those, got %r'
            % text)


def _strategies(text):
    from watcher_cams.lab.sim import policies
    known = sorted(policies.POLICIES) + ['oracle', 'oracle-replay']
    names = tuple(n.strip() for n in text.split(',') if n.strip())
    if not names or any(n not in known for n in names):
        raise argparse.ArgumentTypeError(
            'strategies are a comma-separated list of %s, got %r'
            % (', '.join(known), text))
    return names


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError('expected a positive integer, '
                                         'got %r' % text)
    return value


def _add_simulate(sub):
    sim = sub.add_parser('simulate', help='run built-in or user scenarios '
                         'in the simulator; tables, results.json, PNG plots')
    which = sim.add_mutually_exclusive_group()
    which.add_argument('--scenario', default='default',
                       help='built-in scenario or group (default, '
                            'paper-grid, cams, cams-grid, balloon-controller, '
                            'ksm, lfu, llc, real-lab, allocator, '
                            'random-hosts, wide-hosts, agentless, '
                            'forged-claims)')
    which.add_argument('--scenario-file', help='a scenario in YAML or JSON')
    sim.add_argument('--seeds', type=_seeds, default=None,
                     help='random-hosts, wide-hosts, agentless and '
                          'forged-claims only: the random hosts to draw, '
                          'e.g. 61-160 or 3,7,12 (default: random-hosts, '
                          'wide-hosts and forged-claims 1-20, '
                          'agentless its built-in points); hosts no one '
                          'tuned the policy on')
    sim.add_argument('--strategies', type=_strategies, default=None,
                     help='run only these of each scenario\'s strategies, '
                          'e.g. static,cams-paper,utility (the oracle '
                          'takes seconds per random host); targets of '
                          'strategies not run are not checked')
    sim.add_argument('--jobs', type=_positive, default=1,
                     help='points run at once, one process each (the '
                          'runs are deterministic: only the time changes)')
    sim.add_argument('--out', default='lab-results',
                     help='directory for results.json and the plots')
    sim.set_defaults(func=_simulate)


def _add_compare(sub):
    comp = sub.add_parser('compare', help='compare two simulate runs point '
                          'by point: reads, memory moved, targets missed')
    comp.add_argument('base', help='the run before: its --out directory '
                      'or results.json')
    comp.add_argument('new', help='the run after')
    comp.add_argument('--strategy', default='utility',
                      help='the strategy compared (default utility)')
    comp.add_argument('--threshold', type=float, default=0.01,
                      help='GiB a point\'s reads must change by to count '
                           'as better or worse (default 0.01)')
    comp.add_argument('--top', type=int, default=8,
                      help='points listed of those that gained and lost '
                           'most, per scenario')
    comp.add_argument('--plot', help='also draw each point\'s change into '
                      'this PNG')
    comp.add_argument('--by-workload', metavar='REFERENCE',
                      help='also sum what each kind of guest of the new run '
                           'read more and less than under this strategy '
                           '(oracle, static, cams-paper), by what it runs')
    comp.set_defaults(func=_compare)


def _add_guests(sub):
    real = sub.add_parser(
        'guests', help='the lab on real guests: readers in booted guests, '
        'audit cycles of the real strategy, agent and actions, against '
        'static (root, libvirt and tools/guest-image.sh --lab-data needed)')
    _experiment_arguments(real, 'lab-results/guests')
    real.add_argument('--image-dir', default='.cache/guest',
                      help='output of tools/guest-image.sh --lab-data MB')
    real.add_argument('--domain-type', choices=('qemu', 'kvm'),
                      help='libvirt domain type (default qemu: TCG)')
    real.set_defaults(func=_guests)


def _add_cloud(sub):
    on_cloud = sub.add_parser(
        'cloud', help='the real-guest lab through OpenStack: Nova servers '
        'on one compute node, each strategy a continuous Watcher audit '
        '(admin OS_* credentials; the node\'s libvirt for block stats and '
        'the guest agent)')
    _experiment_arguments(on_cloud, 'lab-results/cloud')
    on_cloud.add_argument('--host', default=os.environ.get('CAMS_LAB_HOST'),
                          help='compute node to boot the lab\'s servers on '
                               '(default $CAMS_LAB_HOST)')
    on_cloud.add_argument('--libvirt-uri',
                          default=os.environ.get('CAMS_LAB_LIBVIRT_URI'),
                          help='libvirt URI of that node (default '
                               '$CAMS_LAB_LIBVIRT_URI)')
    on_cloud.add_argument('--image', default='cams-tiny',
                          help='Glance image with the lab\'s reader and '
                               'the guest agent (default cams-tiny)')
    on_cloud.set_defaults(func=_cloud)


def _add_double_caching(sub):
    dc = sub.add_parser(
        'double-caching', help='the LFU Cache FS experiment on a real '
        'guest: random reads through a writeback disk over a capped host '
        'cache, plain guest cache vs. cams-lfu (root, libvirt and '
        'tools/guest-image.sh --lab-data MB needed)')
    dc.add_argument('--out', default='lab-results/double-caching',
                    help='directory for results.json and the plot')
    dc.add_argument('--image-dir', default='.cache/guest',
                    help='output of tools/guest-image.sh --lab-data MB')
    dc.add_argument('--strategies',
                    help='comma-separated among plain, lfu-paper, lfu-ours '
                         '(default all three)')
    for name, what in (
            ('guest-mb', 'the guest\'s memory at boot (default 640)'),
            ('guest-cache-mb', 'what the guest is ballooned to leave '
                               'available for its page cache (default 368)'),
            ('data-mb', 'the data file (default 512)'),
            ('block-mb', 'LFU block size (default 16)'),
            ('lfu-cache-mb', 'the LFU hot set (default 336)'),
            ('host-cache-mb', 'host page cache the guest may use (default '
                              '320)'),
            ('reads', '1 MiB reads per run (default 6000)'),
            ('warm-reads', 'reads before the measurement (default 2000)'),
            ('reads-per-s', 'the reader\'s pace, 0: as fast as it can '
                            '(default 100)')):
        dc.add_argument('--' + name, type=int, help=what)
    dc.add_argument('--domain-type', choices=('qemu', 'kvm'),
                    help='libvirt domain type (default qemu: TCG)')
    dc.set_defaults(func=_double_caching)


def _add_bench_agent(sub):
    agent = sub.add_parser('bench-agent', help='time the agent\'s '
                           'collection on real guests (root, libvirt and '
                           'tools/host-setup.sh needed)')
    agent.add_argument('--guests', type=int, default=4)
    agent.add_argument('--cycles', type=int, default=5)
    agent.add_argument('--memory-mb', type=int, default=512)
    agent.add_argument('--image-dir', default='.cache/guest',
                       help='output of tools/guest-image.sh')
    agent.add_argument('--domain-type', default='qemu',
                       choices=('qemu', 'kvm'))
    agent.add_argument('--ksm-wait', type=int, default=20,
                       help='seconds of fast KSM scanning before measuring '
                            '(0: leave KSM as it is); settings are restored')
    agent.add_argument('--read-mb', type=int, default=None,
                       help='MiB of its data file each guest reads first '
                            '(default: all of it)')
    agent.add_argument('--fake-agents', type=int, default=0,
                       help='instead of --guests: one real guest and this '
                            'many domains without an OS whose guest agents '
                            'answer as the real one did, with its measured '
                            'latency (lab/fake_agents.py)')
    agent.add_argument('--hung', type=int, default=0,
                       help='of the --fake-agents, how many never answer')
    agent.set_defaults(func=_bench_agent)


def _add_bench_cloud(sub):
    cloud = sub.add_parser('bench-cloud', help='time one audit over '
                           'thousands of simulated agents on a private '
                           'RabbitMQ node (rabbitmq-server needed)')
    cloud.add_argument('--nodes', default='200,1000,5000',
                       help='comma-separated node counts, one fleet each')
    cloud.add_argument('--instances', type=int, default=40,
                       help='instances per node')
    cloud.add_argument('--absent', type=float, default=0.01,
                       help='share of further agents that never answer, '
                            'audited a second time (0: none)')
    cloud.add_argument('--strategy', default='cache_aware_balloon')
    cloud.add_argument('--mode', default='utility',
                       help="the strategy's mode parameter ('' for none)")
    cloud.add_argument('--processes', type=int, default=2,
                       help='processes serving the simulated agents')
    cloud.add_argument('--report-timeout', type=int, default=30,
                       help='[watcher_cams_agent] report_timeout (seconds)')
    cloud.add_argument('--report-version', type=int, default=2,
                       choices=(1, 2),
                       help='report the client asks for (1: as agents '
                            'before API 1.3 answer)')
    cloud.add_argument('--no-plan-on-agents', dest='plan_on_agents',
                       action='store_false',
                       help='agents answer plan requests as agents before '
                            'API 1.5 do: the decision engine plans')
    cloud.add_argument('--seed', type=int, default=1)
    cloud.add_argument('--out', default='lab-results/bench-cloud')
    cloud.set_defaults(func=_bench_cloud)


def _add_bench_apply(sub):
    apply = sub.add_parser('bench-apply', help='plan one audit over '
                           'simulated agents, store it with Watcher\'s '
                           'planner and apply it with its applier engine '
                           '(rabbitmq-server needed)')
    apply.add_argument('--nodes', type=int, default=5000)
    apply.add_argument('--instances', type=int, default=40,
                       help='instances per node')
    apply.add_argument('--strategy', default='cache_aware_balloon')
    apply.add_argument('--mode', default='utility',
                       help="the strategy's mode parameter ('' for none)")
    apply.add_argument('--processes', type=int, default=2,
                       help='processes serving the simulated agents')
    apply.add_argument('--seed', type=int, default=1)
    apply.add_argument('--out', default='lab-results/bench-apply')
    apply.set_defaults(func=_bench_apply)


def _dashboard_picture(parser, args):
    from watcher_cams.lab import dashboard_picture
    from watcher_cams.lab import prometheus

    try:
        print(dashboard_picture.render(args.prometheus, args.host, args.out,
                                       args.minutes))
    except (prometheus.PrometheusError, OSError) as exc:
        parser.exit(1, 'dashboard-picture: %s\n' % exc)
    return 0


def _add_dashboard_picture(sub):
    picture = sub.add_parser('dashboard-picture', help='draw the Grafana '
                             'dashboard (etc/watcher-cams/grafana) from a '
                             'Prometheus into a PNG')
    picture.add_argument('--prometheus', default='http://127.0.0.1:9091',
                         help='its URL (default: the all-in-one cloud\'s)')
    picture.add_argument('--host', required=True,
                         help='the compute host of the drill-down row')
    picture.add_argument('--minutes', type=int, default=30)
    picture.add_argument('--out', default='watcher-cams-dashboard.png')
    picture.set_defaults(func=_dashboard_picture)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='watcher-cams-lab',
        description='Run watcher-cams strategies on built-in scenarios.')
    sub = parser.add_subparsers(dest='command')
    for add in (_add_example, _add_bench_plan, _add_simulate, _add_compare,
                _add_guests, _add_cloud, _add_double_caching,
                _add_bench_agent, _add_bench_cloud, _add_bench_apply,
                _add_dashboard_picture):
        add(sub)
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.command is None:
        args = parser.parse_args(['simulate'] + list(argv or []))
    args.started = started
    return args.func(parser, args)


if __name__ == '__main__':
    sys.exit(main())
