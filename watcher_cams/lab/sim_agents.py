"""Simulated agents: one process answers for the agents of many hosts.

bench-cloud needs thousands of agents on one small machine. A real agent
is an oslo.messaging server per host, each with its own AMQP connection
and threads: thousands of them would measure this machine, not the
decision engine. A simulated agents process instead consumes the queue of
every host it serves (the queue a real agent's server declares:
``<topic>.<host>`` bound to the ``watcher_cams`` topic exchange) on one
kombu connection, and answers in oslo.messaging's message envelope
(version 2.0) on the caller's reply queue. So the caller's side is all
real: its oslo.messaging client and transport, the strategy, Watcher's
model. Reports are bench-plan's synthetic ones (``bench.host_report``),
encoded once per host.

Agents of API 1.5 plan their own host (``plan``). A real agent does it
on its own CPU when asked, all hosts at once; thousands of them planning
in two processes beside the decision engine would measure this machine's
two cores instead. So each process plans its hosts before the audit, for
the requests the strategy will send (it builds them with the strategy's
own code on the same model), notes how long each host took, and answers
the request it planned from that plan; any other request is planned when
it comes.
"""

import collections
import json
import os
import socket
import time
import uuid

import kombu

from watcher_cams.lab import bench
from watcher_cams.lab import runner
from watcher_cams.policy import compact
from watcher_cams.policy import planning
from watcher_cams import rpc_common

# oslo.messaging's envelope around every message (its _drivers.common).
ENVELOPE = '{"oslo.version": "2.0", "oslo.message": %s}'
# Requests one process takes from the broker before it has answered them.
PREFETCH = 256


class SimulatedFailure(RuntimeError):
    """A change the simulated agent was told to fail (bench-apply)."""


class UnsupportedVersion(RuntimeError):
    """What an agent older than API 1.5 answers a ``plan`` request."""


class SimulatedHost:
    """What one host's agent answers; balloon sizes follow the changes.

    ``fail_after``: a set_balloons call makes that many changes, then
    fails, as an agent whose guest does not follow its balloon does.
    """

    def __init__(self, report, fail_after=None, plans=True):
        self.name = report['host']
        self.plans = plans
        self.fail_after = fail_after
        self.sizes_mb = {g['uuid']: g['actual_mb'] for g in report['guests']}
        # {change id: {uuid: size before it}}, for revert_balloons.
        self.before = {}
        report = dict(report, age_s=0.0)
        # {report version: its JSON}, as an agent of API 1.3 answers.
        self.reports = {1: json.dumps(report),
                        compact.VERSION: json.dumps(compact.compact(report))}
        self.policy_state = {}
        self.report = report
        # (request's JSON, answer's JSON, seconds it took) of plan_ahead.
        self.planned = None

    def plan_ahead(self, request):
        """Plan for ``request`` now; the same request is answered from it."""
        start = time.perf_counter()
        answer = self._plan(request, ahead=True)
        self.planned = (_key(request), answer, time.perf_counter() - start)

    def plan(self, request):
        if not self.plans:
            raise UnsupportedVersion('Endpoint does not support RPC version '
                                     '1.5')
        if self.planned is not None and _key(request) == self.planned[0]:
            return self.planned[1]
        return self._plan(request, ahead=False)

    def _plan(self, request, ahead):
        """The answer's JSON; ``planned_ahead`` says which way it was made."""
        view, plan = planning.plan_report(self.report, request)
        # Saved, as an agent does; like its reports, a simulated host's
        # next plan starts from its first report.
        self.save_policy_state(plan.policy_state)
        return json.dumps(dict(planning.answer(planning.planned(view, plan)),
                               age_s=0.0, planned_ahead=ahead))

    def get_report(self, report_version=1):
        return self.reports[report_version]

    def save_policy_state(self, states):
        for uuid_, state in states.items():
            self.policy_state.setdefault(uuid_, {}).update(state)
        return json.dumps({'saved': sorted(states)})

    def get_state(self):
        # ``sizes_mb``: the simulation's own, so a benchmark can check what
        # each host holds after a plan.
        return json.dumps({'host': self.name, 'enabled': True,
                           'running': sorted(self.sizes_mb),
                           'instances': {}, 'sizes_mb': self.sizes_mb})

    def set_balloon(self, instance, target_mb, **_):
        previous = self.sizes_mb[instance]
        self.sizes_mb[instance] = target_mb
        return json.dumps({'previous_mb': previous, 'actual_mb': target_mb})

    def set_balloons(self, targets, change_id=None, **_):
        before = self.before.setdefault(change_id, {})
        changed = {}
        for n, target in enumerate(targets):
            if n == self.fail_after:
                raise SimulatedFailure('balloon of %s did not follow'
                                       % target['instance'])
            uuid_ = target['instance']
            before.setdefault(uuid_, self.sizes_mb[uuid_])
            changed[uuid_] = json.loads(self.set_balloon(
                uuid_, target['target_mb']))
        return json.dumps({'changed': changed, 'gone': []})

    def revert_balloons(self, instances, change_id):
        before = self.before.pop(change_id, {})
        answers = {}
        for uuid_ in reversed(instances):
            if uuid_ not in before:
                answers[uuid_] = {'not_applied': change_id}
                continue
            answers[uuid_] = json.loads(self.set_balloon(uuid_,
                                                         before[uuid_]))
        return json.dumps(answers)


def _key(request):
    return json.dumps(request, sort_keys=True)


def plan_ahead(hosts, strategy, params):
    """Have each SimulatedHost plan for the request ``strategy`` will send.

    The requests come from the strategy's own code, on Watcher's model of
    these hosts as bench-cloud builds it (``runner.compute_model``).
    """
    model = runner.compute_model([h.report for h in hosts.values()])
    planner = runner.prepare(strategy, model, None, params)
    for name, request in planner.plan_requests().items():
        hosts[name].plan_ahead(json.loads(json.dumps(request)))


def agent_queue(exchange, topic, host):
    """The queue a real agent of ``host`` consumes, as its server declares."""
    name = '%s.%s' % (topic, host)
    return kombu.Queue(name, exchange, routing_key=name, durable=False,
                       auto_delete=False)


def amqp_url(transport_url):
    """kombu's name for oslo.messaging's ``rabbit://`` URL."""
    return transport_url.replace('rabbit://', 'amqp://', 1)


def agent_exchange():
    """The topic exchange the client publishes to (oslo.messaging's way)."""
    return kombu.Exchange(rpc_common.EXCHANGE, type='topic', durable=False,
                          auto_delete=False)


def reply_body(result_json, msg_id, failure=None):
    """An oslo.messaging reply (its AMQPIncomingMessage._send_reply)."""
    inner = ('{"result": %s, "failure": %s, "ending": true, '
             '"_msg_id": %s, "_unique_id": "%s"}'
             % (result_json, json.dumps(failure), json.dumps(msg_id),
                uuid.uuid4().hex))
    return ENVELOPE % json.dumps(inner)


def failure(exc):
    """An exception as oslo.messaging serializes it for the caller."""
    return json.dumps({'class': type(exc).__name__,
                       'module': 'watcher_cams.lab.sim_agents',
                       'message': str(exc), 'tb': [], 'args': [str(exc)],
                       'kwargs': {}})


class Responder:
    """Answers the requests that reach one process's queues."""

    def __init__(self, hosts, topic, producer):
        self.hosts = hosts  # {name: SimulatedHost}
        self.prefix = topic + '.'
        self.producer = producer
        self.calls = collections.Counter()  # {(method, host): calls}

    def __call__(self, body, message):
        message.ack()
        request = json.loads(body['oslo.message'])
        host = self.hosts[message.delivery_info['routing_key'].removeprefix(
            self.prefix)]
        args = request.get('args') or {}
        self.calls[request.get('method'), host.name] += 1
        try:
            result, failed = getattr(host, request['method'])(**args), None
        except (AttributeError, KeyError, TypeError, SimulatedFailure,
                UnsupportedVersion) as exc:
            result, failed = 'null', failure(exc)
        if request.get('_msg_id'):  # a call, not a cast
            self.producer.publish(
                reply_body(result, request['_msg_id'], failed), exchange='',
                routing_key=request['_reply_q'],
                content_type='application/json', content_encoding='utf-8')


def _sizes(host):
    sizes = {v: len(text) for v, text in host.reports.items()}
    if host.planned is not None:
        sizes.update(plan=len(host.planned[1]), plan_s=host.planned[2])
    return sizes


def serve(url, topic, seed, indices, instances, failing=None,
          plan_with=None, *, ready, stop):
    """Serve hosts ``indices``; put (pid, {host: sizes}) on ``ready``.

    The target of a ``multiprocessing`` process: runs until ``stop`` is set.
    ``failing``: {host index: changes its set_balloons makes, then fails}.
    ``plan_with``: (strategy, audit parameters) the hosts plan ahead for;
    None: they answer ``plan`` as agents older than API 1.5.
    sizes: {report version: bytes} and, planned ahead, ``plan`` (bytes of
    the answer) and ``plan_s`` (seconds it took).
    """
    hosts = {}
    for index in indices:
        host = SimulatedHost(bench.host_report(seed, index, instances),
                             (failing or {}).get(index), bool(plan_with))
        hosts[host.name] = host
    if plan_with:
        plan_ahead(hosts, *plan_with)
    serve_hosts(url, topic, hosts, ready=ready, stop=stop)


def cloud_hosts(seed, servers):
    """{host: SimulatedHost} for a cloud's hosts: {host: [server uuid]}.

    Each host's report is bench-plan's synthetic one (``bench.host_report``)
    with the cloud's names: its guests are that host's servers.
    """
    return {name: SimulatedHost(bench.host_report(seed, index, len(uuids),
                                                  name, uuids))
            for index, (name, uuids) in enumerate(sorted(servers.items()))}


def serve_hosts(url, topic, hosts, *, ready, stop):
    """Answer for ``hosts`` ({name: SimulatedHost}) until ``stop`` is set.

    Puts (pid, {host: sizes}) on ``ready`` once their queues are consumed,
    and (pid, {(method, host): calls}) when it stops.
    """
    exchange = agent_exchange()
    with kombu.Connection(amqp_url(url)) as conn:
        conn.ensure_connection(max_retries=20)
        channel = conn.channel()
        channel.basic_qos(0, PREFETCH, False)
        responder = Responder(hosts, topic, kombu.Producer(conn.channel()))
        queues = [agent_queue(exchange, topic, name) for name in hosts]
        with kombu.Consumer(channel, queues, callbacks=[responder],
                            accept=['json']):
            ready.put((os.getpid(), {name: _sizes(h)
                                     for name, h in hosts.items()}))
            while not stop.is_set():
                try:
                    conn.drain_events(timeout=0.5)
                except socket.timeout:
                    pass
    ready.put((os.getpid(), dict(responder.calls)))
