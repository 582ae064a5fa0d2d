"""Host, KSM and sharing collectors on fake /proc and /sys trees."""

import os
import struct

import fixtures
import testtools

from watcher_cams.agent.collectors import host
from watcher_cams.agent.collectors import ksm
from watcher_cams.agent.collectors import sharing


def write(root, path, text, mode='w'):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, mode) as f:
        f.write(text)


def fake_cpus(root, sockets=2, l3_per_socket=2, cpus_per_l3=2):
    """A multi-socket topology: L1d/L2 per CPU, L3 shared by a group."""
    cpu = 0
    total = sockets * l3_per_socket * cpus_per_l3
    write(root, 'sys/devices/system/cpu/online', '0-%d\n' % (total - 1))
    for socket in range(sockets):
        for _ in range(l3_per_socket):
            group = list(range(cpu, cpu + cpus_per_l3))
            for member in group:
                base = 'sys/devices/system/cpu/cpu%d/' % member
                write(root, base + 'topology/physical_package_id',
                      '%d\n' % socket)
                for index, (level, kind, shared) in enumerate((
                        (1, 'Data', str(member)),
                        (1, 'Instruction', str(member)),
                        (2, 'Unified', str(member)),
                        (3, 'Unified', '%d-%d' % (group[0], group[-1])))):
                    cache = base + 'cache/index%d/' % index
                    write(root, cache + 'level', '%d\n' % level)
                    write(root, cache + 'type', kind + '\n')
                    write(root, cache + 'shared_cpu_list', shared + '\n')
            cpu += cpus_per_l3


class TestHost(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_cpu_lists(self):
        self.assertEqual([0, 1, 2, 3, 8, 10, 11],
                         host.parse_cpu_list('0-3,8, 10-11'))
        self.assertEqual([], host.parse_cpu_list(''))
        for bad in ('a', '3-1', '1-', '-1', '0-70000'):
            self.assertRaises(ValueError, host.parse_cpu_list, bad)

    def test_two_sockets_four_llcs(self):
        fake_cpus(self.root)
        domains = host.llc_domains(self.root)
        self.assertEqual([
            {'name': 'L3-s0-0', 'socket': 0, 'cpus': [0, 1]},
            {'name': 'L3-s0-1', 'socket': 0, 'cpus': [2, 3]},
            {'name': 'L3-s1-0', 'socket': 1, 'cpus': [4, 5]},
            {'name': 'L3-s1-1', 'socket': 1, 'cpus': [6, 7]}], domains)

    def test_configured_caches_replace_sysfs(self):
        online = list(range(8))
        self.assertEqual([
            {'name': 'LLC-cfg-0', 'socket': 0, 'cpus': [0, 1, 4]},
            {'name': 'LLC-cfg-1', 'socket': 0, 'cpus': [2, 3]}],
            host.configured_llc_domains('0-1,4; 2-3;', online))
        self.assertRaisesRegex(ValueError, 'not online: \\[9\\]',
                               host.configured_llc_domains, '0;9', online)
        self.assertRaisesRegex(ValueError, 'in two caches: \\[1\\]',
                               host.configured_llc_domains, '0-1;1-2',
                               online)
        self.assertRaises(ValueError, host.configured_llc_domains, '0;x',
                          online)

    def test_no_cache_information_gives_one_domain_per_cpu(self):
        write(self.root, 'sys/devices/system/cpu/online', '0-1\n')
        self.assertEqual([[0], [1]],
                         [d['cpus'] for d in host.llc_domains(self.root)])

    def test_real_machine(self):
        domains = host.llc_domains()
        cpus = sorted(c for d in domains for c in d['cpus'])
        self.assertEqual(host.online_cpus(), cpus)
        self.assertGreater(host.meminfo_kb()['MemTotal'], 0)


class TestKsm(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_counters(self):
        self.assertIsNone(ksm.host_counters(self.root))
        for name, value in (('pages_sharing', 10), ('pages_shared', 2),
                            ('run', 1)):
            write(self.root, 'sys/kernel/mm/ksm/' + name, '%d\n' % value)
        counters = ksm.host_counters(self.root)
        self.assertEqual(10, counters['pages_sharing'])
        self.assertEqual(0, counters['pages_volatile'])

    def test_process_merging_pages(self):
        self.assertIsNone(ksm.process_merging_pages(None, self.root))
        self.assertIsNone(ksm.process_merging_pages(42, self.root))
        write(self.root, 'proc/42/ksm_merging_pages', '17\n')
        self.assertEqual(17, ksm.process_merging_pages(42, self.root))
        write(self.root, 'proc/42/ksm_stat',
              'ksm_rmap_items 5\nksm_merging_pages 23\n')
        self.assertEqual(23, ksm.process_merging_pages(42, self.root))


PRESENT = 1 << 63
KSM_FLAG = 1 << 21


class TestSharing(testtools.TestCase):
    """Two fake QEMU processes whose guest RAM maps some KSM frames."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        flags = [0] * 64
        for pfn in (10, 11, 12, 20, 30):
            flags[pfn] = KSM_FLAG
        write(self.root, 'proc/kpageflags',
              struct.pack('<64Q', *flags), 'wb')
        # Guest RAM at page 16..24 (8 pages); a smaller heap and a file.
        self.process(1, [10, 11, 12, 40, 41, None, 20, 0])
        self.process(2, [11, 12, 30, 20, 50, None, None, 51])

    def process(self, pid, pfns):
        write(self.root, 'proc/%d/maps' % pid,
              '00001000-00003000 rw-p 00000000 00:00 0 [heap]\n'
              '00004000-00006000 r-xp 00000000 08:01 77 /usr/bin/qemu\n'
              '00010000-00018000 rw-p 00000000 00:00 0 \n'
              '00020000-00021000 rw-p 00000000 00:00 0\n')
        entries = [0] * 0x18
        for i, pfn in enumerate(pfns):
            entries[0x10 + i] = 0 if pfn is None else PRESENT | pfn
        write(self.root, 'proc/%d/pagemap' % pid,
              struct.pack('<%dQ' % len(entries), *entries), 'wb')

    def test_guest_ram_is_the_largest_anonymous_mapping(self):
        self.assertEqual((0x10000, 0x18000),
                         sharing.guest_ram_mapping(1, self.root))

    def test_pairwise_intersections(self):
        frames = sharing.guest_ksm_frames({'a': 1, 'b': 2}, root=self.root)
        self.assertEqual((8, {10, 11, 12, 20}), frames['a'])
        self.assertEqual((8, {11, 12, 20, 30}), frames['b'])
        self.assertEqual([('a', 'b', 3)], sharing.pairwise(frames))

    def test_processes_with_nothing_merged_are_not_walked(self):
        frames = sharing.guest_ksm_frames({'a': 1, 'b': 2}, root=self.root,
                                          merged={'a': 0, 'b': None})
        self.assertEqual((8, set()), frames['a'])
        self.assertEqual((8, {11, 12, 20, 30}), frames['b'])
        self.assertEqual([], sharing.pairwise(frames))

    def test_hidden_pfns_mean_not_root(self):
        self.process(3, [0] * 8)
        self.assertRaises(sharing.SharingError, sharing.guest_ksm_frames,
                          {'c': 3}, root=self.root)

    def test_process_without_anonymous_mapping(self):
        write(self.root, 'proc/4/maps',
              '00004000-00006000 r-xp 00000000 08:01 77 /usr/bin/qemu\n')
        self.assertRaises(sharing.SharingError, sharing.guest_ram_mapping,
                          4, self.root)
