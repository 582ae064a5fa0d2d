import json

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import libvirt
import testtools

from tests.unit.agent import fakes
from watcher_cams.agent.collectors import guest_agent
from watcher_cams.policy import report

UUID = '11111111-2222-3333-4444-555555555555'


class AgentTestCase(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'libvirt_qemu.qemuAgentCommand', fakes.agent_command))
        self.dom = fakes.FakeDomain(UUID)

    def collect(self):
        return guest_agent.collect(self.dom, timeout=1, max_bytes=65536,
                                   clock=lambda: 100.0)

    def assertStatus(self, status):
        exc = self.assertRaises(guest_agent.GuestAgentError, self.collect)
        self.assertEqual(status, exc.status)
        return exc


class TestCollect(AgentTestCase):

    def test_sample_in_report_format(self):
        sample = self.collect()
        self.assertEqual(468524, sample['meminfo']['MemTotal'])
        self.assertEqual(98324, sample['vmstat']['pgpgin'])
        self.assertEqual({'some_avg10': 1.5, 'full_avg10': 0.25,
                          'some_total': 1234}, sample['psi'])
        parsed = report.parse_sample(sample, max_mb=1024)
        self.assertEqual(12, parsed.pgmajfault)

    def test_no_psi_file_is_not_an_error(self):
        del self.dom.files['/proc/pressure/memory']
        self.assertEqual({}, self.collect()['psi'])
        self.assertEqual({}, self.dom.handles)

    def test_missing_agent_and_timeouts(self):
        self.dom.agent_error = fakes.libvirt_error(
            libvirt.VIR_ERR_AGENT_UNRESPONSIVE,
            'Guest agent is not responding: QEMU guest agent is not '
            'connected')
        self.assertStatus(guest_agent.MISSING)
        self.dom.agent_error = fakes.libvirt_error(
            libvirt.VIR_ERR_AGENT_UNRESPONSIVE,
            'Guest agent is not responding: Guest agent not available for '
            'now')
        self.assertStatus(guest_agent.TIMEOUT)
        self.dom.agent_error = fakes.libvirt_error(
            libvirt.VIR_ERR_OPERATION_TIMEOUT, 'timed out')
        self.assertStatus(guest_agent.TIMEOUT)
        self.dom.agent_error = fakes.libvirt_error(
            libvirt.VIR_ERR_INTERNAL_ERROR, 'boom')
        self.assertStatus(guest_agent.FAILED)

    def test_vanished_domain_is_not_an_agent_problem(self):
        self.dom.gone = True
        exc = self.assertRaises(libvirt.libvirtError, self.collect)
        self.assertEqual(libvirt.VIR_ERR_NO_DOMAIN, exc.get_error_code())

    def test_endless_byte_at_a_time_answers_stop_at_the_total_time(self):
        # Each answer one byte, never the end, each after the full 3 s a
        # command may take: without a total that is 65,536 reads (55 h).
        clock = fakes.FakeClock()
        self.dom.read_bytes, self.dom.endless = 1, True
        self.dom.clock, self.dom.command_s = clock, 3.0
        exc = self.assertRaises(
            guest_agent.GuestAgentError, guest_agent.collect, self.dom,
            timeout=3, max_bytes=65536, total_s=15, monotonic=clock)
        self.assertEqual(guest_agent.TIMEOUT, exc.status)
        self.assertLessEqual(self.dom.commands, 6)
        self.assertLessEqual(clock.now - 1000.0, 18)

    def test_json_nested_too_deep_is_bad_data(self):
        self.dom.replies['guest-file-open'] = '[' * 100000 + ']' * 100000
        self.assertStatus(guest_agent.BAD_DATA)

    def test_domain_vanishing_mid_read_is_not_an_agent_problem(self):
        self.dom.vanish_after = 2  # open, one read, then gone
        exc = self.assertRaises(libvirt.libvirtError, self.collect)
        self.assertEqual(libvirt.VIR_ERR_NO_DOMAIN, exc.get_error_code())

    def test_huge_file_is_refused_and_closed(self):
        self.dom.files['/proc/meminfo'] = b'x' * 200000
        exc = self.assertStatus(guest_agent.BAD_DATA)
        self.assertIn('more than', str(exc))
        self.assertEqual({}, self.dom.handles)

    def test_non_ascii_is_refused(self):
        self.dom.files['/proc/meminfo'] = fakes.MEMINFO.encode() + b'\xff\xfe'
        self.assertStatus(guest_agent.BAD_DATA)

    def test_bad_replies_are_refused(self):
        for command, reply in (
                ('guest-file-open', 'not json'),
                ('guest-file-open', json.dumps({'return': 'handle'})),
                ('guest-file-open', json.dumps({'error': {}})),
                ('guest-file-open', json.dumps([1, 2])),
                ('guest-file-read', json.dumps({'return': []})),
                ('guest-file-read', json.dumps(
                    {'return': {'buf-b64': '!!!', 'eof': True}})),
                ('guest-file-read', json.dumps(
                    {'return': {'buf-b64': 'QQ' * 300000}}))):
            self.dom.replies = {command: reply}
            self.assertStatus(guest_agent.BAD_DATA)

    def test_missing_or_negative_fields_are_refused(self):
        for text in (fakes.MEMINFO.replace('MemTotal', 'MemTotl'),
                     fakes.MEMINFO.replace('468524', '-468524'),
                     fakes.MEMINFO.replace('468524', '4.5'),
                     fakes.MEMINFO.replace('468524 kB', '468524 MB'),
                     fakes.MEMINFO + 'MemTotal: 1 kB\n',
                     fakes.MEMINFO.replace('468524', '9' * 25),
                     'MemTotal: ' + '1' * 300 + ' kB\n',
                     '\n' * 5000, ''):
            self.dom.files['/proc/meminfo'] = text.encode()
            self.assertStatus(guest_agent.BAD_DATA)


class TestParsers(testtools.TestCase):

    def test_vmstat_needs_pgpgin_and_defaults_the_rest(self):
        self.assertEqual({'pgpgin': 7, 'pgmajfault': 0,
                          'workingset_refault_file': 0,
                          'workingset_activate_file': 0, 'pgactivate': 5},
                         guest_agent.parse_vmstat(
                             'pgpgin 7\nother 3\npgactivate 5\n'))
        self.assertRaises(guest_agent.GuestAgentError,
                          guest_agent.parse_vmstat, 'pgpgout 1\n')

    def test_psi_out_of_range(self):
        for text in ('some avg10=101.0 total=1', 'some avg10=nan total=1',
                     'some avg10=-1 total=1', 'some avg10=1 total=-1',
                     'some total=5'):
            self.assertRaises(guest_agent.GuestAgentError,
                              guest_agent.parse_psi, text)

    @settings(max_examples=300, deadline=None)
    @given(st.text(max_size=2000))
    def test_parsers_never_crash_on_any_text(self, text):
        for parse in (guest_agent.parse_meminfo, guest_agent.parse_vmstat,
                      guest_agent.parse_psi):
            try:
                out = parse(text)
            except guest_agent.GuestAgentError:
                continue
            for value in out.values():
                self.assertGreaterEqual(value, 0)

    @settings(max_examples=200, deadline=None)
    @given(st.dictionaries(st.sampled_from(list(report.MEMINFO_KEYS)),
                           st.integers(-10, 1 << 70), min_size=6))
    def test_meminfo_values_are_bounded(self, values):
        text = ''.join('%s: %d kB\n' % kv for kv in values.items())
        try:
            out = guest_agent.parse_meminfo(text)
        except guest_agent.GuestAgentError:
            self.assertTrue(any(v < 0 or v > report.MAX_COUNTER
                                for v in values.values()))
            return
        self.assertEqual(values, out)


class TestCollectFuzz(AgentTestCase):

    @settings(max_examples=150, deadline=None)
    @given(st.binary(max_size=4096), st.sampled_from(
        ['/proc/meminfo', '/proc/vmstat', '/proc/pressure/memory']))
    def test_any_file_content_gives_a_sample_or_a_status(self, data, path):
        self.dom.files = {'/proc/meminfo': fakes.MEMINFO.encode(),
                          '/proc/vmstat': fakes.VMSTAT.encode(),
                          '/proc/pressure/memory': fakes.PSI.encode()}
        self.dom.files[path] = data
        try:
            sample = self.collect()
        except guest_agent.GuestAgentError as exc:
            self.assertIn(exc.status, (guest_agent.BAD_DATA,
                                       guest_agent.FAILED))
            return
        try:
            report.parse_sample(sample, max_mb=1024)
        except report.ReportError:
            pass  # well formed but nonsense: the manager marks the guest
