"""The watcher-cams-agent daemon and its client over a real RabbitMQ."""

import signal
import threading
import time
import uuid as uuidlib

import fixtures
from watcher.applier.loading import default as loading
import webob

from tests.functional import base
from tests.functional import env
from watcher_cams.api import app as api_app
from watcher_cams.api import policies
from watcher_cams import conf as cams_conf
from watcher_cams.lab import runner
from watcher_cams.policy import compact
from watcher_cams.policy import planning
from watcher_cams.policy import report as report_format
from watcher_cams import rpcapi


class CountingClient:
    """The real client, noting which methods the strategy called."""

    def __init__(self, client):
        self.client = client
        self.methods = []

    def __getattr__(self, name):
        self.methods.append(name)
        return getattr(self.client, name)


class TestAgentOverRabbitMQ(base.DaemonTestCase):

    def test_round_trip(self):
        a, b = self.lab.uuids()
        # The compact form by default (API 1.3), the whole one when asked.
        report = self.client.get_report(self.host)
        self.assertEqual((self.host, compact.VERSION),
                         (report['host'], report['version']))
        view = report_format.parse_host(compact.expand(report))
        self.assertTrue(view.guest(a).has_data)
        whole = self.client.get_report(self.host, report_version=1)
        self.assertEqual('ok', env.guest(whole, a)['agent'])

        answer = self.client.set_balloon(self.host, b, env.GUEST_MB - 128,
                                         'rpc test')
        self.assertEqual(env.GUEST_MB, answer['previous_mb'])
        self.assertBalloon(env.GUEST_MB - 128, self.lab.b)
        state = self.client.get_state(self.host)
        self.assertIn(b, state['running'])
        self.assertEqual(env.GUEST_MB - 128,
                         state['instances'][b]['balloon']['target_mb'])
        self.client.revert(self.host, b, 'balloon')
        self.assertBalloon(env.GUEST_MB, self.lab.b)

        # API 1.1: a change id recorded with the change names it in the
        # revert; a change never made is answered, nothing undone.
        self.client.set_balloon(self.host, b, env.GUEST_MB - 128, 'rpc test',
                                change_id='change-1')
        self.assertEqual({'not_applied': 'change-0'}, self.client.revert(
            self.host, b, 'balloon', change_id='change-0'))
        self.assertBalloon(env.GUEST_MB - 128, self.lab.b)
        self.client.revert(self.host, b, 'balloon', change_id='change-1')
        self.assertBalloon(env.GUEST_MB, self.lab.b)

        self.client.save_policy_state(self.host, {a: {'margin': {'m': 1}}})
        report = self.client.get_report(self.host, report_version=1)
        self.assertEqual({'margin': {'m': 1}},
                         env.guest(report, a)['policy_state'])
        # From the daemon's newest collection, made after the last change.
        self.assertLess(report['age_s'], 60)
        self.assertEqual(env.GUEST_MB, env.guest(report, b)['actual_mb'])

    def test_a_host_balloon_action_applies_and_reverts_as_one(self):
        # Watcher's own loader makes the action; it reaches the daemon over
        # RabbitMQ (API 1.4), which resizes the real guests in one call.
        a, b = self.lab.uuids()
        action = loading.DefaultActionLoader().load('cams_host_balloon')
        action.input_parameters = {
            'resource_id': str(uuidlib.uuid4()), 'host': self.host,
            'targets': [
                {'instance': a, 'target_mb': env.GUEST_MB - 128},
                {'instance': str(uuidlib.uuid4()), 'target_mb': 256},
                {'instance': b, 'target_mb': env.GUEST_MB - 64,
                 'reason': 'b gives 64 MiB'}]}
        action.agent = self.client
        action.change_id = 'host-change-1'
        self.assertTrue(action.validate_parameters())
        action.pre_condition()
        self.assertTrue(action.execute())
        self.assertEqual({a, b}, set(action.result['changed']))
        self.assertBalloon(env.GUEST_MB - 128, self.lab.a)
        self.assertBalloon(env.GUEST_MB - 64, self.lab.b)
        state = self.client.get_state(self.host)['instances']
        self.assertEqual('b gives 64 MiB', state[b]['balloon']['reason'])
        self.assertEqual(['host-change-1'],
                         state[a]['balloon']['change_ids'])
        answer = action.revert()
        self.assertEqual({a, b}, set(answer['reverted']))
        self.assertBalloon(env.GUEST_MB, self.lab.a)
        self.assertBalloon(env.GUEST_MB, self.lab.b)
        # Undone already: nothing is undone twice.
        self.assertEqual({'not_applied': 'host-change-1'}, action.revert())

    def test_a_host_pin_action_applies_and_reverts_as_one(self):
        # Watcher's loader makes the action; the daemon pins both real
        # guests (API 1.1 set_affinity with the action's change id), and
        # the revert puts back what each had, the last first.
        a, b = self.lab.uuids()
        before = [self.lab.a.vcpuPinInfo(0), self.lab.b.vcpuPinInfo(0)]
        action = loading.DefaultActionLoader().load('cams_host_pin')
        action.input_parameters = {
            'resource_id': str(uuidlib.uuid4()), 'host': self.host,
            'pins': [{'instance': a, 'cpus': [1], 'llc': 'L3-1'},
                     {'instance': str(uuidlib.uuid4()), 'cpus': [1]},
                     {'instance': b, 'cpus': [1], 'reason': 'b shares'}]}
        action.agent = self.client
        action.change_id = 'host-pin-1'
        self.assertTrue(action.validate_parameters())
        action.pre_condition()
        self.assertTrue(action.execute())
        self.assertEqual({a, b}, set(action.result['changed']))
        for dom in (self.lab.a, self.lab.b):
            self.assertEqual([1], [c for c, on in enumerate(
                dom.vcpuPinInfo(0)[0]) if on])
        self.assertEqual({a, b}, set(action.revert()['reverted']))
        self.assertEqual(before, [self.lab.a.vcpuPinInfo(0),
                                  self.lab.b.vcpuPinInfo(0)])
        self.assertEqual({'not_applied': 'host-pin-1'}, action.revert())

    def test_the_daemon_plans_its_host_for_the_real_strategy(self):
        # API 1.5: the real strategy, on Watcher's model of this host, asks
        # the daemon over RabbitMQ to plan; the margin controller's state
        # stays with the daemon, no report crosses.
        a, b = self.lab.uuids()
        model = runner.compute_model([self.client.get_report(self.host)])
        timed = CountingClient(self.client)
        strategy, solution = runner.run('margin_balloon', model, timed)
        self.assertEqual({'plan'}, set(timed.methods))
        self.assertEqual(0, strategy.hosts_without_report)
        self.assertEqual({a, b}, {c['instance'] for act in solution.actions
                                  for c in runner.guest_changes(act)})
        state = self.client.get_state(self.host)['instances']
        for uuid in (a, b):
            self.assertIn(planning.MARGIN_STATE_KEY,
                          state[uuid]['policy_state'])
        exc = self.assertRaises(rpcapi.AgentError, self.client.plan,
                                self.host, {'planner': 'nope'})
        self.assertEqual('Refused', exc.exc_type)

    def test_refusals_and_silence(self):
        a, _ = self.lab.uuids()
        exc = self.assertRaises(rpcapi.AgentError, self.client.set_balloon,
                                self.host, a, 1)
        self.assertEqual('Refused', exc.exc_type)
        self.assertIn('floor', str(exc))
        exc = self.assertRaises(rpcapi.AgentError, self.client.revert,
                                self.host, a, 'balloon')
        self.assertEqual('Refused', exc.exc_type)
        exc = self.assertRaises(rpcapi.AgentError, self.client.set_balloon,
                                self.host, str(uuidlib.uuid4()), 256)
        self.assertEqual('UnknownInstance', exc.exc_type)
        self.assertRaises(rpcapi.AgentUnreachable, self.client._call,
                          'no-such-host', 'get_state', 2)

    def test_overview_through_the_reports_api(self):
        # watcher-cams-api's application behind the point where
        # keystonemiddleware has validated a token (its headers), on the
        # real agent over RabbitMQ; tests/cloud sends real tokens.
        api = api_app.OverviewApi(self.client, policies.get_enforcer(
            cams_conf.CONF))

        def get(host, roles='admin', query=''):
            req = webob.Request.blank('/v1/hosts/%s/overview%s'
                                      % (host, query))
            req.headers.update({'X-Roles': roles, 'X-User-Id': 'u',
                                'X-Project-Id': 'p'})
            resp = req.get_response(api)
            return resp.status_int, resp.json

        code, body = get(self.host)
        self.assertEqual(200, code, body)
        self.assertEqual(self.host, body['host'])
        mine = {i['uuid']: i for i in body['instances']
                if i['uuid'] in self.lab.uuids()}
        self.assertEqual(set(self.lab.uuids()), set(mine))
        for inst in mine.values():
            self.assertEqual('ok', inst['agent'], inst)
            self.assertEqual(env.GUEST_MB, inst['max_mb'])
            self.assertLessEqual(inst['floor_mb'], inst['actual_mb'])
            self.assertGreater(inst['cache_mb'], 0)
            self.assertTrue(body['timeline'][inst['uuid']])
        self.assertGreater(body['memory']['ram_mb'], 0)
        newest = max(p['t'] for p in body['timeline'][self.lab.uuids()[0]])
        code, body = get(self.host, query='?since=%r' % newest)
        self.assertEqual(200, code, body)
        self.assertEqual([], body['timeline'][self.lab.uuids()[0]])
        self.assertEqual(403, get(self.host, roles='member')[0])
        cams_conf.CONF.set_override('report_timeout', 2,
                                    'watcher_cams_agent')
        code, body = get('no-such-host')
        self.assertEqual(504, code)
        self.assertIn('no-such-host did not answer',
                      body['error']['message'])

    def test_absent_agents_cost_the_audit_one_timeout(self):
        # Ten hosts without an agent beside the real one. One after the
        # other they would cost ten timeouts (30 s); asked at once, one.
        conf = cams_conf.CONF
        conf.set_override('report_timeout', 3, 'watcher_cams_agent')
        absent = ['absent-%d-%s' % (i, self.host) for i in range(10)]
        started = time.monotonic()
        reports = rpcapi.get_reports(self.client, absent + [self.host])
        elapsed = time.monotonic() - started
        self.assertEqual(self.host, reports[self.host]['host'])
        for host in absent:
            self.assertIsInstance(reports[host], rpcapi.AgentUnreachable)
        self.assertLess(elapsed, 3 * 3, 'ten absent agents took %.1f s'
                        % elapsed)

    def test_one_client_whatever_the_users(self):
        # Strategies and actions share the process's client: a hundred of
        # them, each asking the real agent, open no connection or thread
        # of their own.
        cams_conf.CONF.set_override('transport_url', env.RABBIT_URL)
        self.useFixture(fixtures.MockPatchObject(rpcapi, '_SHARED', {}))
        first = rpcapi.UsesAgent()
        first.agent.get_state(self.host)
        self.addCleanup(first.agent._transport.cleanup)
        threads = threading.active_count()
        for _ in range(100):
            user = rpcapi.UsesAgent()
            self.assertIs(first.agent, user.agent)
            user.agent.get_state(self.host)
        self.assertEqual(threads, threading.active_count())

    def test_daemon_stops_on_sigterm(self):
        self.daemon.send_signal(signal.SIGTERM)
        self.assertEqual(0, self.daemon.wait(30))
