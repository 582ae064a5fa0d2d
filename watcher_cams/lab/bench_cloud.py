"""``watcher-cams-lab bench-cloud``: one audit over thousands of nodes.

Starts a RabbitMQ node of its own (:mod:`broker`), simulated agents for N
hosts of G instances (:mod:`sim_agents`, a few processes), and runs the
real strategy with the real oslo.messaging client on Watcher's compute
model of those N nodes, as a decision engine would: every agent is asked
to plan its host (API 1.5) over the broker, and the answers become
Watcher's actions. With ``plan_on_agents`` off, the agents answer as
agents older than 1.5 do: the reports are gathered, parsed and planned
in the decision engine, and the policy state is saved back. Each N is
audited twice: with every agent answering, and with ``absent`` of them
more that never answer (their queues exist, nobody consumes them: an
agent that died). Prints the audit's wall time, the time in RPC, the
decision engine's own time (the rest), the longest time an agent took to
plan its host, the bytes the answers moved and the plan size; writes them
as JSON and a PNG.
"""

import collections
import contextlib
import json
import math
import multiprocessing
import os
import queue
import threading
import time
import typing

import kombu
import oslo_messaging as messaging

from watcher_cams import conf as cams_conf
from watcher_cams.lab import bench
from watcher_cams.lab import broker
from watcher_cams.lab import results as results_mod
from watcher_cams.lab import runner
from watcher_cams.lab import sim_agents
from watcher_cams.lab import tables
from watcher_cams.policy import compact
from watcher_cams import rpcapi

TARGET_S = 30.0
TARGET_NODES = 5000
READY_TIMEOUT_S = 900.0


class Row(typing.NamedTuple):
    nodes: int
    absent: int
    audit_s: float
    rpc_s: float
    # The decision engine's own time: the audit less its RPC.
    engine_s: float
    moved_mb: float
    actions: int
    without_report: int
    # The longest an agent took to plan its host (agents plan in parallel,
    # each on its own host: a real audit waits this much more at most).
    agent_plan_s: float = 0.0
    # Answers planned when asked, not ahead (their request differed).
    planned_when_asked: int = 0


class TimedAgent:
    """The real client, noting when each kind of call began and ended.

    An audit's reports are asked for at once: their span, not their sum,
    is what the audit waited.
    """

    def __init__(self, agent, report_version):
        self.agent = agent
        self.report_version = report_version
        self.spans = collections.defaultdict(lambda: [math.inf, 0.0])
        self.answered = []  # (host, what it answered: sizes' key)
        self.planned_when_asked = 0
        self._lock = threading.Lock()

    def _timed(self, kind, call, host, *args, **kwargs):
        start = time.perf_counter()
        try:
            return call(host, *args, **kwargs)
        finally:
            end = time.perf_counter()
            with self._lock:
                span = self.spans[kind]
                span[0], span[1] = min(span[0], start), max(span[1], end)

    def get_report(self, host, timeout=None):
        report = self._timed('report', self.agent.get_report, host,
                             timeout=timeout,
                             report_version=self.report_version)
        with self._lock:
            self.answered.append((host, self.report_version))
        return report

    def save_policy_state(self, host, states, timeout=None):
        return self._timed('save', self.agent.save_policy_state, host,
                           states, timeout=timeout)

    def plan(self, host, request, timeout=None):
        answer = self._timed('plan', self.agent.plan, host, request,
                             timeout=timeout)
        with self._lock:
            self.answered.append((host, 'plan'))
            self.planned_when_asked += not answer.get('planned_ahead', True)
        return answer

    def rpc_s(self):
        return sum(max(0.0, end - start) for start, end in self.spans.values()
                   if end)


class SimulatedFleet:
    """Processes serving simulated agents, one per job.

    ``jobs``: [(target, args)]; each process runs ``target(*args,
    ready=..., stop=...)``, :func:`sim_agents.serve` or
    :func:`sim_agents.serve_hosts`.
    """

    def __init__(self, jobs):
        ctx = multiprocessing.get_context('spawn')
        self.ready, self.stop = ctx.Queue(), ctx.Event()
        self.procs = [ctx.Process(
            target=target, args=args, daemon=True,
            kwargs={'ready': self.ready, 'stop': self.stop})
            for target, args in jobs]
        self.sizes = {}  # {host: sim_agents.serve's sizes}
        self.calls = collections.Counter()  # {(method, host): calls}

    @classmethod
    def synthetic(cls, url, topic, seed, indices, instances, processes,
                  failing=None, plan_with=None):
        """bench-plan's hosts ``indices``, spread over ``processes``.

        ``failing``, ``plan_with``: see :func:`sim_agents.serve`.
        """
        return cls([(sim_agents.serve,
                     (url, topic, seed, indices[i::processes], instances,
                      failing, plan_with)) for i in range(processes)])

    def __enter__(self):
        for proc in self.procs:
            proc.start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        for _ in self.procs:
            self.sizes.update(self._next_ready(deadline)[1])
        return self

    def _next_ready(self, deadline):
        while True:
            try:
                return self.ready.get(timeout=1.0)
            except Exception:  # queue.Empty, re-exported by multiprocessing
                if time.monotonic() > deadline or any(
                        p.exitcode is not None for p in self.procs):
                    raise RuntimeError('a simulated agents process failed '
                                       'or did not start')

    def __exit__(self, *exc):
        if self.stop.is_set():
            return  # stopped already
        self.stop.set()
        # Each process's last word: the calls it answered. Read before the
        # join: a process does not end until what it put is taken.
        for _ in self.procs:
            try:
                self.calls.update(self.ready.get(timeout=30.0)[1])
            except queue.Empty:
                break
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()


def _declare_dead_agents(url, topic, hosts):
    """Queues of agents that died: messages reach them, nobody answers."""
    exchange = sim_agents.agent_exchange()
    with kombu.Connection(sim_agents.amqp_url(url)) as conn:
        channel = conn.channel()
        for host in hosts:
            sim_agents.agent_queue(exchange, topic, host)(channel).declare()


def audit(reports, agent, sizes, options):
    """One audit of the hosts of ``reports``: a Row.

    ``sizes``: {host: sim_agents.serve's sizes}.
    """
    model = runner.compute_model(reports)
    timed = TimedAgent(agent, options['report_version'])
    planner = runner.prepare(options['strategy'], model, timed,
                             options['params'])
    start = time.perf_counter()
    solution = planner.execute()
    audit_s = time.perf_counter() - start
    rpc_s = timed.rpc_s()
    return Row(len(reports), 0, audit_s, rpc_s, audit_s - rpc_s,
               _bytes_moved(planner, timed, sizes) / 1e6,
               len(solution.actions), planner.hosts_without_report,
               max((sizes[h].get('plan_s', 0.0) for h, kind in timed.answered
                    if kind == 'plan'), default=0.0),
               timed.planned_when_asked)


def _bytes_moved(planner, timed, sizes):
    """Bytes of the answers, and of the plan requests that were answered."""
    requests = planner.plan_requests()
    return sum(sizes[h][kind] + (len(json.dumps(requests[h]))
                                 if kind == 'plan' else 0)
               for h, kind in timed.answered)


@contextlib.contextmanager
def _client(url, topic, report_timeout):
    """An AgentAPI on ``url``; the strategies read the global CONF."""
    conf = cams_conf.CONF
    overrides = {'topic': topic, 'report_timeout': report_timeout}
    for name, value in overrides.items():
        conf.set_override(name, value, 'watcher_cams_agent')
    transport = messaging.get_rpc_transport(conf, url=url)
    try:
        yield rpcapi.AgentAPI(conf, transport)
    finally:
        transport.cleanup()
        for name in overrides:
            conf.clear_override(name, 'watcher_cams_agent')


def bench_fleet(url, nodes, options, out):
    """The two audits (all agents; ``absent`` more dead) of ``nodes``."""
    seed, instances = options['seed'], options['instances']
    topic = 'watcher-cams-bench-%d' % nodes
    dead = max(1, round(nodes * options['absent'])) \
        if options['absent'] > 0 else 0
    out('%d nodes x %d instances: building reports and %d simulated agents '
        'processes' % (nodes, instances, options['processes']))
    reports = [bench.host_report(seed, i, instances) for i in range(nodes)]
    # Named to be asked among the others (hosts are asked by name): each
    # holds one of report_concurrency callers until the deadline.
    dead_reports = [dict(bench.host_report(seed, nodes + i, instances),
                         host='cmp-%04d-down' % (i * nodes // dead))
                    for i in range(dead)]
    _declare_dead_agents(url, topic, [r['host'] for r in dead_reports])
    plan_with = (options['strategy'], options['params']) \
        if options['plan_on_agents'] else None
    with _client(url, topic, options['report_timeout']) as agent, \
            SimulatedFleet.synthetic(
                url, topic, seed, list(range(nodes)), instances,
                options['processes'], plan_with=plan_with) as fleet:
        agent.get_report(reports[0]['host'])  # the transport's warm-up
        out(per_host(fleet.sizes, nodes))
        rows = [audit(reports, agent, fleet.sizes, options)]
        out('  all agents: %.1f s' % rows[0].audit_s)
        if dead:
            row = audit(reports + dead_reports, agent,
                        fleet.sizes, options)
            rows.append(row._replace(absent=dead, nodes=nodes))
            out('  %d absent: %.1f s' % (dead, row.audit_s))
    return rows


def per_host(sizes, nodes):
    """One line: the bytes an agent answers, per kind, and its plan time."""
    line = '  per host: report version 1 %.1f KB, version 2 %.1f KB' % tuple(
        sum(b[v] for b in sizes.values()) / 1e3 / nodes
        for v in (1, compact.VERSION))
    planned = [b for b in sizes.values() if 'plan' in b]
    if planned:
        times = sorted(b['plan_s'] for b in planned)
        line += ('; plan answer %.1f KB, planned by its agent in %.1f ms '
                 '(median), %.1f ms (max)' % (
                     sum(b['plan'] for b in planned) / 1e3 / len(planned),
                     1e3 * times[len(times) // 2], 1e3 * times[-1]))
    return line


def print_rows(rows, report_timeout, out):
    out(tables.table(
        ('nodes', 'absent', 'audit s', 'rpc s', 'engine s', 'agent plan s',
         'MB moved', 'KB/host', 'actions', 'no report', 'target'),
        [(r.nodes, r.absent, '%.1f' % r.audit_s, '%.1f' % r.rpc_s,
          '%.1f' % r.engine_s, '%.3f' % r.agent_plan_s, '%.0f' % r.moved_mb,
          '%.1f' % (r.moved_mb * 1e3 / max(
              1, r.nodes + r.absent - r.without_report)), r.actions,
          r.without_report, verdict(r, rows, report_timeout))
         for r in rows]))
    asked = sum(r.planned_when_asked for r in rows)
    if asked:
        out('%d answers were planned when asked, not ahead: their time is '
            'in the audit' % asked)


def growth(rows):
    """Lines: the largest fleet within TARGET_S, seconds per node beyond.

    From the two largest fleets with every agent answering: how an audit
    grows, where it reaches TARGET_S, and TARGET_NODES by that growth.
    """
    full = sorted((r for r in rows if not r.absent), key=lambda r: r.nodes)
    within = [r.nodes for r in full if r.audit_s <= TARGET_S]
    lines = ['largest fleet audited within %.0f s: %s' % (
        TARGET_S, max(within) if within else 'none')]
    if len(full) < 2 or full[-1].nodes == full[-2].nodes:
        return lines
    small, large = full[-2], full[-1]
    per_node = (large.audit_s - small.audit_s) / (large.nodes - small.nodes)
    if per_node <= 0:
        return lines
    lines.append(
        'growth %.2f ms per node (%d -> %d nodes): %.0f s reached near %d '
        'nodes; %d nodes %s %.1f s' % (
            per_node * 1e3, small.nodes, large.nodes, TARGET_S,
            small.nodes + (TARGET_S - small.audit_s) / per_node,
            TARGET_NODES, 'measured' if large.nodes == TARGET_NODES
            else 'extrapolated',
            large.audit_s + per_node * (TARGET_NODES - large.nodes)))
    return lines


def verdict(row, rows, report_timeout):
    """Against 30 s per audit, or one report timeout over all agents."""
    if not row.absent:
        # The agents plan in parallel: the audit waits the slowest of them.
        total = row.audit_s + row.agent_plan_s
        return 'ok' if total <= TARGET_S else 'OVER %.0f s' % TARGET_S
    base = [r for r in rows if r.nodes == row.nodes and not r.absent][0]
    added = row.audit_s - base.audit_s
    return ('+%.1f s ok' if added <= report_timeout else
            '+%.1f s OVER 1 timeout') % added


def run(nodes=(200, 1000, 5000), instances=40, absent=0.01,
        strategy='cache_aware_balloon', params=None, processes=2,
        report_timeout=30, seed=1, outdir='lab-results/bench-cloud',
        out=print, report_version=compact.VERSION, plan_on_agents=True):
    """Audit fleets of ``nodes`` simulated hosts; the Rows.

    ``report_version`` 1 asks the agents for whole version-1 reports,
    as agents older than API 1.3 answer; ``plan_on_agents`` False makes
    the agents answer ``plan`` as agents older than API 1.5 do.
    """
    options = dict(instances=instances, absent=absent, strategy=strategy,
                   params=params or {'mode': 'utility'},
                   processes=processes, report_timeout=report_timeout,
                   seed=seed, report_version=report_version,
                   plan_on_agents=plan_on_agents)
    rows = []
    os.makedirs(outdir, exist_ok=True)
    out('starting a private RabbitMQ node')
    with broker.private_rabbitmq() as url:
        for count in nodes:
            rows += bench_fleet(url, count, options, out)
    print_rows(rows, report_timeout, out)
    for line in growth(rows):
        out(line)
    from watcher_cams.lab.sim import plots  # matplotlib: the 'lab' extra
    png = plots.audit_times(rows, instances, outdir)
    path = results_mod.write(outdir, {
        'options': options, 'rows': [r._asdict() for r in rows]}, [])
    out('wrote %s and %s' % (path, png))
    return rows
