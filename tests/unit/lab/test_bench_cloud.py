"""bench-cloud's simulated agents and its figures, without a broker.

The broker side is tests.functional.test_bench_cloud.
"""

import json
from unittest import mock

from oslo_messaging._drivers import common as oslo_wire
import testtools

from watcher_cams.lab import bench
from watcher_cams.lab import bench_apply
from watcher_cams.lab import bench_cloud
from watcher_cams.lab import runner
from watcher_cams.lab import sim_agents
from watcher_cams.policy import compact
from watcher_cams.policy import planning
from watcher_cams import rpcapi


class FakeMessage:
    def __init__(self, routing_key):
        self.delivery_info = {'routing_key': routing_key}
        self.acked = False

    def ack(self):
        self.acked = True


class FakeProducer:
    def __init__(self):
        self.sent = []

    def publish(self, body, **kwargs):
        self.sent.append((body, kwargs))


def request(method, msg_id='m-1', **args):
    """A call as oslo.messaging's rabbit driver puts it on the wire."""
    return oslo_wire.serialize_msg({
        'method': method, 'args': args, 'version': '1.0',
        '_msg_id': msg_id, '_reply_q': 'reply_q1', '_unique_id': 'u'})


class TestResponder(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.report = bench.host_report(1, 7, 3)
        self.host = sim_agents.SimulatedHost(self.report)
        self.producer = FakeProducer()
        self.responder = sim_agents.Responder(
            {self.host.name: self.host}, 'topic-x', self.producer)

    def answer(self, body):
        self.responder(body, FakeMessage('topic-x.' + self.host.name))
        body, kwargs = self.producer.sent[-1]
        self.assertEqual('reply_q1', kwargs['routing_key'])
        # What oslo.messaging's client does with a reply.
        return oslo_wire.deserialize_msg(json.loads(body))

    def test_report_as_the_client_decodes_it(self):
        reply = self.answer(request('get_report'))
        self.assertEqual('m-1', reply['_msg_id'])
        self.assertIsNone(reply['failure'])
        self.assertTrue(reply['ending'])
        self.assertEqual(dict(self.report, age_s=0.0), reply['result'])

    def test_compact_report_when_asked(self):
        reply = self.answer(request('get_report', report_version=2))
        self.assertEqual(compact.compact(dict(self.report, age_s=0.0)),
                         reply['result'])

    def test_balloon_sizes_follow_the_changes(self):
        uuid = self.report['guests'][0]['uuid']
        before = self.report['guests'][0]['actual_mb']
        reply = self.answer(request('set_balloon', instance=uuid,
                                    target_mb=512, reason='r'))
        self.assertEqual({'previous_mb': before, 'actual_mb': 512},
                         reply['result'])
        self.assertEqual(512, self.host.sizes_mb[uuid])

    def test_a_batch_and_its_revert(self):
        first, second = (g['uuid'] for g in self.report['guests'][:2])
        before = dict(self.host.sizes_mb)
        targets = [{'instance': first, 'target_mb': 512},
                   {'instance': second, 'target_mb': 640}]
        reply = self.answer(request('set_balloons', targets=targets,
                                    change_id='c1'))
        self.assertEqual({first, second}, set(reply['result']['changed']))
        self.assertEqual((512, 640), (self.host.sizes_mb[first],
                                      self.host.sizes_mb[second]))
        reply = self.answer(request('revert_balloons',
                                    instances=[first, second],
                                    change_id='c1'))
        self.assertEqual([second, first], list(reply['result']))
        self.assertEqual(before, self.host.sizes_mb)
        # Told to fail after one change: the caller sees the failure, the
        # revert undoes the one it made.
        self.host.fail_after = 1
        reply = self.answer(request('set_balloons', targets=targets,
                                    change_id='c2'))
        self.assertEqual('SimulatedFailure',
                         json.loads(reply['failure'])['class'])
        self.assertEqual(512, self.host.sizes_mb[first])
        reply = self.answer(request('revert_balloons',
                                    instances=[first, second],
                                    change_id='c2'))
        self.assertEqual({'not_applied': 'c2'}, reply['result'][second])
        self.assertEqual(before, self.host.sizes_mb)

    def test_plans_ahead_and_answers_that_plan_or_plans_when_asked(self):
        hosts = {self.host.name: self.host}
        sim_agents.plan_ahead(hosts, 'margin_balloon', {})
        model = runner.compute_model([self.report])
        strategy = runner.prepare('margin_balloon', model, None, {})
        asked = json.loads(json.dumps(
            strategy.plan_requests()[self.host.name]))
        reply = self.answer(request('plan', request=asked))['result']
        self.assertTrue(reply['planned_ahead'])
        done = planning.parse_answer(reply, self.host.name,
                                     asked['instances'])
        self.assertEqual(3, len(done.plan.moves))
        other = dict(asked, params=dict(asked['params'], up_mb=26))
        reply = self.answer(request('plan', request=other))['result']
        self.assertFalse(reply['planned_ahead'])
        # An agent older than API 1.5: the caller sees UnsupportedVersion.
        self.host.plans = False
        reply = self.answer(request('plan', request=asked))
        self.assertEqual('UnsupportedVersion',
                         json.loads(reply['failure'])['class'])

    def test_unknown_method_is_a_remote_error(self):
        reply = self.answer(request('no_such_call'))
        failure = json.loads(reply['failure'])
        self.assertEqual('AttributeError', failure['class'])

    def test_a_cast_gets_no_reply(self):
        body = request('save_policy_state', msg_id=None, states={'u': {}})
        self.responder(body, FakeMessage('topic-x.' + self.host.name))
        self.assertEqual([], self.producer.sent)
        self.assertEqual({'u': {}}, self.host.policy_state)

    def test_counts_the_calls_of_each_host(self):
        self.answer(request('get_report'))
        self.answer(request('get_report'))
        self.answer(request('no_such_call'))
        self.assertEqual({('get_report', self.host.name): 2,
                          ('no_such_call', self.host.name): 1},
                         dict(self.responder.calls))

    def test_a_cloud_s_hosts_report_its_servers(self):
        servers = {'sim-001': ['b-1', 'b-2'], 'sim-000': ['a-1']}
        hosts = sim_agents.cloud_hosts(1, servers)
        self.assertEqual(set(servers), set(hosts))
        for name, uuids in servers.items():
            report = hosts[name].report
            self.assertEqual(name, report['host'])
            self.assertEqual(uuids, [g['uuid'] for g in report['guests']])
        # Reports other than the names: bench-plan's, one seed per host.
        synthetic = bench.host_report(1, 1, 2)
        self.assertEqual([g['max_mb'] for g in synthetic['guests']],
                         [g['max_mb'] for g in
                          hosts['sim-001'].report['guests']])


class TestFigures(testtools.TestCase):

    def test_reports_are_the_same_in_any_process(self):
        self.assertEqual(bench.host_report(3, 5, 4),
                         bench.host_report(3, 5, 4))
        self.assertNotEqual(bench.host_report(3, 5, 4)['guests'],
                            bench.host_report(3, 6, 4)['guests'])

    def test_calls_at_once_count_once(self):
        agent = bench_cloud.TimedAgent(None, 2)
        agent.spans['report'] = [1.0, 3.0]  # three calls within these 2 s
        agent.spans['save'] = [4.0, 4.5]
        self.assertEqual(2.5, agent.rpc_s())

    def test_growth_and_where_the_target_is_reached(self):
        rows = [bench_cloud.Row(1000, 0, 10.0, 5.0, 5.0, 40.0, 10, 0),
                bench_cloud.Row(2000, 0, 20.0, 10.0, 10.0, 80.0, 10, 0),
                bench_cloud.Row(2000, 20, 40.0, 30.0, 10.0, 80.0, 10, 20)]
        self.assertEqual(
            ['largest fleet audited within 30 s: 2000',
             'growth 10.00 ms per node (1000 -> 2000 nodes): 30 s reached '
             'near 3000 nodes; 5000 nodes extrapolated 50.0 s'],
            bench_cloud.growth(rows))

    def test_dead_agents_are_judged_against_one_timeout(self):
        rows = [bench_cloud.Row(100, 0, 5.0, 1.0, 4.0, 6.0, 10, 0),
                bench_cloud.Row(100, 1, 14.0, 10.0, 4.0, 6.0, 10, 1),
                bench_cloud.Row(100, 2, 16.0, 12.0, 4.0, 6.0, 10, 2)]
        self.assertEqual('ok', bench_cloud.verdict(rows[0], rows, 10))
        self.assertEqual('+9.0 s ok', bench_cloud.verdict(rows[1], rows, 10))
        self.assertIn('OVER', bench_cloud.verdict(rows[2], rows, 10))
        slow = rows[0]._replace(audit_s=31.0)
        self.assertIn('OVER', bench_cloud.verdict(slow, [slow], 10))
        # The agents plan in parallel: the slowest one's time counts.
        waited = rows[0]._replace(audit_s=29.0, agent_plan_s=1.5)
        self.assertIn('OVER', bench_cloud.verdict(waited, [waited], 10))


class TestApplyFigures(testtools.TestCase):

    def test_hosts_are_judged_by_what_their_agents_hold(self):
        reports = [bench.host_report(1, i, 2) for i in range(4)]
        uuids = [[g['uuid'] for g in r['guests']] for r in reports]
        sizes = [{g['uuid']: g['actual_mb'] for g in r['guests']}
                 for r in reports]
        planned = {r['host']: {u[0]: 512} for r, u in zip(reports, uuids)}
        held = [dict(sizes[0], **{uuids[0][0]: 512}), sizes[1],
                dict(sizes[2], **{uuids[2][0]: 768}), None]

        class Agent:
            def get_state(self, host):
                state = held[int(host[-4:])]
                if state is None:
                    raise rpcapi.AgentUnreachable(host, 'timed out')
                return {'sizes_mb': state}

        found = bench_apply.hosts_after(Agent(), reports, planned)
        self.assertEqual(['as planned', 'as before', 'neither', 'no answer'],
                         [found[r['host']] for r in reports])

    def test_planned_sizes_and_the_shipped_parallelism(self):
        solution = mock.Mock(actions=[
            {'action_type': 'cams_host_balloon', 'input_parameters': {
                'host': 'cmp-a', 'targets': [
                    {'instance': 'u1', 'target_mb': 512},
                    {'instance': 'u2', 'target_mb': 768}]}},
            {'action_type': 'nop', 'input_parameters': {'message': 'x'}}])
        self.assertEqual({'cmp-a': {'u1': 512, 'u2': 768}},
                         bench_apply.planned_sizes(solution))
        parallel, workers = bench_apply.shipped_parallelism()
        # The applier runs as many actions at once as the planner allows.
        self.assertEqual(parallel, workers)
