"""The agent's /metrics page: the figures of its newest collection."""

import urllib.request

from prometheus_client import exposition
from prometheus_client import parser
from prometheus_client import registry

from tests.unit.agent import test_manager
from watcher_cams.agent import metrics
from watcher_cams.lab import prometheus

A, B = test_manager.A, test_manager.B
MIB = 2 ** 20


def scrape(mgr):
    """{(name, labels tuple): value} of one rendering of the page."""
    own = registry.CollectorRegistry()
    own.register(metrics.AgentMetrics(mgr))
    text = exposition.generate_latest(own).decode()
    return text, {(s.name, tuple(sorted(s.labels.items()))): s.value
                  for family in parser.text_string_to_metric_families(text)
                  for s in family.samples}


def of(samples, name, **labels):
    return samples[(metrics.PREFIX + name, tuple(sorted(labels.items())))]


class TestMetrics(test_manager.ManagerTestCase):

    def test_before_any_collection_only_the_agent_itself(self):
        mgr = self.manager()
        _, samples = scrape(mgr)
        self.assertEqual(0, of(samples, 'collection_failures_total',
                               host='unit'))
        self.assertFalse([k for k in samples if 'instance' in k[0]])

    def test_the_same_figures_as_the_overview(self):
        mgr = self.manager(host='cmp-7')
        mgr.set_balloon(B, 768, 'utility (host-measured): value 2.500 '
                        'MiB/s per GiB, gives 256 MiB')
        mgr.collect()
        _, samples = scrape(mgr)
        view = mgr.get_overview()
        b = {i['uuid']: i for i in view['instances']}[B]
        host = {'host': 'cmp-7'}
        mine = dict(host, resource=B)
        self.assertEqual(768 * MIB, of(samples, 'instance_memory_actual_'
                                       'bytes', **mine))
        self.assertEqual(b['floor_mb'] * MIB, of(
            samples, 'instance_memory_floor_bytes', **mine))
        self.assertEqual(b['cache_mb'] * MIB, of(
            samples, 'instance_page_cache_bytes', **mine))
        self.assertEqual(1024 * MIB, of(samples, 'instance_memory_max_bytes',
                                        **mine))
        self.assertEqual(768 * MIB, of(samples, 'instance_memory_target_'
                                       'bytes', **mine))
        self.assertEqual(-256 * MIB, of(samples, 'instance_memory_change_'
                                        'bytes', **mine))
        self.assertEqual(2.5 / 1024, of(samples, 'instance_memory_value',
                                        **mine))
        self.assertEqual(4096, of(samples, 'instance_host_read_bytes_total',
                                  **mine))
        self.assertEqual(1, of(samples, 'instance_claims_agree', **mine))
        self.assertEqual(2, of(samples, 'instances', state='ok', **host))
        self.assertEqual(view['memory']['ram_mb'] * MIB,
                         of(samples, 'memory_bytes', **host))
        # A guest never changed has no target or change series.
        self.assertNotIn((metrics.PREFIX + 'instance_memory_target_bytes',
                          tuple(sorted(dict(host, resource=A).items()))),
                         samples)

    def test_a_guest_s_name_is_never_on_the_page(self):
        mgr = self.manager()
        mgr.collect()
        text, _ = scrape(mgr)
        self.assertIn(A, text)
        self.assertNotIn('guest-a', text)

    def test_instances_by_state(self):
        for instance, state in (
                ({'claims': 'x', 'problem': 'x', 'host_only': False},
                 'untrusted'),
                ({'claims': None, 'problem': 'timeout', 'host_only': False},
                 'error'),
                ({'claims': None, 'problem': 'no guest agent',
                  'host_only': True}, 'host_only'),
                ({'claims': None, 'problem': None, 'host_only': False},
                 'ok')):
            self.assertEqual(state, metrics.state_of(instance))

    def test_served_over_http_only_when_a_port_is_set(self):
        mgr = self.manager()
        self.assertIsNone(metrics.serve(mgr.conf, mgr))
        port = prometheus.free_port()
        mgr = self.manager(**{'watcher_cams_prometheus.port': port})
        mgr.collect()
        server = metrics.serve(mgr.conf, mgr)
        self.addCleanup(server.shutdown)
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                    timeout=10) as page:
            self.assertIn('watcher_cams_instance_memory_actual_bytes{'
                          'host="unit",resource="%s"}' % A,
                          page.read().decode())
