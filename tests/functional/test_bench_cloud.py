"""bench-cloud on a real RabbitMQ node of its own, at a small scale.

The real oslo.messaging client and strategy against simulated agents: the
simulated side must speak the wire format the real client reads, the dead
agents must cost the audit one report timeout, not one each.
"""

import json
import os
import subprocess

import fixtures
import testtools

from watcher_cams.lab import bench
from watcher_cams.lab import bench_cloud
from watcher_cams.lab import broker
from watcher_cams.policy import compact

NODES = 30
TIMEOUT_S = 3


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
        # Every host's compact report crossed the broker.
        compact_mb = sum(len(json.dumps(compact.compact(dict(
            bench.host_report(1, i, 4), age_s=0.0)))) for i in range(NODES))
        self.assertAlmostEqual(compact_mb / 1e6, answered.report_mb)
        self.assertLess(dead.audit_s - answered.audit_s, 2 * TIMEOUT_S)
        self.assertGreaterEqual(dead.rpc_s, TIMEOUT_S - 0.5)
        with open(os.path.join(outdir, 'results.json')) as f:
            self.assertEqual(2, len(json.load(f)['rows']))
        self.assertTrue(os.path.exists(os.path.join(
            outdir, 'bench-cloud-audit-seconds.png')))

    def test_the_private_node_is_gone_afterwards(self):
        with broker.private_rabbitmq() as url:
            port = int(url.rsplit(':', 1)[1].strip('/'))
            self.assertTrue(broker._port_open(port))
        self.assertFalse(broker._port_open(port))
        node = '%s-%d@' % (broker.NODE_PREFIX, os.getpid())
        nodes = subprocess.run(['pgrep', '-f', node],
                               capture_output=True, text=True).stdout
        self.assertEqual('', nodes.strip())
