"""``watcher-cams-lab bench-apply``: a plan for thousands of hosts, applied.

Plans one audit over N simulated hosts (bench-cloud's agents on a private
RabbitMQ node), stores the plan with Watcher's weight planner under the
settings the plugin ships (etc/watcher-cams/watcher.conf.d) in a Watcher
database of the run's own (Watcher's SQLite fixture: WAL, one writer), and
applies it as watcher-applier does: the plugin's workflow engine, loaded
by Watcher's loader with the shipped ``max_workers``, runs the plan (step
by step through Watcher's task containers, at this size) over the real
action classes and RPC client. The agent of
one host fails its change after its first guest: that host is put back as
it was, every other host keeps its plan. Prints the time to plan, store and
apply, the actions by state and what each host holds afterwards.

The simulated agents change a balloon at once; a real one waits for each
guest (seconds). The applier runs ``parallelization`` hosts per step, each
step as long as its slowest host, so a real plan takes about (hosts /
parallelization) x the slowest host's time longer than printed here.
"""

import collections
import contextlib
import os
import time
import typing

from oslo_config import cfg
import oslo_messaging as messaging

from watcher_cams import conf as cams_conf
from watcher_cams import deploy
from watcher_cams.lab import bench
from watcher_cams.lab import bench_cloud
from watcher_cams.lab import broker
from watcher_cams.lab import results as results_mod
from watcher_cams.lab import runner
from watcher_cams.lab import tables
from watcher_cams import rpcapi

ENGINE = 'cams_taskflow'
# Seconds between progress lines; each counts the plan's actions in the
# database, whose one writer the applier's threads wait for.
PROGRESS_S = 30.0


class Outcome(typing.NamedTuple):
    nodes: int
    instances: int
    actions: int
    targets: int
    plan_s: float
    store_s: float
    apply_s: float
    states: dict  # {action state: count}
    hosts: dict  # {'as planned' | 'as before' | 'neither': count}
    failed_host: str
    failed_host_state: str


def _shipped_conf():
    """A ConfigOpts reading the shipped watcher.conf.d file only."""
    conf = cfg.ConfigOpts()
    conf(args=[], default_config_files=[deploy.WATCHER_CONF_D])
    return conf


def weight_planner():
    """Watcher's weight planner with the shipped weights, parallelization."""
    from watcher.decision_engine.planner import weight

    conf, group = _shipped_conf(), 'watcher_planners.weight'
    conf.register_opts(weight.WeightPlanner.get_config_opts(), group)
    return weight.WeightPlanner(conf[group])


def workflow_engine(context):
    """The plugin's engine, loaded by Watcher's loader, shipped settings."""
    from watcher.common.loader import default as loader

    return loader.DefaultLoader('watcher_workflow_engines',
                                conf=_shipped_conf()).load(
        ENGINE, context=context, applier_manager=None)


@contextlib.contextmanager
def watcher_database():
    """(context, audit) in a Watcher database of this run's own.

    Watcher's own SQLite fixture (its tests use it with native threads:
    WAL journaling and one writer at a time), and the goal, strategy and
    audit rows an action plan refers to.
    """
    from watcher.common import context as watcher_context
    from watcher.common import rpc
    from watcher.common import service  # noqa: F401 (notification_level)
    from watcher import conf as watcher_conf  # noqa: F401 (its options)
    from watcher import objects
    from watcher.tests.local_fixtures import db as db_fixture

    objects.register_all()  # as Watcher's services do when they start
    # The fixture also points tempfile at a directory of its own until it
    # is cleaned up, whatever fails after it.
    fixture = db_fixture.WatcherDatabase()
    try:
        fixture.setUp()
        # The objects notify through Watcher's notifier, as in its
        # services; without a notification_level it drops them (noop).
        rpc.init(cfg.CONF)
        ctx = watcher_context.make_context(is_admin=True)
        with _wal_kept(cfg.CONF.database.connection):
            yield ctx, _audit(ctx)
    finally:
        rpc.cleanup()
        fixture.cleanUp()


@contextlib.contextmanager
def _wal_kept(url):
    """One idle connection to the SQLite file for as long as it is used.

    oslo.db opens a connection per session (NullPool). When a session's
    connection is the last one open, SQLite checkpoints and deletes the
    write-ahead log as it closes; a writer of another thread caught in
    that moment fails at once with "database is locked" (about once a
    minute with eight threads reading and updating actions;
    tools/bench_db_stress.py). With this connection open no session's is
    ever the last, and the log stays until the run ends.
    """
    import sqlite3

    from sqlalchemy.engine import url as sa_url

    keeper = sqlite3.connect(sa_url.make_url(url).database)
    try:
        # A first read puts it in WAL mode: it holds its share of the
        # file from then on, and no transaction.
        keeper.execute('SELECT count(*) FROM sqlite_master').fetchall()
        yield
    finally:
        keeper.close()


def _audit(ctx, goal='memory_cache_efficiency',
           strategy='cache_aware_balloon'):
    from watcher.common import utils
    from watcher import objects

    goal_row = objects.Goal(ctx, uuid=utils.generate_uuid(), name=goal,
                            display_name=goal, efficacy_specification=[])
    goal_row.create()
    strategy_row = objects.Strategy(ctx, uuid=utils.generate_uuid(),
                                    name=strategy, goal_id=goal_row.id,
                                    display_name=strategy)
    strategy_row.create()
    audit = objects.Audit(ctx, uuid=utils.generate_uuid(),
                          name='bench-apply', audit_type='ONESHOT',
                          state='SUCCEEDED', goal_id=goal_row.id,
                          strategy_id=strategy_row.id, parameters={})
    audit.create()
    return audit


@contextlib.contextmanager
def agents_on(url, topic, report_timeout):
    """The process's shared agent client (strategies and actions) on url."""
    conf = cams_conf.CONF
    # The first transport registers transport_url; the shared client's
    # reads it.
    messaging.get_rpc_transport(conf, url=url).cleanup()
    conf.set_override('transport_url', url)
    conf.set_override('topic', topic, 'watcher_cams_agent')
    conf.set_override('report_timeout', report_timeout, 'watcher_cams_agent')
    rpcapi._SHARED.clear()
    agent = rpcapi.shared_agent()
    try:
        yield agent
    finally:
        rpcapi._SHARED.clear()
        agent._transport.cleanup()
        conf.clear_override('report_timeout', 'watcher_cams_agent')
        conf.clear_override('topic', 'watcher_cams_agent')
        conf.clear_override('transport_url')


def plan(agent, reports, strategy, params):
    """(solution, seconds): one audit over the simulated hosts."""
    strategy = runner.prepare(strategy, runner.compute_model(reports), agent,
                              params)
    start = time.perf_counter()
    solution = strategy.execute()
    return solution, time.perf_counter() - start


def store(ctx, audit, solution):
    """(action plan, seconds): the plan in Watcher's database."""
    start = time.perf_counter()
    action_plan = weight_planner().schedule(ctx, audit.id, solution)
    return action_plan, time.perf_counter() - start


def apply(ctx, action_plan, out):
    """({state: count}, seconds): the plan run as the applier runs it."""
    from watcher.common import exception
    from watcher import objects

    actions = objects.Action.list(
        ctx, filters={'action_plan_uuid': action_plan.uuid}, eager=True)
    engine = workflow_engine(ctx)
    start = time.perf_counter()
    with _progress(ctx, action_plan, len(actions), start, out):
        try:
            engine.execute(actions)
        except exception.WorkflowExecutionException as exc:
            out('  the workflow engine failed: %s' % exc)
    elapsed = time.perf_counter() - start
    return _states(ctx, action_plan), elapsed


def _states(ctx, action_plan):
    from watcher import objects

    return dict(collections.Counter(
        action.state for action in objects.Action.list(
            ctx, filters={'action_plan_uuid': action_plan.uuid})))


@contextlib.contextmanager
def _progress(ctx, action_plan, total, start, out):
    """Prints how many actions have finished, every PROGRESS_S seconds."""
    import threading

    done = threading.Event()

    def report():
        while not done.wait(PROGRESS_S):
            states = _states(ctx, action_plan)
            out('  %d/%d actions finished (%.0f s)' % (
                sum(n for s, n in states.items()
                    if s not in ('PENDING', 'ONGOING')), total,
                time.perf_counter() - start))
    thread = threading.Thread(target=report, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def planned_sizes(solution):
    """{host: {uuid: target MiB}} of the solution's balloon actions."""
    planned = {}
    for action in solution.actions:
        for change in runner.guest_changes(action):
            if change.get('target_mb'):
                host = action['input_parameters']['host']
                planned.setdefault(host, {})[change['instance']] = \
                    change['target_mb']
    return planned


def hosts_after(agent, reports, planned):
    """{host: 'as planned' | 'as before' | 'neither' | 'no answer'}.

    Asked of the agents themselves; a host the plan did not change counts
    as planned.
    """
    states = rpcapi.each_host(sorted(r['host'] for r in reports),
                              lambda host, timeout: agent.get_state(host))
    found = {}
    for report in reports:
        host, state = report['host'], states[report['host']]
        before = {g['uuid']: g['actual_mb'] for g in report['guests']}
        if isinstance(state, Exception):
            found[host] = 'no answer'
        elif state['sizes_mb'] == dict(before, **planned.get(host, {})):
            found[host] = 'as planned'
        else:
            found[host] = ('as before' if state['sizes_mb'] == before
                           else 'neither')
    return found


def run(nodes=5000, instances=40, strategy='cache_aware_balloon',
        params=None, processes=2, seed=1, report_timeout=120,
        outdir='lab-results/bench-apply', out=print):
    """Plan, store and apply one audit of ``nodes`` hosts: an Outcome."""
    failed_index = nodes // 2
    reports = [bench.host_report(seed, i, instances) for i in range(nodes)]
    failed_host = reports[failed_index]['host']
    topic = 'watcher-cams-apply-%d' % nodes
    out('starting a private RabbitMQ node, %d simulated agents (the one of '
        '%s fails after its first change) and a Watcher database'
        % (nodes, failed_host))
    params = params or {'mode': 'utility'}
    with broker.private_rabbitmq() as url, \
            agents_on(url, topic, report_timeout) as agent, \
            bench_cloud.SimulatedFleet.synthetic(
                url, topic, seed, list(range(nodes)), instances,
                processes, failing={failed_index: 1},
                plan_with=(strategy, params)), \
            watcher_database() as (ctx, audit):
        solution, plan_s = plan(agent, reports, strategy, params)
        out('planned in %.1f s: %d actions' % (plan_s,
                                               len(solution.actions)))
        action_plan, store_s = store(ctx, audit, solution)
        out('stored by the weight planner in %.1f s' % store_s)
        states, apply_s = apply(ctx, action_plan, out)
        planned = planned_sizes(solution)
        hosts = hosts_after(agent, reports, planned)
    outcome = Outcome(
        nodes, instances, len(solution.actions),
        sum(len(t) for t in planned.values()), plan_s, store_s, apply_s,
        states, dict(collections.Counter(hosts.values())), failed_host,
        hosts[failed_host])
    print_outcome(outcome, out)
    os.makedirs(outdir, exist_ok=True)
    path = results_mod.write(outdir, {'outcome': outcome._asdict()}, [])
    out('wrote %s' % path)
    return outcome


def shipped_parallelism():
    """(cams_host_balloon's parallelization, the engine's max_workers)."""
    settings = deploy.watcher()
    parallel = dict(item.split(':') for item in settings[
        'watcher_planners.weight']['parallelization'].split(','))
    return (int(parallel['cams_host_balloon']),
            int(settings['watcher_workflow_engines.' + ENGINE]['max_workers']))


def print_outcome(o, out):
    parallel, workers = shipped_parallelism()
    out(tables.table(('figure', 'value'), [
        ('hosts x instances', '%d x %d' % (o.nodes, o.instances)),
        ('actions (balloon changes)', '%d (%d)' % (o.actions, o.targets)),
        ('plan s / store s / apply s', '%.1f / %.1f / %.1f'
         % (o.plan_s, o.store_s, o.apply_s)),
        ('actions by state', ', '.join('%s %d' % kv for kv in
                                       sorted(o.states.items()))),
        ('hosts afterwards', ', '.join('%s %d' % kv for kv in
                                       sorted(o.hosts.items()))),
        ('failing host %s' % o.failed_host, o.failed_host_state),
        ('shipped parallelization / max_workers',
         '%d / %d' % (parallel, workers)),
        # Each step waits for its slowest host: with real balloons add
        # about this many times two balloon waits.
        ('applier steps (actions / parallelization)',
         '%d' % -(-o.actions // parallel)),
    ]))
