"""Double caching: reads through host-cached disks, served or not."""

import testtools

from watcher_cams.policy import host_cache
from watcher_cams.policy import report

MB = 1 << 20


def disk(dev, cache, rd_mb):
    return {'dev': dev, 'cache': cache, 'rd_bytes': rd_mb * MB}


class TestHostCache(testtools.TestCase):

    def sample(self, t, disks, qemu_mb, pid=7):
        return host_cache.io_sample(t, pid, disks, qemu_mb * MB)

    def test_only_disks_that_keep_the_host_cache_count(self):
        self.assertIsNone(self.sample(0, [disk('vda', 'none', 10)], 10))
        self.assertIsNone(self.sample(0, [disk('vda', 'directsync', 1)], 1))
        for mode in ('writeback', 'writethrough', 'unsafe', 'default'):
            s = self.sample(0, [disk('vda', mode, 1)], 1)
            self.assertEqual(['vda'], s['disks'], mode)
        self.assertIsNone(host_cache.io_sample(
            0, None, [disk('vda', 'writeback', 1)], 1))
        self.assertIsNone(host_cache.io_sample(
            0, 7, [disk('vda', 'writeback', 1)], None))

    def test_uncached_disks_reads_are_taken_off_the_process_count(self):
        before = self.sample(0, [disk('vda', 'writeback', 100),
                                 disk('vdb', 'none', 50)], 150)
        # vda: 100 MiB more, vdb: 40 MiB more; QEMU read 40 + 10 MiB.
        after = self.sample(20, [disk('vda', 'writeback', 200),
                                 disk('vdb', 'none', 90)], 200)
        svc = host_cache.service(after, before, min_read_mb=16)
        self.assertEqual((('vda',), 20, 100.0, 10.0),
                         (svc.disks, svc.window_s, svc.guest_read_mb,
                          svc.storage_read_mb))
        self.assertAlmostEqual(0.9, svc.hit_ratio)
        self.assertTrue(svc.double_caching)
        self.assertTrue(host_cache.lfu_candidate(svc, 0.95))
        self.assertFalse(host_cache.lfu_candidate(svc, 0.5))

    def test_readahead_beyond_the_reads_clamps_to_zero(self):
        before = self.sample(0, [disk('vda', 'writeback', 0)], 0)
        after = self.sample(10, [disk('vda', 'writeback', 64)], 80)
        self.assertEqual(0.0, host_cache.service(after, before, 16).hit_ratio)

    def test_no_window(self):
        d = [disk('vda', 'writeback', 64)]
        s = self.sample(10, d, 64)
        self.assertIsNone(host_cache.service(s, None, 16))
        self.assertIsNone(host_cache.service(None, s, 16))
        # No time, QEMU restarted, counters going back, disks changed.
        self.assertIsNone(host_cache.service(s, s, 16))
        self.assertIsNone(host_cache.service(
            self.sample(20, d, 64, pid=8), s, 16))
        self.assertIsNone(host_cache.service(
            self.sample(20, [disk('vda', 'writeback', 1)], 64), s, 16))
        self.assertIsNone(host_cache.service(
            self.sample(20, d + [disk('vdb', 'writeback', 0)], 64), s, 16))

    def test_too_little_read_gives_no_ratio(self):
        before = self.sample(0, [disk('vda', 'writeback', 0)], 0)
        after = self.sample(10, [disk('vda', 'writeback', 15)], 0)
        svc = host_cache.service(after, before, 16)
        self.assertIsNone(svc.hit_ratio)
        self.assertFalse(svc.double_caching)
        self.assertFalse(host_cache.lfu_candidate(svc, 1.0))
        self.assertFalse(host_cache.lfu_candidate(None, 1.0))
        # Nothing read at all: no ratio even without a minimum.
        idle = host_cache.service(before, self.sample(
            -10, [disk('vda', 'writeback', 0)], 0), 0)
        self.assertIsNone(idle.hit_ratio)

    def test_report_round_trip_and_a_malformed_entry_is_dropped(self):
        before = self.sample(0, [disk('vda', 'writeback', 0)], 0)
        after = self.sample(10, [disk('vda', 'writeback', 64)], 32)
        svc = host_cache.service(after, before, 16)
        self.assertEqual(svc, report.parse_host_cache(svc.as_dict()))
        guest = {'uuid': 'u', 'max_mb': 1024, 'actual_mb': 1024,
                 'agent': 'missing', 'host_cache': svc.as_dict()}
        # Measured on the host: kept when the guest agent is missing.
        self.assertEqual(svc, report.parse_guest(guest).host_cache)
        for bad in ({'disks': 'vda'}, dict(svc.as_dict(), hit_ratio=1.5),
                    dict(svc.as_dict(), window_s=float('nan')), []):
            view = report.parse_guest(dict(guest, host_cache=bad))
            self.assertIsNone(view.host_cache, bad)
