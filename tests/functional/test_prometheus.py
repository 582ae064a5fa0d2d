"""A real Prometheus scraping the agent daemon that watches real guests."""

import os
import subprocess
import tempfile
import time
import urllib.request

from tests.functional import base
from tests.functional import env
from watcher_cams.lab import dashboard_picture
from watcher_cams.lab import prometheus

MIB = 2 ** 20


class TestPrometheus(base.DaemonTestCase):

    def setUp(self):
        self.metrics_port = prometheus.free_port()
        self.EXTRA_CONF = ('\n[watcher_cams_prometheus]\nport = %d\n'
                           % self.metrics_port)
        super().setUp()
        self.prom = prometheus.Prometheus(
            tempfile.mkdtemp(prefix='cams-ft-prom-'),
            ['127.0.0.1:%d' % self.metrics_port])
        self.addCleanup(self.prom.close)
        self.addOnException(lambda _: self.addDetail(
            'prometheus-log', base.content.text_content(self.prom.log())))
        self.prom.wait_ready()

    def scraped(self, report, timeout=90):
        """Wait until Prometheus holds the collection ``report`` came from.

        Collections come every 5 s and scrapes every second: compare the
        figures of one collection, not of two.
        """
        stamp = 'watcher_cams_collection_timestamp_seconds{host="%s"}' % (
            self.host)
        deadline = time.monotonic() + timeout
        while self.prom.value(stamp) != report['timestamp']:
            self.assertLess(time.monotonic(), deadline,
                            'Prometheus never had collection %s'
                            % report['timestamp'])
            time.sleep(0.5)
            report = self.client.get_report(self.host, report_version=1)
        return report

    def instance_value(self, name, uuid):
        return self.prom.value('watcher_cams_%s{host="%s",resource="%s"}'
                               % (name, self.host, uuid))

    def test_promql_gives_the_agent_s_own_figures(self):
        a, b = self.lab.uuids()
        self.client.set_balloon(self.host, b, env.GUEST_MB - 128,
                                'utility (host-measured): value 1.250 '
                                'MiB/s per GiB, gives 128 MiB')
        self.assertBalloon(env.GUEST_MB - 128, self.lab.b)
        # A report made once the balloon got there: the agent reports what
        # libvirt says, and the change's own collection may be early.
        report = base.wait_report(self, lambda r: env.guest(r, b)[
            'actual_mb'] <= env.GUEST_MB - 128 + base.BALLOON_SLACK_MB)
        report = self.scraped(report)
        view = self.client.get_overview(self.host)
        for uuid in (a, b):
            entry = env.guest(report, uuid)
            self.assertEqual(entry['actual_mb'] * MIB, self.instance_value(
                'instance_memory_actual_bytes', uuid))
            self.assertEqual(entry['max_mb'] * MIB, self.instance_value(
                'instance_memory_max_bytes', uuid))
            self.assertEqual(sum(d['rd_bytes'] for d in entry['disks']),
                             self.instance_value(
                                 'instance_host_read_bytes_total', uuid))
            self.assertEqual(1, self.instance_value('instance_claims_agree',
                                                    uuid))
        self.assertEqual((env.GUEST_MB - 128) * MIB, self.instance_value(
            'instance_memory_target_bytes', b))
        self.assertEqual(-128 * MIB, self.instance_value(
            'instance_memory_change_bytes', b))
        self.assertEqual(1.25 / 1024, self.instance_value(
            'instance_memory_value', b))
        self.assertIsNone(self.instance_value('instance_memory_target_bytes',
                                              a))
        self.assertEqual(view['memory']['ram_mb'] * MIB, self.prom.value(
            'watcher_cams_memory_bytes{host="%s"}' % self.host))
        self.assertEqual(2, self.prom.value(
            'sum(watcher_cams_instances{host="%s",state="ok"})' % self.host))

    def test_the_page_follows_prometheus_conventions(self):
        self.scraped(self.client.get_report(self.host, report_version=1))
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics'
                                    % self.metrics_port, timeout=30) as page:
            text = page.read()
        # promtool (Debian's prometheus package) lints names, units, help.
        lint = subprocess.run(['promtool', 'check', 'metrics'], input=text,
                              capture_output=True, timeout=60)
        self.assertEqual(0, lint.returncode, lint.stdout + lint.stderr)
        self.assertNotIn(b'cams-ft-', text)  # guests' names are not labels

    def test_every_dashboard_query_runs(self):
        _, b = self.lab.uuids()
        self.client.set_balloon(self.host, b, env.GUEST_MB - 64,
                                'utility (probe): value 0.500 MiB/s per '
                                'GiB, gives 64 MiB')
        self.scraped(self.client.get_report(self.host, report_version=1))
        rate = ('rate(watcher_cams_instance_host_read_bytes_total{host="%s"}'
                '[1m])' % self.host)
        deadline = time.monotonic() + 60
        while not self.prom.query(rate):  # two scrapes of the new series
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.5)
        queries = prometheus.dashboard_queries(host=self.host)
        self.assertGreater(len(queries), 20)
        # Every query is accepted (query raises otherwise), and each finds
        # series but the one listing untrusted instances: there are none.
        self.assertEqual(['watcher_cams_instance_claims_agree == 0'],
                         [q for q in queries if not self.prom.query(q)])
        # The documentation's picture is drawn from the same queries.
        picture = dashboard_picture.render(
            self.prom.url, self.host,
            os.path.join(tempfile.mkdtemp(prefix='cams-ft-'), 'dash.png'),
            minutes=2)
        with open(picture, 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))
