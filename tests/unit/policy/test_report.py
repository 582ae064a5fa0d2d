import copy
import json

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from watcher_cams.lab import example
from watcher_cams.policy import report


def good():
    return example.PaperExample().report()


class TestParseHost(testtools.TestCase):
    def test_example_report_parses(self):
        h = report.parse_host(good())
        self.assertEqual('cmp-a', h.name)
        self.assertEqual(2, len(h.guests))
        self.assertTrue(all(g.has_data for g in h.guests))

    def test_host_level_errors_raise(self):
        for path, value in ((('version',), 2), (('host',), ''),
                            (('memory', 'total_mb'), -1),
                            (('memory', 'total_mb'), 'lots'),
                            (('ksm', 'pages_sharing'), 1.5),
                            (('guests',), {'not': 'a list'})):
            data = good()
            target = data
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            self.assertRaises(report.ReportError, report.parse_host, data)

    def test_a_guest_listed_twice_is_a_host_error(self):
        # Two entries for one domain: which is true is unknown.
        data = good()
        data['guests'].append(copy.deepcopy(data['guests'][0]))
        self.assertRaises(report.ReportError, report.parse_host, data)
        # Even where only the other guest is planned.
        self.assertRaises(report.ReportError, report.parse_host, data,
                          only={example.PaperExample.VM2})

    def test_guests_are_found_by_uuid(self):
        h = report.parse_host(good())
        for g in h.guests:
            self.assertIs(g, h.guest(g.uuid))
        self.assertRaises(KeyError, h.guest, 'no-such-guest')

    def _guest_problem(self, mutate):
        data = good()
        mutate(data['guests'][0])
        h = report.parse_host(data)
        g = h.guest(example.PaperExample.VM1)
        self.assertFalse(g.has_data)
        self.assertIsNotNone(g.problem)
        # The other guest is untouched and the bad one is still counted.
        self.assertTrue(h.guest(example.PaperExample.VM2).has_data)
        return g

    def test_guest_data_problems_mark_guest_not_host(self):
        def negative(g):
            g['sample']['meminfo']['Cached'] = -5

        def bigger_than_vm(g):
            g['sample']['meminfo']['MemTotal'] = 10 ** 12

        def nan(g):
            g['sample']['timestamp'] = float('nan')

        def string(g):
            g['sample']['vmstat']['pgpgin'] = '12\x00'

        def missing(g):
            del g['sample']['meminfo']['Active(file)']

        def inconsistent(g):
            g['sample']['meminfo']['MemAvailable'] = (
                g['sample']['meminfo']['MemTotal'] + 1)

        def psi(g):
            g['sample']['psi']['some_avg10'] = 250.0

        def no_agent(g):
            g['agent'] = 'unavailable'
            g['error'] = 'timeout after 5 s'

        for mutate in (negative, bigger_than_vm, nan, string, missing,
                       inconsistent, psi, no_agent):
            self._guest_problem(mutate)

    def test_damaged_policy_state_dropped(self):
        data = good()
        data['guests'][0]['policy_state'] = {'x': 'y' * 100000}
        h = report.parse_host(data)
        self.assertEqual({}, h.guest(example.PaperExample.VM1).policy_state)

    def test_sharing_between_unknown_guests_ignored(self):
        data = good()
        data['sharing'] = [{'a': example.PaperExample.VM1, 'b': 'ghost',
                            'pages': 5},
                           {'a': example.PaperExample.VM1,
                            'b': example.PaperExample.VM2, 'pages': 7}]
        h = report.parse_host(data)
        self.assertEqual([7], list(h.sharing.values()))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats()
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20)


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


PATHS = list(_paths(good()))


class TestFuzzReport(testtools.TestCase):
    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(PATHS), JSON)
    def test_any_single_corruption_is_parsed_or_rejected(self, path, value):
        data = copy.deepcopy(good())
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        try:
            h = report.parse_host(data)
        except report.ReportError:
            return
        for g in h.guests:
            if g.has_data:
                s = g.sample
                self.assertLessEqual(s.active_file_kb + s.inactive_file_kb,
                                     s.mem_total_kb)
                self.assertLessEqual(s.mem_total_kb,
                                     g.max_mb * 1024 * 1.01 + 65536)

    @settings(max_examples=200, deadline=None)
    @given(JSON)
    def test_arbitrary_documents_never_crash(self, value):
        try:
            report.parse_host(value)
        except report.ReportError:
            pass

    def test_non_utf8_bytes_rejected(self):
        data = good()
        data['host'] = b'\xff\xfe'
        self.assertRaises(report.ReportError, report.parse_host, data)
        json.dumps(good())  # the format is plain JSON
