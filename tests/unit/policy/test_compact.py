"""The compact report (version 2) says what version 1 says, smaller."""

import json

import testtools

from watcher_cams.lab import bench
from watcher_cams.policy import compact
from watcher_cams.policy import report


def views_equal(test, v1):
    """The compact form parses to the very HostView version 1 gives."""
    v2 = json.loads(json.dumps(compact.compact(v1)))
    test.assertEqual(compact.VERSION, v2['version'])
    test.assertEqual(report.parse_host(v1),
                     report.parse_host(compact.expand(v2)))
    return v2


class TestDifference(testtools.TestCase):

    def test_the_previous_sample_comes_back_exactly(self):
        current = {'timestamp': 1060.25, 'source': 'balloon',
                   'meminfo': {'MemTotal': 100, 'Cached': 40, 'New': 1},
                   'psi': {'some_avg10': 0.1, 'some_total': 9}}
        previous = {'timestamp': 1000.75, 'source': 'balloon',
                    'meminfo': {'MemTotal': 100, 'Cached': 50, 'Old': 3},
                    'psi': {'some_avg10': 0.3, 'some_total': 7}}
        found = compact.difference(current, previous)
        # Equal parts are left out, integers are differences.
        self.assertNotIn('source', found)
        self.assertEqual({'Cached': -10, 'Old': 3, '-': ['New']},
                         found['meminfo'])
        self.assertEqual(previous, compact.undo_difference(current, found))

    def test_nonsense_is_a_report_error(self):
        self.assertRaises(report.ReportError, compact.undo_difference,
                          {'a': 1}, ['not', 'an', 'object'])
        self.assertRaises(report.ReportError, compact.undo_difference,
                          {'a': 1}, {'-': 'a'})
        deep = current = {}
        for _ in range(10):
            current['x'] = {}
            current = current['x']
        self.assertRaises(report.ReportError, compact.undo_difference,
                          deep, deep)


class TestCompactReport(testtools.TestCase):

    def test_a_large_host_parses_the_same_at_half_the_bytes(self):
        v1 = bench.host_report(1, 4, 40)
        v2 = views_equal(self, v1)
        self.assertTrue(v1['sharing'])
        self.assertLess(len(json.dumps(v2)), len(json.dumps(v1)) / 2)

    def test_guests_without_samples_or_agents(self):
        v1 = bench.host_report(1, 5, 6)
        guests = v1['guests']
        guests[0].update(agent='timeout', error='no answer', sample=None,
                         previous=None)
        guests[1]['previous'] = None
        guests[2].update(agent=report.MISSING_AGENT, error='no agent',
                         sample=report.balloon_sample(
                             1060.0, {'available': 1 << 20,
                                      'usable': 1 << 19,
                                      'disk_caches': 1 << 18}, 1 << 30),
                         previous=None, balloon={'rss': 900000})
        guests[3].update(policy_state={'utility': {'k': 1}}, base_mb=512,
                         dedicated=True)
        v2 = views_equal(self, v1)
        self.assertEqual(900000, v2['guests'][2]['rss_kb'])
        self.assertNotIn('error', v2['guests'][4])
        self.assertEqual(v1, compact.expand(v1))  # version 1 passes as is

    def test_malformed_structure_is_refused(self):
        v2 = compact.compact(bench.host_report(1, 6, 3))
        for broken in ([[0, 9, 5]], [[0, 1]], 'pairs', [{'a': 0}]):
            self.assertRaises(report.ReportError, compact.expand,
                              dict(v2, sharing=broken))
        self.assertRaises(report.ReportError, compact.expand,
                          dict(v2, guests=['not a guest']))
