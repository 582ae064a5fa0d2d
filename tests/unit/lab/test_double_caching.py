"""The double-caching experiment's parts that need no guest."""

import os

import fixtures
import testtools

from watcher_cams.lab import double_caching as dc
from watcher_cams.lab import real_guests


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(text)


class TestDoubleCaching(testtools.TestCase):

    def test_reader_commands(self):
        exp = dc.Experiment(reads=100, warm_reads=10)
        plain = dc.reader_command(exp, 'plain')
        self.assertTrue(plain.startswith('cams-reader uniform /lab/data '
                                         '-b 1024 -n 100 -r 0 -s 1 -o '))
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
                    {'guest_mb': 128}):
            self.assertRaises(real_guests.LabError, dc.Experiment, **bad)

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
