"""The RPC client against a real oslo.messaging server on the fake driver.

The fake driver is oslo.messaging's own in-process transport: requests are
serialized and dispatched to a real RPC server exactly as over RabbitMQ.
The functional tests of the agent repeat this over a real RabbitMQ.
"""

import threading
import time

import fixtures
from oslo_config import cfg
import oslo_messaging as messaging
from watcher.tests.unit import base

from watcher_cams import conf as cams_conf
from watcher_cams.conf import agent_rpc
from watcher_cams.policy import compact
from watcher_cams import rpc_common
from watcher_cams import rpcapi


class Endpoint:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.balloons = []

    def get_report(self, ctxt):
        return {'version': 1, 'host': 'cmp-a'}

    def set_balloon(self, ctxt, instance, target_mb, reason):
        if target_mb < 256:
            raise ValueError('below floor')
        self.balloons.append((instance, target_mb, reason))
        return {'previous_mb': 2048, 'actual_mb': target_mb}

    def revert(self, ctxt, instance, kind):
        return {'kind': kind}


class EndpointWithChangeIds(Endpoint):
    target = messaging.Target(version='1.1')

    def revert(self, ctxt, instance, kind, change_id=None):
        return {'kind': kind, 'change_id': change_id}


class EndpointWithOverview(EndpointWithChangeIds):
    target = messaging.Target(version='1.2')

    def get_overview(self, ctxt, since=None):
        return {'host': 'cmp-c', 'since': since}


class EndpointWithCompactReports(EndpointWithOverview):
    target = messaging.Target(version='1.3')

    def get_report(self, ctxt, report_version=1):
        return {'host': 'cmp-d', 'version': report_version}


class EndpointWithBatches(EndpointWithCompactReports):
    target = messaging.Target(version='1.4')

    def set_balloons(self, ctxt, targets, reason='', change_id=None):
        self.balloons.append((targets, reason, change_id))
        return {'changed': {t['instance']: {'actual_mb': t['target_mb']}
                            for t in targets}, 'gone': []}

    def revert_balloons(self, ctxt, instances, change_id):
        return {u: {'change_id': change_id} for u in instances}


class EndpointThatPlans(EndpointWithBatches):
    target = messaging.Target(version='1.5')

    def plan(self, ctxt, request):
        return {'host': 'cmp-p', 'moves': [], 'asked': request}


class TestAgentAPI(base.TestCase):
    def setUp(self):
        super().setUp()
        # The global CONF, as in the decision engine; Watcher's test fixtures
        # reset overrides after each test.
        self.conf = cams_conf.CONF
        self.conf.set_override('report_timeout', 1, 'watcher_cams_agent')
        self.conf.set_override('action_timeout', 1, 'watcher_cams_agent')
        self.transport = messaging.get_rpc_transport(self.conf,
                                                     url='fake:/')
        self.endpoint = Endpoint()
        # The agent's target (watcher_cams.agent.rpc): its own exchange.
        target = messaging.Target(exchange=rpc_common.EXCHANGE,
                                  topic='watcher-cams-agent', server='cmp-a')
        self.server = messaging.get_rpc_server(self.transport, target,
                                               [self.endpoint])
        self.server.start()
        self.addCleanup(self.server.wait)
        self.addCleanup(self.server.stop)
        self.api = rpcapi.AgentAPI(self.conf, self.transport)

    def serve(self, host, endpoint):
        """Another agent, on ``host``, answering with ``endpoint``."""
        target = messaging.Target(exchange=rpc_common.EXCHANGE,
                                  topic='watcher-cams-agent', server=host)
        server = messaging.get_rpc_server(self.transport, target, [endpoint])
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)

    def test_round_trip(self):
        self.assertEqual('cmp-a', self.api.get_report('cmp-a')['host'])
        answer = self.api.set_balloon('cmp-a', 'u1', 1024.0, 'why')
        self.assertEqual(1024, answer['actual_mb'])
        self.assertEqual([('u1', 1024, 'why')], self.endpoint.balloons)
        self.assertEqual({'kind': 'balloon'},
                         self.api.revert('cmp-a', 'u1', 'balloon'))

    def test_change_ids_reach_1_1_agents_and_spare_1_0_ones(self):
        # Without a change id the client asks 1.0; with one, 1.1, and a
        # 1.0 agent (not upgraded yet) gets the call without it.
        self.assertEqual({'kind': 'balloon'}, self.api.revert(
            'cmp-a', 'u1', 'balloon', change_id='c1'))
        self.api.set_balloon('cmp-a', 'u1', 512, 'why', change_id='c1')
        self.assertEqual(('u1', 512, 'why'), self.endpoint.balloons[-1])
        self.serve('cmp-b', EndpointWithChangeIds())
        self.assertEqual({'kind': 'balloon', 'change_id': 'c1'},
                         self.api.revert('cmp-b', 'u1', 'balloon',
                                         change_id='c1'))
        self.assertEqual({'kind': 'balloon', 'change_id': None},
                         self.api.revert('cmp-b', 'u1', 'balloon'))

    def test_compact_reports_from_1_3_agents_full_ones_from_older(self):
        self.serve('cmp-d', EndpointWithCompactReports())
        self.assertEqual({'host': 'cmp-d', 'version': compact.VERSION},
                         self.api.get_report('cmp-d'))
        logs = self.useFixture(fixtures.FakeLogger(name='watcher_cams'))
        for _ in range(3):  # an audit after the other
            self.assertEqual('cmp-a', self.api.get_report('cmp-a')['host'])
        self.assertEqual(1, logs.output.count('older than API 1.3'))

    def test_batches_in_one_call_and_one_per_guest_on_older_agents(self):
        targets = [{'instance': 'u1', 'target_mb': 512, 'reason': 'a'},
                   {'instance': 'u2', 'target_mb': 1024, 'reason': 'b'}]
        batches = EndpointWithBatches()
        self.serve('cmp-e', batches)
        answer = self.api.set_balloons('cmp-e', targets, 'why', 'c1')
        self.assertEqual({'u1', 'u2'}, set(answer['changed']))
        self.assertEqual([(targets, 'why', 'c1')], batches.balloons)
        self.assertEqual({'u2': {'change_id': 'c1'},
                          'u1': {'change_id': 'c1'}},
                         self.api.revert_balloons('cmp-e', ['u1', 'u2'],
                                                  'c1'))
        # cmp-a answers 1.0 only: one set_balloon per guest, in order, and
        # one revert per guest, the last one first.
        logs = self.useFixture(fixtures.FakeLogger(name='watcher_cams'))
        answer = self.api.set_balloons('cmp-a', targets, 'why', 'c1')
        self.assertEqual([('u1', 512, 'a'), ('u2', 1024, 'b')],
                         self.endpoint.balloons)
        self.assertEqual({'changed': {'u1': {'previous_mb': 2048,
                                             'actual_mb': 512},
                                      'u2': {'previous_mb': 2048,
                                             'actual_mb': 1024}},
                          'gone': []}, answer)
        self.assertEqual(['u2', 'u1'], list(self.api.revert_balloons(
            'cmp-a', ['u1', 'u2'], 'c1')))
        self.assertIn('older than API 1.4: set_balloons one call per guest',
                      logs.output)

    def test_plans_from_1_5_agents_older_ones_say_unsupported(self):
        exc = self.assertRaises(rpcapi.AgentError, self.api.plan, 'cmp-a',
                                {'planner': 'utility'})
        self.assertEqual('UnsupportedVersion', exc.exc_type)
        self.serve('cmp-p', EndpointThatPlans())
        self.assertEqual({'planner': 'utility'},
                         self.api.plan('cmp-p', {'planner': 'utility'})
                         ['asked'])
        answers = rpcapi.plan_hosts(self.api, {'cmp-p': {'n': 1},
                                               'cmp-a': {'n': 2}})
        self.assertEqual({'n': 1}, answers['cmp-p']['asked'])
        self.assertEqual('UnsupportedVersion', answers['cmp-a'].exc_type)

    def test_overview_needs_a_1_2_agent(self):
        exc = self.assertRaises(rpcapi.AgentError, self.api.get_overview,
                                'cmp-a')
        self.assertEqual('UnsupportedVersion', exc.exc_type)
        self.serve('cmp-c', EndpointWithOverview())
        self.assertEqual({'host': 'cmp-c', 'since': 7.5},
                         self.api.get_overview('cmp-c', 7.5))

    def test_remote_refusal_is_agent_error(self):
        exc = self.assertRaises(rpcapi.AgentError, self.api.set_balloon,
                                'cmp-a', 'u1', 1)
        self.assertEqual('ValueError', exc.exc_type)
        self.assertIn('below floor', str(exc))

    def test_missing_agent_is_unreachable(self):
        exc = self.assertRaises(rpcapi.AgentUnreachable,
                                self.api.get_report, 'cmp-z')
        self.assertEqual('cmp-z', exc.host)

    def test_unknown_revert_kind_refused_locally(self):
        self.assertRaises(ValueError, self.api.revert, 'cmp-a', 'u1',
                          'everything')

    def test_local_configuration_error_is_not_the_agents(self):
        # oslo.messaging registers its tracing options on the global CONF
        # only: a client on another ConfigOpts fails before sending.
        conf = cfg.ConfigOpts()
        for group, opts in agent_rpc.list_opts():
            conf.register_opts(opts, group=group.name)
        conf([])
        transport = messaging.get_rpc_transport(conf, url='fake:/')
        self.addCleanup(transport.cleanup)
        api = rpcapi.AgentAPI(conf, transport)
        self.assertRaises(cfg.NoSuchOptError, api.get_report, 'cmp-a')


class FakeClock:
    """time.monotonic for rpcapi: moves only when a call waits."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class WaitingAgent:
    """get_report stand-in: hosts in ``dead`` wait their whole timeout."""

    def __init__(self, clock, dead):
        self.clock, self.dead = clock, set(dead)
        self.asked = []

    def get_report(self, host, timeout=None):
        self.asked.append((host, timeout))
        if host in self.dead:
            self.clock.now += timeout
            raise rpcapi.AgentUnreachable(host, 'timed out')
        return {'host': host}


class TestGetReports(base.TestCase):
    """All of an audit's reports within one report_timeout."""

    def setUp(self):
        super().setUp()
        self.conf = cams_conf.CONF
        self.conf.set_override('report_timeout', 30, 'watcher_cams_agent')
        self.clock = FakeClock()
        self.patch = self.useFixture(fixtures.MockPatchObject(
            rpcapi.time, 'monotonic', self.clock))

    def test_a_dead_agent_costs_one_timeout_for_the_whole_audit(self):
        # One at a time, so the order is known: the dead agent takes the
        # whole timeout, and the hosts after it are not asked at all (one
        # after the other, each would have waited a timeout too).
        self.conf.set_override('report_concurrency', 1, 'watcher_cams_agent')
        agent = WaitingAgent(self.clock, dead={'cmp-b'})
        hosts = ['cmp-a', 'cmp-b', 'cmp-c', 'cmp-d']
        reports = rpcapi.get_reports(agent, hosts)
        self.assertEqual(hosts, list(reports))
        self.assertEqual({'host': 'cmp-a'}, reports['cmp-a'])
        for host in ('cmp-b', 'cmp-c', 'cmp-d'):
            self.assertIsInstance(reports[host], rpcapi.AgentUnreachable)
        self.assertEqual([('cmp-a', 30.0), ('cmp-b', 30.0)], agent.asked)
        self.assertEqual(130.0, self.clock.now)

    def test_in_flight_at_once_everyone_is_asked(self):
        self.conf.set_override('report_concurrency', 4, 'watcher_cams_agent')
        agent = WaitingAgent(self.clock, dead=())
        hosts = ['cmp-%d' % i for i in range(20)]
        reports = rpcapi.get_reports(agent, hosts)
        self.assertEqual([{'host': h} for h in hosts], list(reports.values()))
        self.assertEqual(sorted(hosts), sorted(h for h, _ in agent.asked))
        self.assertEqual({}, rpcapi.get_reports(agent, []))

    def test_no_more_in_flight_than_pooled_connections(self):
        conf = cfg.ConfigOpts()
        for group, opts in agent_rpc.list_opts():
            conf.register_opts(opts, group=group.name)
        conf.register_opt(cfg.IntOpt('rpc_conn_pool_size', default=3))
        conf([])
        flight, most, lock = [0], [0], threading.Lock()

        def call(host, timeout):
            with lock:
                flight[0] += 1
                most[0] = max(most[0], flight[0])
            time.sleep(0.02)
            with lock:
                flight[0] -= 1
            return host

        self.useFixture(fixtures.MockPatchObject(rpcapi.time, 'monotonic',
                                                 time.monotonic))
        hosts = ['cmp-%d' % i for i in range(30)]
        self.assertEqual(dict(zip(hosts, hosts)),
                         rpcapi.each_host(hosts, call, conf))
        self.assertLessEqual(most[0], 3)

    def test_an_agent_error_is_returned_not_raised(self):
        class Refusing(WaitingAgent):
            def get_report(self, host, timeout=None):
                raise rpcapi.AgentError(host, 'get_report', 'Refused', 'no')

        reports = rpcapi.get_reports(Refusing(self.clock, ()), ['cmp-a'])
        self.assertIsInstance(reports['cmp-a'], rpcapi.AgentError)


class TestSharedAgent(base.TestCase):
    """One client per process: strategies and actions share it."""

    def test_every_user_gets_the_same_client(self):
        self.useFixture(fixtures.MockPatchObject(rpcapi, '_SHARED', {}))
        made = []
        self.useFixture(fixtures.MockPatchObject(
            rpcapi, 'AgentAPI', lambda: made.append(1) or object()))
        users = [rpcapi.UsesAgent() for _ in range(100)]
        self.assertEqual(1, len({id(u.agent) for u in users}))
        self.assertEqual(1, len(made))
        # A forked worker (another process id) makes its own.
        self.useFixture(fixtures.MockPatchObject(rpcapi.os, 'getpid',
                                                 lambda: -1))
        self.assertIsNot(users[0].agent, rpcapi.UsesAgent().agent)
