"""The double-caching experiment's parts that need no guest."""

import os

import fixtures
import testtools

from watcher_cams.lab import core
from watcher_cams.lab import double_caching as dc


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(text)


class FakeGuest:
    """A domain whose kernel keeps ``overhead_mb`` outside its cache."""

    def __init__(self, actual_mb, overhead_mb):
        self.actual_mb = actual_mb
        self.overhead_mb = overhead_mb
        self.set_kib = []

    def name(self):
        return 'fake'

    def memoryStats(self):
        return {'actual': self.actual_mb * 1024}

    def setMemoryFlags(self, kib, flags):
        self.set_kib.append(kib)
        self.actual_mb = kib // 1024

    def meminfo(self, command, timeout):
        total = self.actual_mb - 30
        return 0, ('MemTotal: %d kB\nMemFree: 1 kB\nMemAvailable: %d kB\n'
                   % (total * 1024, (total - self.overhead_mb) * 1024))


class TestFitGuestCache(testtools.TestCase):

    def fit(self, guest, cache_mb):
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.lab.guests.guest_exec',
            lambda dom, command, timeout: dom.meminfo(command, timeout)))
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.lab.guests.wait_for_balloon'))
        return dc.fit_guest_cache(guest, cache_mb)

    def test_the_guest_keeps_what_its_kernel_needs_plus_the_cache(self):
        # Two kernels that keep 60 and 200 MiB for themselves: both guests
        # end with the same room for page cache.
        for overhead_mb in (60, 200):
            guest = FakeGuest(640, overhead_mb)
            balloon_mb, available_mb = self.fit(guest, 368)
            self.assertEqual(368, available_mb)
            self.assertEqual(368 + overhead_mb + 30, balloon_mb)
            self.assertEqual([balloon_mb * 1024], guest.set_kib)

    def test_a_guest_too_small_for_the_cache_is_refused(self):
        guest = FakeGuest(544, 200)
        exc = self.assertRaises(core.LabError, self.fit, guest, 368)
        self.assertIn('only 314 MiB of 514 MiB available', str(exc))
        self.assertEqual([], guest.set_kib)


class TestDoubleCaching(testtools.TestCase):

    def test_reader_commands(self):
        exp = dc.Experiment(reads=100, warm_reads=10)
        plain = dc.reader_command(exp, 'plain')
        self.assertTrue(plain.startswith('cams-reader uniform /lab/data '
                                         '-b 1024 -n 100 -r 100 -s 1 -o '))
        self.assertNotIn('cams-lfu', plain)
        paper = dc.reader_command(exp, 'lfu-paper')
        self.assertTrue(paper.startswith(
            'cams-lfu -c 336 -b 16 -k 10 -H 100 -C 0 -s /tmp/lfu.status '
            '/lab/data cams-reader uniform'), paper)
        self.assertIn('-H 2000 -C 4 ', dc.reader_command(exp, 'lfu-ours'))

    def test_bad_experiments_are_refused(self):
        for bad in ({'strategies': ('plain', 'magic')},
                    {'warm_reads': 0}, {'warm_reads': 6000},
                    {'lfu_cache_mb': 8}, {'lfu_cache_mb': 512},
                    {'guest_mb': 128}, {'guest_cache_mb': 512},
                    {'guest_cache_mb': 320}, {'reads_per_s': -1}):
            self.assertRaises(core.LabError, dc.Experiment, **bad)

    def test_memory_cgroup_v1_and_v2(self):
        root = self.useFixture(fixtures.TempDir()).path
        write(root, 'proc/7/cgroup', '5:devices:/x\n4:memory:/machine/qemu-1'
              '\n0::/\n')
        self.assertEqual(os.path.join(root, 'sys/fs/cgroup/memory/machine/'
                                      'qemu-1'), dc.memory_cgroup(7, root))
        write(root, 'proc/8/cgroup', '0::/machine.slice/qemu-2\n')
        self.assertEqual(os.path.join(root, 'sys/fs/cgroup/machine.slice/'
                                      'qemu-2'), dc.memory_cgroup(8, root))
        self.assertIsNone(dc.memory_cgroup(9, root))
        v1 = os.path.join(root, 'v1')
        write(v1, 'memory.usage_in_bytes', '1000\n')
        write(v1, 'memory.stat', 'cache 300\nrss 700\n')
        self.assertEqual((1000, 300), dc.cgroup_memory(v1))
        v2 = os.path.join(root, 'v2')
        write(v2, 'memory.current', '2000\n')
        write(v2, 'memory.stat', 'anon 1500\nfile 500\n')
        self.assertEqual((2000, 500), dc.cgroup_memory(v2))

    def test_lfu_status(self):
        status = dc.parse_lfu_status('10 4 6 1 21 21 1\n0,3,5\n')
        self.assertEqual((10, 4, 6, 1, 21, 21, 1, [0, 3, 5]), tuple(
            status[k] for k in ('accesses', 'hits', 'misses', 'swaps',
                                'slots', 'hot', 'done', 'blocks')))
        self.assertEqual([], dc.parse_lfu_status('1 0 1 0 2 0 0\n')[
            'blocks'])
        self.assertRaises(ValueError, dc.parse_lfu_status, 'garbage')

    def test_checks(self):
        rows = [{'strategy': 'plain', 'host_hit_ratio': 0.1},
                {'strategy': 'lfu-paper', 'host_hit_ratio': 0.3},
                {'strategy': 'lfu-ours', 'host_hit_ratio': 0.9}]
        found = dc.checks(rows)
        self.assertEqual([False, True], [ok for _, ok, _ in found])
        self.assertEqual('10% -> 90%', found[1][2])
        self.assertEqual([], dc.checks(rows[1:]))


class PausableDomain:
    """A domain that records whether it ran while its host cache was capped."""

    def __init__(self):
        self.running = True
        self.calls = []

    def suspend(self):
        self.running = False
        self.calls.append('suspend')

    def resume(self):
        self.running = True
        self.calls.append('resume')


class TestCap(testtools.TestCase):

    def run_cap(self, dom, cap, out):
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.lab.double_caching.cap_host_cache', cap))
        run = dc.Run.__new__(dc.Run)
        run.dom, run.exp, run.strategy = dom, dc.Experiment(), 'plain'
        run._cap(1234, 2000, 8.0, out)

    def test_the_guest_reads_nothing_while_the_cache_is_trimmed(self):
        dom, running, lines = PausableDomain(), [], []

        def cap(dom, pid, budget_mb):
            running.append(dom.running)
            return 500, 820
        self.run_cap(dom, cap, lines.append)
        self.assertEqual([False], running)
        self.assertEqual(['suspend', 'resume'], dom.calls)
        self.assertIn('hard limit 820 MiB', lines[0])

    def test_a_failed_cap_leaves_the_guest_running(self):
        dom = PausableDomain()

        def cap(dom, pid, budget_mb):
            raise core.LabError('no memory cgroup')
        self.assertRaises(core.LabError, self.run_cap, dom, cap, print)
        self.assertEqual(['suspend', 'resume'], dom.calls)
        self.assertTrue(dom.running)
