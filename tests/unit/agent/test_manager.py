"""The agent's manager, controllers and state on fake domains."""

import json
import multiprocessing
import os
import threading

import fixtures
import libvirt
import testtools

from tests.unit.agent import fakes
from tests.unit import factory
from watcher_cams import accounting
from watcher_cams.agent import controllers
from watcher_cams.agent.controllers import pinning
from watcher_cams.agent import manager as agent_manager
from watcher_cams import changes as state_store
from watcher_cams import conf as cams_conf
from watcher_cams.conf import guards as guards_conf
from watcher_cams.policy import claims
from watcher_cams.policy import compact
from watcher_cams.policy import distrust
from watcher_cams.policy import guards
from watcher_cams.policy import margin
from watcher_cams.policy import model
from watcher_cams.policy import planning
from watcher_cams.policy import report
from watcher_cams.policy import utility

A = 'aaaaaaaa-0000-0000-0000-000000000001'
B = 'bbbbbbbb-0000-0000-0000-000000000002'


def make_conf(state_dir, **overrides):
    settings = {'state_dir': state_dir, 'host': 'unit',
                'collect_sharing': False, 'balloon_timeout': 1,
                'shared_cpus': ['0-1']}
    settings.update(overrides)
    return cams_conf.isolated(**settings)


class ManagerTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'libvirt_qemu.qemuAgentCommand', fakes.agent_command))
        self.useFixture(fixtures.MockPatch('time.sleep'))
        self.state_dir = self.useFixture(fixtures.TempDir()).path
        # A fake /proc and /sys: the host's own KSM or memory must not
        # change what these tests see.
        self.root = self.useFixture(fixtures.TempDir()).path
        for path, text in (
                ('proc/meminfo', 'MemTotal: %d kB\nMemAvailable: 1 kB\n'
                 % (16384 * 1024)),
                ('sys/kernel/mm/ksm/pages_sharing', '0\n'),
                ('sys/devices/system/cpu/online', '0-1\n')):
            os.makedirs(os.path.dirname(os.path.join(self.root, path)),
                        exist_ok=True)
            with open(os.path.join(self.root, path), 'w') as f:
                f.write(text)
        self.a = fakes.FakeDomain(A, 'guest-a', max_mb=1024)
        self.b = fakes.FakeDomain(B, 'guest-b', max_mb=1024)
        self.conn = fakes.FakeConn([self.a, self.b])

    def manager(self, **overrides):
        mgr = agent_manager.AgentManager(make_conf(self.state_dir,
                                                   **overrides),
                                         root=self.root)
        mgr._conn = self.conn
        return mgr

    def counting(self, **overrides):
        mgr = self.manager(**overrides)
        collect = mgr.monitor.collect
        mgr.collections = []

        def counted(conn):
            mgr.collections.append(conn)
            return collect(conn)

        mgr.monitor.collect = counted
        return mgr

    def ticking(self):
        """(manager whose clock moves 10 s a call, the monitor's log)."""
        logs = self.useFixture(fixtures.FakeLogger(
            name='watcher_cams.agent.monitor'))
        clock = iter(range(0, 1000, 10))
        mgr = self.manager(min_rate_interval=10)
        mgr.monitor.clock = lambda: float(next(clock))
        return mgr, logs

    def b_says_pgpgin(self, kb):
        self.b.files['/proc/vmstat'] = fakes.VMSTAT.replace(
            'pgpgin 98324', 'pgpgin %d' % kb).encode()


class TestReport(ManagerTestCase):

    def test_report_parses_and_accounts(self):
        rep = self.manager().get_report()
        view = report.parse_host(rep)
        self.assertEqual([A, B], [g.uuid for g in view.guests])
        self.assertTrue(all(g.has_data for g in view.guests))
        self.assertEqual(2048, rep['accounting']['guests_actual_mb'])
        self.assertEqual(16384, rep['memory']['total_mb'])
        self.assertEqual(16384 - 512, rep['accounting']['capacity_mb'])
        self.assertEqual([{'name': 'L0-s0-0', 'socket': 0, 'cpus': [0]},
                          {'name': 'L0-s0-1', 'socket': 0, 'cpus': [1]}],
                         rep['topology']['llc'])
        self.assertEqual([[0, 1]], rep['guests'][0]['cpus'])
        self.assertEqual('none', rep['guests'][0]['disks'][0]['cache'])

    def test_configured_caches_are_reported(self):
        rep = self.manager(llc_cpus='0-1').get_report()
        self.assertEqual([{'name': 'LLC-cfg-0', 'socket': 0,
                           'cpus': [0, 1]}], rep['topology']['llc'])
        self.assertRaises(ValueError, self.manager, llc_cpus='0;2')

    def test_vanishing_domain_is_skipped(self):
        self.b.gone = True
        rep = self.manager().get_report()
        self.assertEqual([A], [g['uuid'] for g in rep['guests']])

    def test_guests_are_sampled_at_once(self):
        # Guest A's agent answers only once guest B's was asked: one
        # after the other (A first), A would give up (and B wait for it).
        b_asked = threading.Event()
        a_agent, b_agent = self.a.agent, self.b.agent

        def a_waits(raw):
            if not b_asked.wait(timeout=60):
                raise fakes.libvirt_error(
                    libvirt.VIR_ERR_AGENT_UNRESPONSIVE, 'waited for B')
            return a_agent(raw)

        def b_answers(raw):
            b_asked.set()
            return b_agent(raw)

        self.a.agent, self.b.agent = a_waits, b_answers
        rep = self.manager(guest_workers=2).get_report()
        self.assertEqual(['ok', 'ok'], [g['agent'] for g in rep['guests']])

    def test_bad_guest_data_is_marked_and_logged_once(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='watcher_cams.agent.monitor'))
        # Well formed, but MemAvailable above MemTotal.
        self.b.files['/proc/meminfo'] = fakes.MEMINFO.replace(
            '425124', '999999').encode()
        mgr = self.manager()
        for _ in range(3):
            rep = mgr.get_report()
        guest = rep['guests'][1]
        self.assertEqual('bad-data', guest['agent'])
        self.assertNotIn('sample', guest)
        self.assertEqual(1, logs.output.count(B))
        self.b.files['/proc/meminfo'] = fakes.MEMINFO.encode()
        mgr.get_report()
        self.assertIn('readable again', logs.output)

    def _hostile_b(self, status):
        """B's entry: marked ``status``, no sample, logged once; A intact."""
        logs = self.useFixture(fixtures.FakeLogger(
            name='watcher_cams.agent.monitor'))
        mgr = self.manager(guest_sample_timeout=15)
        for _ in range(2):
            rep = mgr.get_report()
        a, b = rep['guests']
        self.assertEqual(('ok', A), (a['agent'], a['uuid']))
        self.assertIn('sample', a)
        self.assertEqual(status, b['agent'])
        self.assertNotIn('sample', b)
        self.assertEqual(1, logs.output.count(B), logs.output)

    def test_endless_guest_agent_costs_only_its_guest(self):
        clock = fakes.FakeClock()
        self.useFixture(fixtures.MockPatch('time.monotonic', clock))
        self.b.read_bytes, self.b.endless = 1, True
        self.b.clock, self.b.command_s = clock, 3.0
        self._hostile_b('timeout')
        # Two reports: a few commands each, not 65,536.
        self.assertLessEqual(self.b.commands, 12)

    def test_json_nested_too_deep_costs_only_its_guest(self):
        self.b.replies['guest-file-open'] = '[' * 100000 + ']' * 100000
        self._hostile_b('bad-data')

    def test_guest_vanishing_while_sampled_leaves_the_others(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='watcher_cams.agent.monitor'))
        self.b.vanish_after = 2
        rep = self.manager().get_report()
        self.assertEqual([A], [g['uuid'] for g in rep['guests']])
        self.assertIn('sample', rep['guests'][0])
        self.assertEqual(1, logs.output.count(B), logs.output)

    def test_host_measured_reads_need_no_guest_agent(self):
        clock = iter(range(0, 1000, 10))
        mgr = self.manager(min_rate_interval=10)
        mgr.monitor.clock = lambda: float(next(clock))
        self.b.agent_error = fakes.libvirt_error(
            libvirt.VIR_ERR_AGENT_UNRESPONSIVE, 'not connected')
        self.b.balloon_stats = {'major_fault': 100, 'swap_in': 0}
        first = mgr.get_report()['guests'][1]
        self.assertIsNone(first['host_io'])  # no window yet
        self.b.rd_bytes += 64 << 20
        self.b.rd_req += 1024
        self.b.balloon_stats['major_fault'] += 640
        self.b.balloon_stats['usable'] = 900 * 1024
        self.b.actual_kib = 768 * 1024
        self.b.cpu_ns += 3 * 10 ** 9
        rep = mgr.get_report()
        io = rep['guests'][1]['host_io']
        self.assertEqual('missing', rep['guests'][1]['agent'])
        self.assertEqual((1024, 768), (io['start_mb'], io['end_mb']))
        seconds = io['window_s']
        self.assertAlmostEqual(64 / seconds, io['read_mb_s'], 3)
        self.assertAlmostEqual(1024 / seconds, io['read_req_s'], 2)
        self.assertAlmostEqual(640 / seconds,
                               io['balloon_s']['major_fault'], 2)
        self.assertAlmostEqual(3 / seconds, io['cpu_s'], 4)
        view = report.parse_host(rep)
        self.assertAlmostEqual(64 / seconds, view.guests[1].host_io.read_mb_s,
                               3)
        self.assertEqual(0.0, view.guests[0].host_io.read_mb_s)
        # The overview shows them, and the balloon driver's levels.
        ov = mgr.get_overview()
        b = ov['instances'][1]
        self.assertEqual('missing', b['agent'])
        self.assertGreater(b['host_read_mb_s'], 0)
        # Rounded to 3 decimals for the page.
        self.assertAlmostEqual(3 / seconds, b['host_cpu_s'], delta=0.0005)
        self.assertEqual(0.0, ov['instances'][0]['host_cpu_s'])
        self.assertEqual(io['end_mb'], b['host_io']['end_mb'])
        self.assertEqual(900, b['balloon']['usable_mb'])
        self.assertIsNone(b['balloon']['disk_caches_mb'])
        self.assertIn('host_read_mb_s', ov['timeline'][B][-1])

    def test_guest_without_agent_is_managed_from_its_balloon(self):
        mgr, logs = self.ticking()
        self.b.agent_error = fakes.libvirt_error(
            libvirt.VIR_ERR_ARGUMENT_UNSUPPORTED,
            'QEMU guest agent is not configured')
        self.b.balloon_stats = {'available': 1000 * 1024,
                                'usable': 700 * 1024,
                                'disk_caches': 400 * 1024,
                                'major_fault': 5}
        mgr.get_report()
        self.b.rd_bytes += 30 << 20
        rep = mgr.get_report()
        entry = rep['guests'][1]
        self.assertEqual('missing', entry['agent'])
        self.assertEqual(report.BALLOON_SOURCE, entry['sample']['source'])
        guest = report.parse_host(rep).guest(B)
        self.assertTrue(guest.host_only)
        self.assertTrue(guest.has_data)
        self.assertFalse(guest.has_guest_counters)
        # Its floor is what the balloon reports in use, plus the margin.
        self.assertEqual(300, guest.sample.used_mb)
        self.assertEqual(300, guest.sample.committed_mb)
        self.assertEqual(400, guest.sample.inactive_file_mb)
        # The reads are the host's: 30 MiB over the window.
        rates = model.rates(guest)
        self.assertAlmostEqual(30 / rates.interval_s, rates.disk_read_mb_s)
        self.assertTrue(mgr.get_overview()['instances'][1]['host_only'])
        mgr.set_balloon(B, 768)  # managed: not refused for lack of data
        self.assertEqual(768 * 1024, self.b.actual_kib)
        self.assertEqual(1, logs.output.count(B), logs.output)
        self.assertIn('host-measured reads only', logs.output)
        # Without the balloon's levels it is left alone, as before.
        del self.b.balloon_stats['disk_caches']
        entry = mgr.get_report()['guests'][1]
        self.assertNotIn('sample', entry)

    def test_claims_the_host_disproves_are_flagged_once(self):
        mgr, logs = self.ticking()
        mgr.get_report()
        for step in range(1, 4):
            # B says it read 10 GiB more each time; QEMU read 1 MiB.
            self.b_says_pgpgin(98324 + step * 10 << 20)
            self.b.rd_bytes += 1 << 20
            rep = mgr.get_report()
        a, b = rep['guests']
        self.assertNotIn('claims', a)
        self.assertTrue(b['claims'].startswith(claims.DISAGREE))
        self.assertIn('QEMU read', b['claims'])
        ov = mgr.get_overview()['instances'][1]
        self.assertTrue(ov['problem'].startswith(claims.DISAGREE))
        self.assertIsNone(ov['floor_mb'])
        self.assertEqual(1, logs.output.count(B), logs.output)
        # Still claiming at the change: not believed, so not moved.
        self.b_says_pgpgin(98324 + 4 * 10 << 20)
        self.assertRaises(controllers.Refused, mgr.set_balloon, B, 1000)

    def test_counters_going_backwards_are_flagged(self):
        mgr, logs = self.ticking()
        mgr.get_report()
        self.b_says_pgpgin(5)
        rep = mgr.get_report()
        self.assertTrue(rep['guests'][1]['claims'].startswith(
            claims.BACKWARDS))
        self.assertIn('sample', rep['guests'][1])
        ov = mgr.get_overview()['instances'][1]
        self.assertTrue(ov['claims'].startswith(claims.BACKWARDS))
        self.assertIsNone(mgr.get_overview()['instances'][0]['claims'])
        self.assertEqual(1, logs.output.count(B), logs.output)

    def test_a_guest_whose_counters_the_host_belied_is_flagged(self):
        # Utility mode kept that it holds B (policy.distrust) until far
        # beyond this report: the report and the overview say why.
        mgr, logs = self.ticking()
        mgr.get_report()
        mgr.save_policy_state({B: {utility.STATE_KEY: {
            distrust.UNTIL_KEY: 1e9, distrust.TIMES_KEY: 1}}})
        a, b = mgr.get_report()['guests']
        self.assertNotIn('claims', a)
        self.assertTrue(b['claims'].startswith(claims.DISAGREE), b)
        self.assertIn('grows only as the host measured', b['claims'])
        self.assertIn('sample', b)
        ov = mgr.get_overview()['instances'][1]
        self.assertTrue(ov['claims'].startswith(claims.DISAGREE))
        self.assertEqual(1, logs.output.count(B), logs.output)

    def test_rates_use_an_old_enough_previous_sample(self):
        clock = iter(range(0, 1000, 4))
        mgr = self.manager(min_rate_interval=10)
        mgr.monitor.clock = lambda: float(next(clock))
        stamps = []
        for _ in range(5):
            guest = mgr.get_report()['guests'][0]
            stamps.append((guest['sample']['timestamp'],
                           guest['previous'] and
                           guest['previous']['timestamp']))
        # Each report takes the clock for the report and each guest.
        for now, previous in stamps[1:]:
            self.assertIsNotNone(previous)
        now, previous = stamps[-1]
        self.assertGreaterEqual(now - previous, 10)

    def test_reads_the_host_cache_served_over_a_window(self):
        clock = iter(range(0, 1000, 10))
        mgr = self.manager(min_rate_interval=10, host_cache_min_read_mb=16)
        mgr.monitor.clock = lambda: float(next(clock))
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.agent.collectors.domains.qemu_pid',
            lambda name, pid_dir=None: 4242 if name == 'guest-a' else None))
        io = os.path.join(self.root, 'proc', '4242', 'io')
        os.makedirs(os.path.dirname(io))

        def counters(guest_mib, storage_mib):
            self.a.rd_bytes = guest_mib << 20
            with open(io, 'w') as f:
                f.write('rchar: 1\nread_bytes: %d\nwrite_bytes: 0\n'
                        % (storage_mib << 20))

        # cache='none': every read reaches storage, nothing is cached twice.
        counters(100, 100)
        self.assertIsNone(mgr.get_report()['guests'][0]['host_cache'])
        self.a.disk_cache = 'writeback'
        counters(200, 200)
        first = mgr.get_report()['guests']
        self.assertEqual([None, None], [g['host_cache'] for g in first])
        # 64 MiB read by the guest, 16 MiB of it from storage.
        counters(264, 216)
        svc = mgr.get_report()['guests'][0]['host_cache']
        self.assertEqual(
            {'disks': ['vda'], 'guest_read_mb': 64.0,
             'storage_read_mb': 16.0, 'hit_ratio': 0.75,
             'double_caching': True},
            {k: v for k, v in svc.items() if k != 'window_s'})
        self.assertGreaterEqual(svc['window_s'], 10)
        view = report.parse_host(mgr.get_report())
        self.assertEqual(('vda',), view.guests[0].host_cache.disks)
        # Too little read to tell: reported, neither ratio nor flag.
        counters(268, 216)
        mgr.get_report()
        svc = mgr.get_report()['guests'][0]['host_cache']
        self.assertEqual((None, False),
                         (svc['hit_ratio'], svc['double_caching']))

    def test_policy_state_round_trip_and_limits(self):
        mgr = self.manager()
        mgr.save_policy_state({A: {'margin': {'m': 64}}})
        mgr.save_policy_state({A: {'other': 1}})
        self.assertEqual({'margin': {'m': 64}, 'other': 1},
                         mgr.get_report()['guests'][0]['policy_state'])
        self.assertRaises(controllers.Refused, mgr.save_policy_state,
                          {A: {'x': 'y' * 20000}})
        self.assertRaises(controllers.Refused, mgr.save_policy_state, [1])


class TestLastReport(ManagerTestCase):
    """What an audit gets: the newest collection, never a new one."""

    def test_served_from_the_newest_collection_with_its_age(self):
        mgr = self.counting()
        mgr.collect()
        first, second = mgr.last_report(), mgr.last_report()
        self.assertEqual(1, len(mgr.collections))
        self.assertEqual(first['timestamp'], second['timestamp'])
        self.assertGreaterEqual(second['age_s'], first['age_s'])
        self.assertEqual([A, B], [g['uuid'] for g in first['guests']])
        self.assertNotIn('age_s', mgr._last[1])  # the kept one is intact
        # Policy state the last audit saved since is in the next report.
        mgr.save_policy_state({A: {'margin': {'m': 1}}})
        self.assertEqual({'margin': {'m': 1}},
                         mgr.last_report()['guests'][0]['policy_state'])
        self.assertEqual(1, len(mgr.collections))

    def test_compact_form_says_the_same_at_a_fraction_of_the_bytes(self):
        # Two collections: the guests have previous samples.
        mgr, _ = self.ticking()
        mgr.collect()
        mgr.collect()
        full = mgr.last_report()
        small = json.loads(json.dumps(compact.compact(full)))
        self.assertIsNotNone(report.parse_host(full).guests[0].previous)
        self.assertEqual(report.parse_host(full),
                         report.parse_host(compact.expand(small)))
        # Previous samples repeating the current ones, and host facts for
        # operators (disks, balloon statistics, accounting): 3.9 KB here.
        self.assertLess(len(json.dumps(small)), 0.6 * len(json.dumps(full)))

    def test_refused_when_no_collection_comes(self):
        mgr = self.counting(report_wait=0.05)
        self.assertRaises(controllers.NoCollection, mgr.last_report)
        self.assertEqual([], mgr.collections)

    def test_a_change_is_never_reported_from_before_it(self):
        mgr = self.counting(report_wait=0.05)
        for change in (lambda: mgr.set_balloon(A, 768),
                       lambda: mgr.set_balloons(
                           [{'instance': A, 'target_mb': 640}]),
                       lambda: mgr.revert_balloons([A], 'none')):
            mgr.collect()
            mgr._wake.clear()
            change()
            self.assertTrue(mgr._wake.is_set())
            self.assertRaises(controllers.NoCollection, mgr.last_report)
        mgr.collect()
        guest = [g for g in mgr.last_report()['guests'] if g['uuid'] == A]
        self.assertEqual(640, guest[0]['actual_mb'])

    def test_the_loop_collects_at_start_and_after_a_change(self):
        # An interval no test waits out: only the start and the change
        # can make the collections the reports show.
        mgr = self.counting(collect_interval=3600, report_wait=60)
        mgr.start()
        self.addCleanup(mgr.stop)
        self.assertEqual(1024, mgr.last_report()['guests'][0]['actual_mb'])
        mgr.set_balloon(A, 768)
        self.assertEqual(768, mgr.last_report()['guests'][0]['actual_mb'])


class TestBalloon(ManagerTestCase):

    def test_shrink_record_revert(self):
        mgr = self.manager()
        answer = mgr.set_balloon(A, 768, 'test')
        self.assertEqual({'previous_mb': 1024, 'actual_mb': 768}, answer)
        entry = mgr.get_state()['instances'][A]['balloon']
        self.assertEqual((768, 1024, 1024), (entry['target_mb'],
                                             entry['previous_mb'],
                                             entry['original_mb']))
        mgr.set_balloon(A, 512)
        entry = mgr.get_state()['instances'][A]['balloon']
        self.assertEqual((512, 768, 1024), (entry['target_mb'],
                                            entry['previous_mb'],
                                            entry['original_mb']))
        # Reverts undo newest first (a plan that resized A twice and failed
        # is undone to where it started; on the all-in-one cloud the
        # second revert used to redo the first).
        mgr.revert(A, 'balloon')
        self.assertEqual(768 * 1024, self.a.actual_kib)
        entry = mgr.get_state()['instances'][A]['balloon']
        self.assertEqual((768, 1024), (entry['target_mb'],
                                       entry['previous_mb']))
        mgr.revert(A, 'balloon')
        self.assertEqual(1024 * 1024, self.a.actual_kib)
        self.assertNotIn(A, mgr.get_state()['instances'])
        self.assertRaises(controllers.Refused, mgr.revert, A, 'balloon')

    def test_revert_by_change_id_undoes_that_change_only(self):
        mgr = self.manager()
        mgr.set_balloon(A, 768, change_id='c1')
        mgr.set_balloon(A, 512, change_id='c2')
        # Never recorded (refused, or lost before the agent got it):
        # nothing is undone in its place.
        self.assertRaises(controllers.Refused, mgr.set_balloon, A, 100,
                          change_id='c3')
        self.assertEqual({'not_applied': 'c3'},
                         mgr.revert(A, 'balloon', change_id='c3'))
        self.assertEqual(512 * 1024, self.a.actual_kib)
        # Not the newest: a later change would be undone instead.
        self.assertRaises(controllers.Refused, mgr.revert, A, 'balloon',
                          change_id='c1')
        mgr.revert(A, 'balloon', change_id='c2')
        self.assertEqual(768 * 1024, self.a.actual_kib)
        # Reverted already: answered, nothing undone twice.
        self.assertEqual({'not_applied': 'c2'},
                         mgr.revert(A, 'balloon', change_id='c2'))
        self.assertEqual(768 * 1024, self.a.actual_kib)
        mgr.revert(A, 'balloon', change_id='c1')
        self.assertEqual(1024 * 1024, self.a.actual_kib)
        self.assertNotIn(A, mgr.get_state()['instances'])

    def test_a_record_without_change_ids_still_reverts(self):
        # Written by an agent before change ids: one undo step, no ids.
        self.a.actual_kib = 768 * 1024
        mgr = self.manager()
        mgr.state.record(A, 'balloon', {
            'target_mb': 768, 'previous_mb': 1024, 'original_mb': 1024,
            'max_mb': 1024})
        mgr.set_balloon(A, 512, change_id='c1')
        mgr.revert(A, 'balloon', change_id='c1')
        self.assertEqual(768 * 1024, self.a.actual_kib)
        self.assertEqual({'not_applied': 'old'},
                         mgr.revert(A, 'balloon', change_id='old'))
        mgr.revert(A, 'balloon')
        self.assertEqual(1024 * 1024, self.a.actual_kib)

    def test_a_batch_shrinks_first_and_reverts_as_one(self):
        self.a.actual_kib = 512 * 1024
        # Room for nothing more than the guests hold now: B's grow fits
        # only because A's shrink before it freed the memory.
        mgr = self.manager(reserved_host_memory_mb=16384 - 1536)
        answer = mgr.set_balloons(
            [{'instance': B, 'target_mb': 768, 'reason': 'b gives'},
             {'instance': 'gone', 'target_mb': 512},
             {'instance': A, 'target_mb': 768, 'reason': 'a gets'}],
            change_id='c1')
        self.assertEqual({B: {'previous_mb': 1024, 'actual_mb': 768},
                          A: {'previous_mb': 512, 'actual_mb': 768}},
                         answer['changed'])
        self.assertEqual(['gone'], answer['gone'])
        self.assertEqual('a gets', mgr.get_state()['instances'][A][
            'balloon']['reason'])
        # A grow beyond what the shrinks free is refused; the shrinks
        # listed after it still went first, and stay for the revert.
        self.assertRaises(controllers.Refused, mgr.set_balloons,
                          [{'instance': A, 'target_mb': 1024},
                           {'instance': B, 'target_mb': 640}], '', 'c2')
        self.assertEqual((768 * 1024, 640 * 1024),
                         (self.a.actual_kib, self.b.actual_kib))
        mgr.revert_balloons([A, B], 'c2')
        self.assertEqual(768 * 1024, self.b.actual_kib)
        # Reverted as one: the grow first, then the shrink that made room.
        answers = mgr.revert_balloons([B, A], 'c1')
        self.assertEqual([A, B], list(answers))
        self.assertEqual((512 * 1024, 1024 * 1024),
                         (self.a.actual_kib, self.b.actual_kib))
        self.assertEqual({'not_applied': 'c1'},
                         mgr.revert_balloons([B], 'c1')[B])

    def test_guards(self):
        mgr = self.manager(**{'watcher_cams_guards.max_step_mb': 512})
        for target in (1025, 100, 400, -1, 600.0, '700', None):
            self.assertRaises(controllers.Refused, mgr.set_balloon, A,
                              target)
        self.assertEqual(1024 * 1024, self.a.actual_kib)
        self.assertEqual({}, mgr.get_state()['instances'])
        self.assertRaises(controllers.UnknownInstance, mgr.set_balloon,
                          'nope', 512)
        self.assertRaises(controllers.Refused, mgr.revert, A, 'balloon')

    def test_guest_without_data_is_never_shrunk(self):
        self.a.agent_error = fakes.libvirt_error(86, 'not connected')
        mgr = self.manager()
        exc = self.assertRaises(controllers.Refused, mgr.set_balloon, A, 768)
        self.assertIn('trustworthy', str(exc))
        self.assertEqual(1024 * 1024, self.a.actual_kib)

    def test_capacity_guard(self):
        self.a.actual_kib = 512 * 1024
        # Room for exactly 100 MiB more than the guests hold now.
        mgr = self.manager(reserved_host_memory_mb=16384 - 1536 - 100)
        self.assertRaises(controllers.Refused, mgr.set_balloon, A, 768)
        mgr.set_balloon(A, 600)
        self.assertEqual(600 * 1024, self.a.actual_kib)

    def test_balloon_that_does_not_follow_fails_and_can_revert(self):
        self.a.balloon_follows = False
        mgr = self.manager()
        exc = self.assertRaises(controllers.ChangeFailed, mgr.set_balloon,
                                A, 768)
        self.assertIn('not 768', str(exc))
        self.assertEqual(1024, mgr.get_state()['instances'][A]['balloon'][
            'previous_mb'])

    def test_disabled_refuses_and_restores(self):
        mgr = self.manager()
        mgr.set_balloon(A, 768)
        mgr.set_affinity(A, [1])
        disabled = self.manager(enabled=False)
        self.assertRaises(controllers.Refused, disabled.set_balloon, A, 512)
        self.assertRaises(controllers.Refused, disabled.set_affinity, A, [0])
        disabled.restore_all()
        self.assertEqual(1024 * 1024, self.a.actual_kib)
        self.assertEqual([(True, True)], self.a.pins)
        self.assertEqual({}, disabled.get_state()['instances'])

    def test_restarted_guest_gets_its_target_back(self):
        mgr = self.manager()
        mgr.set_balloon(A, 768)
        self.a.actual_kib = 1024 * 1024  # a new QEMU with the full size
        self.a.pid = 4242
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.agent.collectors.domains.qemu_pid',
            lambda name, pid_dir=None: 4242))
        mgr.cycle()
        self.assertEqual(768 * 1024, self.a.actual_kib)
        mgr.cycle()  # recorded: nothing more to do
        self.assertEqual(4242, mgr.get_state()['instances'][A]['balloon'][
            'qemu_pid'])

    def test_resized_guest_loses_the_stale_target_and_affinity(self):
        mgr = self.manager()
        mgr.set_balloon(A, 768)
        mgr.set_affinity(A, [1])
        # Nova resized it: a new QEMU with another flavor.
        self.a.max_mb, self.a.actual_kib = 2048, 2048 * 1024
        self.a.vcpus = 2
        self.a.pins = [(True, True)] * 2
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.agent.collectors.domains.qemu_pid',
            lambda name, pid_dir=None: 4243))
        mgr.cycle()
        self.assertEqual(2048 * 1024, self.a.actual_kib)
        self.assertEqual([(True, True)] * 2, self.a.pins)
        self.assertEqual({}, mgr.get_state()['instances'].get(A, {}))

    def test_state_of_deleted_instances_is_forgotten(self):
        mgr = self.manager()
        mgr.set_balloon(A, 768)
        self.a.gone = True
        mgr.cycle()
        self.assertEqual({}, mgr.get_state()['instances'])


class TestPinning(ManagerTestCase):

    def test_pin_revert(self):
        mgr = self.manager()
        mgr.set_affinity(A, [1])
        self.assertEqual([(False, True)], self.a.pins)
        self.assertEqual((False, True), self.a.emulator)
        self.assertFalse(mgr.get_report()['guests'][0]['dedicated'])
        mgr.revert(A, 'affinity')
        self.assertEqual([(True, True)], self.a.pins)
        self.assertNotIn(A, mgr.get_state()['instances'])
        # Two changes, two reverts: back to the first, then the original.
        mgr.set_affinity(A, [1])
        mgr.set_affinity(A, [0])
        self.assertEqual([(True, False)], self.a.pins)
        mgr.revert(A, 'affinity')
        self.assertEqual([(False, True)], self.a.pins)
        mgr.revert(A, 'affinity')
        self.assertEqual([(True, True)], self.a.pins)
        self.assertNotIn(A, mgr.get_state()['instances'])

    def test_pin_revert_by_change_id(self):
        mgr = self.manager()
        mgr.set_affinity(A, [1], change_id='p1')
        self.assertEqual({'not_applied': 'p0'},
                         mgr.revert(A, 'affinity', change_id='p0'))
        self.assertEqual([(False, True)], self.a.pins)
        mgr.set_affinity(A, [0], change_id='p2')
        self.assertRaises(controllers.Refused, mgr.revert, A, 'affinity',
                          change_id='p1')
        mgr.revert(A, 'affinity', change_id='p2')
        mgr.revert(A, 'affinity', change_id='p1')
        self.assertEqual([(True, True)], self.a.pins)
        self.assertNotIn(A, mgr.get_state()['instances'])

    def test_dedicated_detection(self):
        def domain(pins, host_cpus=4):
            return type('D', (), {'vcpu_cpus': pins,
                                  'host_cpus': host_cpus})()
        self.assertTrue(pinning.is_dedicated(domain([[1], [2]]), ()))
        self.assertFalse(pinning.is_dedicated(domain([[1], [2]]), (),
                                              recorded=True))
        self.assertFalse(pinning.is_dedicated(domain([[1], [1]]), ()))
        self.assertFalse(pinning.is_dedicated(domain([[0, 1]]), ()))
        self.assertTrue(pinning.is_dedicated(domain([[2, 3]]), (2, 3)))
        self.assertFalse(pinning.is_dedicated(domain([[1, 2]]), (2, 3)))
        self.assertFalse(pinning.is_dedicated(domain([[0]], 1), ()))

    def test_refusals(self):
        self.a.pins = [(False, True)]
        mgr = self.manager()
        self.assertRaises(controllers.Refused, mgr.set_affinity, A, [0, 1])
        for cpus in ([], [2], ['0'], 0, None):
            self.assertRaises(controllers.Refused, mgr.set_affinity, B, cpus)


class TestState(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_survives_a_restart_and_writes_atomically(self):
        store = state_store.StateStore(self.dir)
        store.record(A, 'balloon', {'target_mb': 1})
        self.assertEqual(['agent-state.json', 'agent-state.lock'],
                         sorted(os.listdir(self.dir)))
        self.assertEqual({'target_mb': 1},
                         state_store.StateStore(self.dir).get(A, 'balloon'))
        store.forget(A, 'balloon')
        self.assertEqual({}, state_store.StateStore(self.dir).all())

    def test_corrupt_file_is_kept_aside(self):
        with open(os.path.join(self.dir, 'agent-state.json'), 'w') as f:
            f.write('{"format": 1, "instan')
        store = state_store.StateStore(self.dir)
        self.assertEqual({}, store.all())
        self.assertTrue(os.path.exists(os.path.join(
            self.dir, 'agent-state.json.corrupt')))
        with open(os.path.join(self.dir, 'agent-state.json'), 'w') as f:
            json.dump({'format': 99}, f)
        self.assertEqual({}, state_store.StateStore(self.dir).all())

    def test_failed_write_keeps_memory_and_disk_consistent(self):
        store = state_store.StateStore(self.dir)
        store.record(A, 'balloon', {'target_mb': 1})
        self.useFixture(fixtures.MockPatch('os.replace',
                                           side_effect=OSError('disk full')))
        self.assertRaises(OSError, store.record, A, 'balloon',
                          {'target_mb': 2})
        self.assertEqual({'target_mb': 1}, store.get(A, 'balloon'))
        self.assertEqual(['agent-state.json', 'agent-state.lock'],
                         sorted(os.listdir(self.dir)))

    def test_a_second_process_sees_and_keeps_the_other_changes(self):
        # The agent and nova-compute's driver extension share the file.
        agent = state_store.StateStore(self.dir)
        agent.record(A, 'balloon', {'target_mb': 1})
        nova = state_store.StateStore(self.dir)
        nova.forget(A, 'balloon')
        self.assertEqual({}, agent.get(A))
        writers = [multiprocessing.Process(target=_record_many,
                                           args=(self.dir, n, 40))
                   for n in range(2)]
        for writer in writers:
            writer.start()
        _record_many(self.dir, 2, 40)
        for writer in writers:
            writer.join(60)
            self.assertEqual(0, writer.exitcode)
        self.assertEqual(120, len(agent.all()))

    def test_reading_an_absent_state_creates_nothing(self):
        missing = os.path.join(self.dir, 'never-written')
        store = state_store.StateStore(missing)
        self.assertEqual({}, store.all())
        store.forget(A)
        self.assertFalse(os.path.exists(missing))


def _record_many(directory, writer, count):
    """Record ``count`` instances from one process (a lost update shows)."""
    store = state_store.StateStore(directory)
    for n in range(count):
        store.record('%d-%d' % (writer, n), 'balloon', {'target_mb': n})


class TestAccounting(testtools.TestCase):

    def test_ksm_savings_count_with_a_safety_factor(self):
        host = factory.host(ram_mb=8192, guests=[
            factory.guest(1, max_mb=4096, actual_mb=4096),
            factory.guest(2, max_mb=4096, actual_mb=3072)],
            ksm=model.KsmStats(pages_sharing=256 * 1024))
        cfg = guards_conf.guard_config(make_conf('/nonexistent'))
        acct = accounting.account(host, cfg, {factory.uid(1): 10})
        self.assertEqual(1024.0, acct.ksm_saved_mb)
        self.assertEqual(512, acct.ksm_promisable_mb)
        self.assertEqual(8192 + 512, acct.capacity_mb)
        self.assertEqual(8192 + 512 - 7168, acct.promisable_mb)
        self.assertTrue(acct.may_grow(acct.promisable_mb))
        self.assertFalse(acct.may_grow(acct.promisable_mb + 1))
        self.assertEqual(0, acct.overcommit_mb)
        self.assertAlmostEqual(10 * 4096 / 2 ** 20,
                               acct.merged_mb(factory.uid(1)))
        self.assertEqual(acct.promisable_mb, acct.as_dict()['promisable_mb'])


class TestOverview(ManagerTestCase):

    def test_what_operators_see_of_the_host(self):
        mgr = self.manager()
        self.b.files['/proc/meminfo'] = b'not meminfo'
        ov = mgr.get_overview()
        self.assertEqual(('unit', 1, True),
                         (ov['host'], ov['version'], ov['enabled']))
        self.assertEqual(16384, ov['memory']['ram_mb'])
        self.assertEqual(16384 - 512, ov['memory']['capacity_mb'])
        self.assertEqual(2048, ov['memory']['guests_actual_mb'])
        a, b = ov['instances']
        self.assertEqual((A, 'guest-a', 1024, 1024, 'ok'),
                         (a['uuid'], a['name'], a['max_mb'], a['actual_mb'],
                          a['agent']))
        # Cached 109220 kB; the floor is what the agent's guards keep.
        self.assertEqual(106.7, a['cache_mb'])
        self.assertEqual(19.5, a['active_file_mb'])
        cfg = guards_conf.guard_config(mgr.conf)
        self.assertEqual(max(cfg.min_guest_mb, 20 + cfg.floor_margin_mb),
                         a['floor_mb'])
        self.assertEqual([0, 1], a['cpus'])
        # Without a previous sample there are no rates yet.
        self.assertIsNone(a['disk_read_mb_s'])
        # A guest whose agent gave nonsense: kept, figures null, and why.
        self.assertEqual('bad-data', b['agent'])
        self.assertIn('meminfo', b['problem'])
        self.assertEqual((None, None), (b['cache_mb'], b['floor_mb']))
        # Two one-CPU caches: an unpinned guest is inside neither.
        self.assertEqual([[], []], [g['instances'] for g in ov['llc']])
        mgr.set_affinity(A, [1], 'test')
        ov = mgr.get_overview()
        self.assertEqual([[], [A]], [g['instances'] for g in ov['llc']])

    def test_timeline_one_point_per_interval_and_since(self):
        now = [1000.0]
        mgr = self.manager(min_rate_interval=10, collect_interval=30)
        mgr.monitor.clock = lambda: now[0]
        for step in range(7):
            now[0] = 1000.0 + 4 * step
            mgr.get_report()
        # Reports 4 s apart: a point at 1000, 1012 and 1024 only.
        ov = mgr.get_overview()
        self.assertEqual([1000.0, 1012.0, 1024.0],
                         [p['t'] for p in ov['timeline'][A]])
        last = ov['timeline'][A][-1]
        self.assertEqual(1024, last['actual_mb'])
        self.assertEqual(106.7, last['cache_mb'])
        self.assertEqual(0.0, last['disk_read_mb_s'])
        self.assertEqual([1024.0], [p['t'] for p in mgr.get_overview(
            since=1012.0)['timeline'][A]])
        self.b.gone = True
        mgr.get_report()
        self.assertEqual([A], list(mgr.get_overview()['timeline']))

    def test_bounded_and_fresh_collections_reused(self):
        now = [0.0]
        mgr = self.manager(min_rate_interval=1, timeline_points=3)
        mgr.monitor.clock = lambda: now[0]
        for step in range(5):
            now[0] = float(step)
            mgr.get_report()
        self.assertEqual([2.0, 3.0, 4.0],
                         [p['t'] for p in mgr.get_overview()['timeline'][A]])
        # Within collect_interval of the last collection the overview
        # costs no guest-agent call.
        calls = []
        self.useFixture(fixtures.MockPatch(
            'libvirt_qemu.qemuAgentCommand',
            lambda *args: calls.append(args) or fakes.agent_command(*args)))
        mgr.get_overview()
        self.assertEqual([], calls)
        mgr._last = (mgr._last[0] - 31,) + mgr._last[1:]
        mgr.get_overview()
        self.assertNotEqual([], calls)


class TestPlan(ManagerTestCase):
    """An audit's request planned from the newest collection (API 1.5)."""

    def request(self, params, **scope):
        instances = {u: planning.instance_scope(None, True, False)
                     for u in (A, B)}
        instances.update(scope)
        return json.loads(json.dumps(planning.request(
            params, guards.GuardConfig(), instances, 0)))

    def test_plans_without_collecting_and_keeps_the_policy_state(self):
        mgr = self.counting()
        mgr.collect()
        mgr.collect()
        request = self.request(margin.MarginParams())
        answer = json.loads(json.dumps(mgr.plan(request)))
        self.assertEqual(2, len(mgr.collections))
        self.assertIn('age_s', answer)
        done = planning.parse_answer(answer, 'unit', request['instances'])
        self.assertEqual(2, done.audited_instances)
        self.assertEqual({A, B}, {m.instance for m in done.plan.moves})
        # The margin controller's state is kept here, for the next audit.
        saved = mgr.state.get(A, 'policy_state')
        self.assertIn(planning.MARGIN_STATE_KEY, saved)
        self.assertEqual(saved,
                         mgr.last_report()['guests'][0]['policy_state'])

    def test_instances_outside_the_request_are_left_alone(self):
        mgr = self.counting()
        mgr.collect()
        mgr.collect()
        request = self.request(margin.MarginParams())
        del request['instances'][B]
        done = planning.parse_answer(mgr.plan(request), 'unit',
                                     request['instances'])
        self.assertEqual([A], [m.instance for m in done.plan.moves])

    def test_a_bad_request_is_refused(self):
        mgr = self.counting()
        mgr.collect()
        request = self.request(margin.MarginParams())
        for bad in (dict(request, planner='nope'),
                    dict(request, params={'up_mb': -1}),
                    dict(request, guards={'min_guest_mb': 'x'}),
                    dict(request, instances=[]),
                    dict(request, reserved_mb=-1)):
            self.assertRaises(controllers.Refused, mgr.plan, bad)
