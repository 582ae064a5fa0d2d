"""The agent against real libvirt/QEMU guests with a real guest agent."""

import json
import os
import time

import fixtures
import libvirt

from tests.functional import base
from tests.functional import env
from watcher_cams.agent.collectors import host as host_collector
from watcher_cams.agent import controllers
from watcher_cams.lab import double_caching
from watcher_cams.lab import guests as lab_guests
from watcher_cams.policy import claims
from watcher_cams.policy import guards
from watcher_cams.policy import report as report_format
from watcher_cams.policy import utility


def wait_for(predicate, timeout=60.0, step=0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def agent_answers(dom):
    """Whether the guest agent answers a ping within a second."""
    try:
        lab_guests.agent_command(dom, '{"execute": "guest-ping"}', timeout=1)
        return True
    except libvirt.libvirtError:
        return False


class TestCollect(base.AgentTestCase):

    def test_report_of_two_guests(self):
        report = self.manager().get_report()
        view = report_format.parse_host(report)
        self.assertEqual('functional', view.name)
        for uuid in self.lab.uuids():
            guest = env.guest(report, uuid)
            self.assertEqual('ok', guest['agent'], guest['error'])
            self.assertEqual(env.GUEST_MB, guest['max_mb'])
            self.assertEqual(env.GUEST_MB, guest['actual_mb'])
            self.assertIn('actual', guest['balloon'])
            self.assertIn('disk_caches', guest['balloon'])
            self.assertEqual('none', guest['disks'][0]['cache'])
            self.assertGreater(guest['disks'][0]['rd_req'], 0)
            self.assertTrue(os.path.exists('/proc/%d' % guest['qemu_pid']))
            meminfo = guest['sample']['meminfo']
            # MemTotal is what the guest kernel sees: below the balloon size
            # by its own reservations, never above.
            self.assertLess(meminfo['MemTotal'], env.GUEST_MB * 1024)
            self.assertGreater(meminfo['MemTotal'], env.GUEST_MB * 1024 / 2)
            self.assertGreater(meminfo['Committed_AS'], 0)
            self.assertIn('some_avg10', guest['sample']['psi'])
            self.assertTrue(view.guest(uuid).has_data)
        self.assertTrue(report['topology']['llc'])
        self.assertEqual(report['accounting']['guests_actual_mb'],
                         sum(g['actual_mb'] for g in report['guests']))

    def test_second_report_has_previous_sample(self):
        manager = self.manager(min_rate_interval=1)
        manager.get_report()
        time.sleep(1.1)
        guest = env.guest(manager.get_report(), self.lab.uuids()[0])
        self.assertIsNotNone(guest['previous'])
        self.assertGreaterEqual(guest['sample']['timestamp']
                                - guest['previous']['timestamp'], 1.0)

    def test_page_cache_counters_move_after_read_load(self):
        manager = self.manager()
        uuid = self.lab.uuids()[0]
        code, _ = lab_guests.guest_exec(
            self.lab.a, 'sync; echo 3 > /proc/sys/vm/drop_caches')
        self.assertEqual(0, code)
        before = env.guest(manager.get_report(), uuid)['sample']
        code, _ = lab_guests.guest_exec(self.lab.a, 'cat /mnt/data >/dev/null')
        self.assertEqual(0, code)
        entry = env.guest(manager.get_report(), uuid)
        after = entry['sample']
        data_kb = os.path.getsize(self.lab.image.data) // 1024 - 32 * 1024
        # QEMU counted the same reads on the host, without the guest.
        io = entry['host_io']
        self.assertGreater(io['read_mb_s'] * io['window_s'] * 1024,
                           0.9 * data_kb)
        self.assertGreater(io['read_req_s'], 0)
        grown = after['meminfo']['Cached'] - before['meminfo']['Cached']
        read = after['vmstat']['pgpgin'] - before['vmstat']['pgpgin']
        file_lru = (after['meminfo']['Active(file)']
                    + after['meminfo']['Inactive(file)'])
        self.assertGreater(grown, 0.9 * data_kb)
        self.assertGreater(read, 0.9 * data_kb)
        self.assertGreater(file_lru, 0.9 * data_kb)

    def test_the_host_measures_the_cpu_time_a_guest_runs(self):
        # One guest reads its (cached) data over and over, the other idles:
        # neither reads from disk, and only their CPU time tells them apart.
        busy, idle = self.lab.a, self.lab.b
        code, _ = lab_guests.guest_exec(busy, 'cat /mnt/data >/dev/null')
        self.assertEqual(0, code)
        code, out = lab_guests.guest_exec(
            busy, "setsid sh -c 'while :; do cat /mnt/data >/dev/null; "
            "done' </dev/null >/dev/null 2>&1 & echo $!")
        self.assertEqual(0, code, out)
        self.addCleanup(lab_guests.guest_exec, busy,
                        'kill %d; true' % int(out.split()[-1]))
        manager = self.manager(min_rate_interval=1)
        manager.get_report()
        time.sleep(5)
        report = manager.get_report()
        cpu = {dom: env.guest(report, dom.UUIDString())['host_io']['cpu_s']
               for dom in (busy, idle)}
        # A vCPU kept busy runs most of a CPU (less on a loaded host);
        # an idle one a few percent, even under TCG, and up to a tenth
        # when the host is loaded and its guest agent answers the
        # collection meanwhile.
        self.assertGreater(cpu[busy], 0.25, cpu)
        self.assertLess(cpu[idle], min(0.2, cpu[busy] / 3), cpu)
        self.assertGreater(cpu[idle], 0.0, cpu)
        view = report_format.parse_host(report)
        self.assertEqual(cpu[idle], view.guest(
            idle.UUIDString()).host_io.cpu_s)

    def test_the_host_measures_the_memory_a_guest_touches(self):
        # A guest of its own re-reads 200 MiB of its RAM (a tmpfs file)
        # over and over, a lab guest idles: the host sees the first touch
        # all of it within a window, from QEMU's referenced bits alone.
        # Its own guest, so that the shared ones keep their memory as the
        # other tests left it.
        busy, idle = self.lab.boot('touch'), self.lab.b
        self.addCleanup(lambda: lab_guests.destroy_all(
            self.lab.conn, env.PREFIX + 'touch'))
        lab_guests.wait_for_agent(busy, timeout=300)
        code, out = lab_guests.guest_exec(
            busy, 'dd if=/dev/urandom of=/tmp/touch bs=1M count=200 '
            '2>/dev/null; setsid sh -c \'while :; do md5sum /tmp/touch; '
            'done\' </dev/null >/dev/null 2>&1 & echo $!', timeout=120)
        self.assertEqual(0, code, out)
        manager = self.manager(min_rate_interval=1, touched_window=20)

        def windows():
            report = manager.get_report()
            found = {dom: env.guest(report, dom.UUIDString())['host_io']
                     for dom in (busy, idle)}
            if all(io and io['touched'] for io in found.values()):
                return report, {dom: io['touched']
                                for dom, io in found.items()}
            time.sleep(2)
        report, found = wait_for(windows, timeout=120)
        self.assertGreaterEqual(found[busy]['mb'], 200, found)
        self.assertGreaterEqual(found[busy]['half_mb'], 200, found)
        self.assertLess(found[idle]['mb'], found[busy]['mb'] - 150, found)
        self.assertGreaterEqual(found[busy]['window_s'], 20)
        self.assertEqual(env.GUEST_MB, found[busy]['least_mb'])
        view = report_format.parse_host(report)
        self.assertEqual(found[idle]['mb'], view.guest(
            idle.UUIDString()).host_io.touched.mb)
        shown = {i['uuid']: i['host_touched_mb']
                 for i in manager.get_overview()['instances']}
        self.assertGreaterEqual(shown[busy.UUIDString()], 200, shown)

    def test_guest_without_agent_is_managed_from_the_host_and_may_vanish(
            self):
        # No guest-agent channel for libvirt: the lab reaches its shell
        # through a channel of its own (lab_guests.LAB_CHANNEL).
        dom = self.lab.boot('noagent', agent=False)
        uuid = dom.UUIDString()
        self.addCleanup(lambda: lab_guests.destroy_all(
            self.lab.conn, env.PREFIX + 'noagent'))
        lab_guests.wait_for_agent(dom, timeout=300)
        logs = self.useFixture(fixtures.FakeLogger(
            name='watcher_cams.agent.monitor'))
        manager = self.manager(min_rate_interval=1)
        # The balloon's statistics come once its driver reported them.
        self.assertTrue(wait_for(lambda: 'sample' in env.guest(
            manager.get_report(), uuid), timeout=60))
        before = env.guest(manager.get_report(), uuid)
        self.assertEqual('missing', before['agent'])
        self.assertEqual(report_format.BALLOON_SOURCE,
                         before['sample']['source'])
        code, _ = lab_guests.guest_exec(dom, 'cat /mnt/data >/dev/null')
        self.assertEqual(0, code)
        data_kb = os.path.getsize(self.lab.image.data) // 1024 - 32 * 1024
        # The balloon refreshes its levels every stats period.
        self.assertTrue(wait_for(lambda: env.guest(
            manager.get_report(), uuid)['sample']['meminfo']['Cached']
            - before['sample']['meminfo']['Cached'] > 0.9 * data_kb,
            timeout=30))
        report = manager.get_report()
        after = env.guest(report, uuid)['sample']
        # Its reads are QEMU's count, not the guest's word.
        self.assertGreater(after['vmstat']['pgpgin']
                           - before['sample']['vmstat']['pgpgin'],
                           0.9 * data_kb)
        guest = report_format.parse_host(report).guest(uuid)
        self.assertTrue(guest.host_only and guest.has_data)
        self.assertFalse(guest.has_guest_counters)
        self.assertIn('host-measured reads only', logs.output)
        self.assertEqual(1, logs.output.count(uuid), logs.output)
        self.assertTrue(manager.get_overview()['instances'][[
            g['uuid'] for g in report['guests']].index(uuid)]['host_only'])
        # Managed: the balloon moves, down to what the balloon says is in
        # use plus the margin (its floor), never below.
        floor = guards.floor_mb(guest, guards.GuardConfig())
        in_use_mb = (after['meminfo']['MemTotal']
                     - after['meminfo']['MemAvailable']) / 1024
        self.assertGreaterEqual(floor, in_use_mb)
        self.assertRaises(controllers.Refused, manager.set_balloon, uuid,
                          floor - 64)
        manager.set_balloon(uuid, env.GUEST_MB - 128)
        self.assertAlmostEqual(env.GUEST_MB - 128,
                               dom.memoryStats()['actual'] // 1024, delta=8)
        dom.destroy()
        report = manager.get_report()
        self.assertNotIn(uuid, [g['uuid'] for g in report['guests']])
        self.assertRaises(controllers.UnknownInstance,
                          manager.set_balloon, uuid, 256)

    def test_hung_guest_agent_is_a_timeout_then_recovers(self):
        uuid = self.lab.uuids()[0]
        manager = self.manager(guest_agent_timeout=1)
        # Freeze qemu-ga from inside the guest; the shell doing it outlives
        # the frozen agent and thaws it freeze_s seconds later. The report is
        # taken once the agent is seen frozen (a TCG guest on a busy host
        # may take seconds to run the shell), and must not wait for it.
        # Seen frozen: two pings in a row unanswered. One alone can be a
        # guest busy starting that shell (a CI run took its report before
        # the freeze, and the agent answered).
        freeze_s = 45
        lab_guests.agent_command(self.lab.a, json.dumps({
            'execute': 'guest-exec', 'arguments': {
                'path': '/bin/sh', 'arg': ['-c', 'p=$(pidof qemu-ga); '
                                           'kill -STOP $p; sleep %d; '
                                           'kill -CONT $p' % freeze_s]}}))
        frozen_at = time.monotonic()
        self.assertTrue(wait_for(
            lambda: not (agent_answers(self.lab.a)
                         or agent_answers(self.lab.a)),
            timeout=freeze_s / 3, step=0))
        guest = env.guest(manager.get_report(), uuid)
        self.assertLess(time.monotonic() - frozen_at, freeze_s)
        self.assertIn(guest['agent'], ('timeout', 'missing'), guest)
        self.assertNotIn('sample', guest)
        self.assertRaises(controllers.Refused, manager.set_balloon, uuid,
                          env.GUEST_MB - 128)
        recovered = wait_for(lambda: env.guest(
            manager.get_report(), uuid)['agent'] == 'ok', timeout=180)
        self.assertTrue(recovered)


class TestHostCache(base.AgentTestCase):
    """What the host's page cache serves of a writeback disk's reads."""

    def test_cold_then_warm_host_cache(self):
        dom = self.lab.boot('wb', disk_cache='writeback')
        self.addCleanup(lab_guests.destroy_all, self.lab.conn,
                        env.PREFIX + 'wb')
        lab_guests.wait_for_agent(dom, timeout=180)
        uuid = dom.UUIDString()
        for path in (self.lab.image.data, os.path.join(
                self.lab.workdir, env.PREFIX + 'wb.qcow2')):
            double_caching.drop_host_cache(path)
        manager = self.manager(min_rate_interval=1,
                               host_cache_min_read_mb=16)
        data_mb = os.path.getsize(self.lab.image.data) / (1 << 20) - 32

        def read_all(drop_guest_cache):
            manager.get_report()
            time.sleep(1.1)
            command = 'cat /mnt/data >/dev/null'
            if drop_guest_cache:
                command = 'echo 3 >/proc/sys/vm/drop_caches; ' + command
            code, _ = lab_guests.guest_exec(dom, command)
            self.assertEqual(0, code)
            svc = env.guest(manager.get_report(), uuid)['host_cache']
            self.assertEqual(['vda'], svc['disks'])
            self.assertGreater(svc['guest_read_mb'], 0.9 * data_mb, svc)
            self.assertTrue(svc['double_caching'], svc)
            return svc

        # The host has not read the disk yet: storage serves the reads.
        cold = read_all(drop_guest_cache=False)
        self.assertLess(cold['hit_ratio'], 0.3, cold)
        self.assertGreater(cold['storage_read_mb'], 0.7 * data_mb, cold)
        # The guest forgot the data, the host did not: its cache serves it.
        warm = read_all(drop_guest_cache=True)
        self.assertGreater(warm['hit_ratio'], 0.8, warm)
        # Disks that bypass the host cache are not reported.
        self.assertIsNone(env.guest(manager.get_report(),
                                    self.lab.uuids()[0])['host_cache'])


class TestBalloon(base.AgentTestCase):

    def test_down_and_back_up(self):
        manager = self.manager()
        uuid = self.lab.uuids()[1]
        before = env.guest(manager.get_report(), uuid)
        answer = manager.set_balloon(uuid, env.GUEST_MB - 192, 'test')
        self.assertEqual(env.GUEST_MB, answer['previous_mb'])
        self.assertLessEqual(abs(answer['actual_mb'] - (env.GUEST_MB - 192)),
                             4)
        self.assertBalloon(env.GUEST_MB - 192, self.lab.b)
        shrunk = env.guest(manager.get_report(), uuid)
        # The guest sees its memory shrink.
        self.assertLess(shrunk['sample']['meminfo']['MemTotal'],
                        before['sample']['meminfo']['MemTotal'] - 150 * 1024)
        state = manager.get_state()['instances'][uuid]['balloon']
        self.assertEqual(env.GUEST_MB - 192, state['target_mb'])
        self.assertEqual(env.GUEST_MB, state['previous_mb'])

        # A restarted agent knows what it did and can revert it.
        restarted = self.manager()
        answer = restarted.revert(uuid, 'balloon')
        self.assertEqual(env.GUEST_MB, answer['actual_mb'])
        self.assertBalloon(env.GUEST_MB, self.lab.b)
        self.assertNotIn(uuid, restarted.get_state()['instances'])
        with open(os.path.join(self.state_dir, 'agent-state.json')) as f:
            self.assertEqual({}, json.load(f)['instances'])

    def test_guards_refuse_bad_requests(self):
        manager = self.manager(**{
            'watcher_cams_guards.max_step_mb': 256})
        uuid = self.lab.uuids()[1]
        for target in (env.GUEST_MB + 1, 64, env.GUEST_MB - 300, -5, '400'):
            self.assertRaises(controllers.Refused, manager.set_balloon, uuid,
                              target)
        self.assertBalloon(env.GUEST_MB, self.lab.b)
        self.assertEqual({}, manager.get_state()['instances'])

    def test_capacity_guard_refuses_growth_of_a_full_host(self):
        manager = self.manager()
        uuid = self.lab.uuids()[1]
        manager.set_balloon(uuid, env.GUEST_MB - 256)
        total_mb = manager.get_report()['memory']['total_mb']
        # Reserve all the RAM and promise no KSM savings: no room to grow.
        full = self.manager(**{
            'reserved_host_memory_mb': total_mb,
            'watcher_cams_guards.ksm_safety_factor': 1.0})
        self.assertRaises(controllers.Refused, full.set_balloon, uuid,
                          env.GUEST_MB - 128)
        self.assertBalloon(env.GUEST_MB - 256, self.lab.b)

    def test_disabled_agent_refuses_and_restores_on_start(self):
        manager = self.manager()
        uuid = self.lab.uuids()[1]
        manager.set_balloon(uuid, env.GUEST_MB - 128)
        manager.set_affinity(uuid, [0])
        disabled = self.manager(enabled=False)
        self.assertRaises(controllers.Refused, disabled.set_balloon, uuid,
                          256)
        disabled.start()
        self.addCleanup(disabled.stop)
        self.assertBalloon(env.GUEST_MB, self.lab.b)
        self.assertTrue(all(self.lab.b.vcpuPinInfo(0)[0]))
        self.assertEqual({}, disabled.get_state()['instances'])

    def test_target_reapplied_after_guest_restart(self):
        manager = self.manager()
        uuid = self.lab.uuids()[1]
        manager.set_balloon(uuid, env.GUEST_MB - 128)
        manager.set_affinity(uuid, [1])
        # Nova hard reboot: a new QEMU with the full size and no pinning.
        self.lab.b.destroy()
        self.lab.b = self.lab.boot('b', uuid=uuid)
        lab_guests.wait_for_agent(self.lab.b, timeout=180)
        self.assertBalloon(env.GUEST_MB, self.lab.b)
        manager.cycle()
        self.assertBalloon(env.GUEST_MB - 128, self.lab.b)
        self.assertEqual([[1]], [[c for c, on in enumerate(m) if on]
                                 for m in self.lab.b.vcpuPinInfo(0)])


class TestPinning(base.AgentTestCase):

    def test_pin_and_unpin(self):
        manager = self.manager()
        uuid = self.lab.uuids()[0]
        before = env.guest(manager.get_report(), uuid)
        answer = manager.set_affinity(uuid, [1], 'test')
        self.assertEqual([1], answer['cpus'])
        after = env.guest(manager.get_report(), uuid)
        self.assertEqual([[1]], after['cpus'])
        self.assertEqual([1], after['emulator_cpus'])
        self.assertFalse(after['dedicated'])
        manager.revert(uuid, 'affinity')
        back = env.guest(manager.get_report(), uuid)
        self.assertEqual(before['cpus'], back['cpus'])
        self.assertEqual(before['emulator_cpus'], back['emulator_cpus'])

    def test_dedicated_instances_are_refused(self):
        uuid = self.lab.uuids()[0]
        # Nova's dedicated policy pins each vCPU to its own host CPU.
        self.lab.a.pinVcpu(0, (False, True))
        manager = self.manager()
        self.assertTrue(env.guest(manager.get_report(), uuid)['dedicated'])
        self.assertRaises(controllers.Refused, manager.set_affinity, uuid,
                          [0, 1])
        # And so is one inside the configured dedicated set.
        manager = self.manager(dedicated_cpus=['1'], shared_cpus=['0'])
        self.assertRaises(controllers.Refused, manager.set_affinity, uuid,
                          [0])

    def test_cpus_outside_the_shared_set_are_refused(self):
        manager = self.manager(shared_cpus=['1'])
        uuid = self.lab.uuids()[0]
        for cpus in ([0], [], [1, 99], ['1'], 'x'):
            self.assertRaises(controllers.Refused, manager.set_affinity,
                              uuid, cpus)


class TestForgedProc(base.AgentTestCase):
    """A guest whose root forges /proc gains nothing from it.

    Its root bind-mounts crafted files over /proc/vmstat and
    /proc/pressure/memory (as LXCFS does over /proc/meminfo), read through
    the guest agent as usual: huge reads and refaults, PSI 100, while QEMU
    reads next to nothing for it.
    """

    FORGED_MB = 10240  # claimed read per report, in MiB

    def forge(self, dom, step):
        pages = step * self.FORGED_MB * 256
        vmstat = ('pgpgin %d\npgmajfault 0\nworkingset_refault_file %d\n'
                  'workingset_activate_file %d\n'
                  % (step * self.FORGED_MB * 1024, pages, pages))
        code, _ = lab_guests.guest_exec(
            dom, "printf '%s' > /tmp/vmstat.forged; printf 'some avg10=100.00"
            " avg60=100.00 avg300=100.00 total=%d\\nfull avg10=100.00 avg60="
            "100.00 avg300=100.00 total=%d\\n' > /tmp/psi.forged"
            % (vmstat.replace('\n', '\\n'), step * 10 ** 9, step * 10 ** 9))
        self.assertEqual(0, code)

    def mount_forgeries(self, dom):
        self.forge(dom, 1)
        code, out = lab_guests.guest_exec(
            dom, 'mount -o bind /tmp/vmstat.forged /proc/vmstat && '
            'mount -o bind /tmp/psi.forged /proc/pressure/memory && '
            'grep pgpgin /proc/vmstat')
        self.assertEqual(0, code, out)
        self.addCleanup(lab_guests.guest_exec, dom,
                        'umount /proc/vmstat; umount /proc/pressure/memory')

    def test_forged_counters_gain_nothing_and_are_flagged(self):
        liar, honest = self.lab.a, self.lab.b
        liar_uuid, honest_uuid = liar.UUIDString(), honest.UUIDString()
        # The liar below its flavor and no free memory on the host: it
        # could grow only by taking from its neighbour. Its data cached
        # and little free memory left beside it, whatever the tests before
        # left: a guest with free memory would take nothing, liar or not.
        code, _ = lab_guests.guest_exec(liar, 'cat /mnt/data >/dev/null')
        self.assertEqual(0, code)
        liar_mb = env.GUEST_MB - 192
        liar.setMemoryFlags(liar_mb * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertBalloon(liar_mb, liar)
        total_mb = host_collector.meminfo_kb()['MemTotal'] // 1024
        manager = self.manager(
            min_rate_interval=1,
            reserved_host_memory_mb=total_mb - liar_mb - env.GUEST_MB)
        self.mount_forgeries(liar)
        manager.get_report()
        time.sleep(1.5)
        self.forge(liar, 2)
        report = manager.get_report()

        entry = env.guest(report, liar_uuid)
        self.assertTrue(entry['claims'].startswith(claims.DISAGREE),
                        entry.get('claims'))
        self.assertNotIn('claims', env.guest(report, honest_uuid))
        view = report_format.parse_host(report)
        moves = {m.instance: m.delta_mb
                 for m in utility.plan(view, manager.cfg).moves}
        self.assertEqual(0, moves.get(liar_uuid, 0))
        self.assertEqual(0, moves.get(honest_uuid, 0))
        overview = {i['uuid']: i for i in manager.get_overview()['instances']}
        self.assertTrue(
            overview[liar_uuid]['problem'].startswith(claims.DISAGREE))
        # The premise: had the host measured what the liar claims, the
        # allocator would have given it its neighbour's memory.
        entry['host_io']['read_mb_s'] = entry['host_io']['read_mb_s'] + (
            self.FORGED_MB / entry['host_io']['window_s'])
        believed = report_format.parse_host(report)
        moves = {m.instance: m.delta_mb
                 for m in utility.plan(believed, manager.cfg).moves}
        self.assertGreater(moves.get(liar_uuid, 0), 0)
