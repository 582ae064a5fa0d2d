"""bench-cloud on a real RabbitMQ node of its own, at a small scale.

The real oslo.messaging client and strategy against simulated agents: the
simulated side must speak the wire format the real client reads, the dead
agents must cost the audit one report timeout, not one each.
"""

import json
import os
import subprocess
import threading

import fixtures
import oslo_messaging as messaging
import psutil
import testtools
from watcher import objects

from watcher_cams import conf as cams_conf
from watcher_cams.lab import bench
from watcher_cams.lab import bench_apply
from watcher_cams.lab import bench_cloud
from watcher_cams.lab import broker
from watcher_cams.lab import runner
from watcher_cams.policy import compact
from watcher_cams import rpcapi

NODES = 30
TIMEOUT_S = 3
TOPIC = 'watcher-cams-functional-flat'


class TestBenchCloud(testtools.TestCase):

    def test_an_audit_over_simulated_agents(self):
        outdir = self.useFixture(fixtures.TempDir()).path
        # Three dead agents: one after the other they would cost 9 s.
        rows = bench_cloud.run(nodes=(NODES,), instances=4, absent=0.1,
                               report_timeout=TIMEOUT_S, outdir=outdir,
                               out=lambda line: None)
        answered, dead = rows
        self.assertEqual((NODES, 0, 0), (answered.nodes, answered.absent,
                                         answered.without_report))
        self.assertEqual((3, 3), (dead.absent, dead.without_report))
        self.assertGreater(answered.actions, 0)
        self.assertEqual(answered.actions, dead.actions)
        # Each agent planned its host ahead for exactly what was asked.
        self.assertEqual(0, answered.planned_when_asked
                         + dead.planned_when_asked)
        self.assertGreater(answered.agent_plan_s, 0)
        # Agents older than API 1.5: every host's compact report crossed
        # the broker, and the decision engine planned the same actions.
        older = bench_cloud.run(nodes=(NODES,), instances=4, absent=0,
                                report_timeout=TIMEOUT_S,
                                outdir=os.path.join(outdir, 'older'),
                                out=lambda line: None, plan_on_agents=False)
        compact_mb = sum(len(json.dumps(compact.compact(dict(
            bench.host_report(1, i, 4), age_s=0.0)))) for i in range(NODES))
        self.assertAlmostEqual(compact_mb / 1e6, older[0].moved_mb)
        self.assertEqual(answered.actions, older[0].actions)
        self.assertLess(dead.audit_s - answered.audit_s, 2 * TIMEOUT_S)
        self.assertGreaterEqual(dead.rpc_s, TIMEOUT_S - 0.5)
        with open(os.path.join(outdir, 'results.json')) as f:
            self.assertEqual(2, len(json.load(f)['rows']))
        self.assertTrue(os.path.exists(os.path.join(
            outdir, 'bench-cloud-audit-seconds.png')))

    def test_connections_and_threads_stay_flat(self):
        """100 audits and 1,000 actions on the process's one client."""
        with broker.private_rabbitmq() as url:
            self._use_broker(url)
            with bench_cloud.SimulatedFleet.synthetic(url, TOPIC, 1,
                                                      [0, 1, 2], 4, 1):
                reports = [bench.host_report(1, i, 4) for i in range(3)]
                model = runner.compute_model(reports)
                actions = self._audits(model, 10)  # the first client made
                port = int(url.rsplit(':', 1)[1].strip('/'))
                before = self._connections(port), threading.active_count()
                actions += self._audits(model, 90)
                balloons = [a for a in actions
                            if a['action_type'] == 'cams_host_balloon']
                self.assertTrue(balloons)
                outcomes = runner.apply_actions(
                    (balloons * 1000)[:1000], agent=None)
                self.assertEqual({'SUCCEEDED'}, {o for _, o in outcomes})
                after = self._connections(port), threading.active_count()
                for client in rpcapi._SHARED.values():  # before the broker
                    client._transport.cleanup()
        self.assertEqual(before, after)
        self.assertLessEqual(before[0], 4)

    def _use_broker(self, url):
        """The global CONF's transport, as Watcher's services have it."""
        conf = cams_conf.CONF
        messaging.get_rpc_transport(conf, url=url).cleanup()  # its options
        for name, value, group in (('transport_url', url, None),
                                   ('topic', TOPIC, 'watcher_cams_agent')):
            conf.set_override(name, value, group)
            self.addCleanup(conf.clear_override, name, group)
        self.useFixture(fixtures.MockPatchObject(rpcapi, '_SHARED', {}))

    @staticmethod
    def _audits(model, count):
        actions = []
        for _ in range(count):
            # No agent given: the strategy takes the process's shared one.
            _, solution = runner.run('cache_aware_balloon', model, None)
            actions += solution.actions
        return actions

    @staticmethod
    def _connections(port):
        return sum(1 for c in psutil.Process().net_connections('tcp')
                   if c.raddr and c.raddr.port == port)

    def test_a_plan_stored_and_applied_by_watcher(self):
        # Watcher's weight planner and database, the plugin's engine with
        # the shipped settings, the real actions and client: one host's
        # agent fails, only that host is put back.
        objects.register_all()  # as the applier does, before its engine
        from watcher_cams import workflow_engine

        # Through taskflow, then as large plans run: step by step.
        for layered_from in (workflow_engine.LAYERED_FROM, 2):
            with fixtures.MockPatchObject(workflow_engine, 'LAYERED_FROM',
                                          layered_from):
                outcome = bench_apply.run(
                    nodes=6, instances=4, outdir=self.useFixture(
                        fixtures.TempDir()).path, out=lambda line: None)
            self.assertEqual(6, outcome.actions)
            self.assertEqual({'SUCCEEDED': 5, 'FAILED': 1}, outcome.states)
            self.assertEqual('as before', outcome.failed_host_state)
            self.assertEqual({'as planned': 5, 'as before': 1},
                             outcome.hosts)

    def test_no_session_closes_the_write_ahead_log(self):
        # Sessions open and close a connection each (NullPool); the last
        # one to close would delete the log, while another thread's writer
        # may be starting: SQLite then refuses that writer at once.
        from oslo_config import cfg
        from watcher.common import utils

        with bench_apply.watcher_database() as (ctx, audit):
            wal = cfg.CONF.database.connection.split(':///', 1)[1] + '-wal'
            self.assertTrue(os.path.exists(wal))
            objects.Goal(ctx, uuid=utils.generate_uuid(), name='after',
                         display_name='after',
                         efficacy_specification=[]).create()
            self.assertEqual(audit.id, objects.Audit.get_by_id(
                ctx, audit.id).id)
            self.assertTrue(os.path.exists(wal))

    def test_the_private_node_is_gone_afterwards(self):
        with broker.private_rabbitmq() as url:
            port = int(url.rsplit(':', 1)[1].strip('/'))
            self.assertTrue(broker._port_open(port))
        self.assertFalse(broker._port_open(port))
        node = '%s-%d@' % (broker.NODE_PREFIX, os.getpid())
        nodes = subprocess.run(['pgrep', '-f', node],
                               capture_output=True, text=True).stdout
        self.assertEqual('', nodes.strip())
