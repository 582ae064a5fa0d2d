import random

import testtools

from watcher_cams.lab.sim import cache


class TestLruCache(testtools.TestCase):
    def test_uniform_hit_ratio_is_cache_over_working_set(self):
        # The textbook result: LRU under uniform independent access to N
        # blocks with a cache of C blocks hits C / N of the time.
        rng = random.Random(3)
        for size, blocks in ((100, 400), (250, 1000), (50, 60)):
            c = cache.LruCache(size)
            for _ in range(5 * blocks):
                c.access(int(rng.random() * blocks))
            c.hits = c.misses = 0
            for _ in range(40000):
                c.access(int(rng.random() * blocks))
            ratio = c.hits / (c.hits + c.misses)
            self.assertAlmostEqual(size / blocks, ratio, delta=0.015)

    def test_evicts_least_recent(self):
        c = cache.LruCache(2)
        for b in (1, 2, 1, 3):
            c.access(b)
        self.assertEqual([1, 3], list(c.blocks))
        c.resize(1)
        self.assertEqual([3], list(c.blocks))


class TestLinuxCache(testtools.TestCase):
    def test_uniform_hit_ratio_matches_lru(self):
        # With uniform access, recency carries no information: the two-list
        # cache also hits about C / N.
        rng = random.Random(5)
        c = cache.LinuxCache(200)
        for _ in range(4000):
            c.access(int(rng.random() * 800))
        c.hits = c.misses = 0
        for _ in range(40000):
            c.access(int(rng.random() * 800))
        self.assertAlmostEqual(0.25, c.hits / (c.hits + c.misses),
                               delta=0.02)

    def test_second_access_promotes(self):
        c = cache.LinuxCache(10)
        self.assertFalse(c.access(1))
        self.assertIn(1, c.inactive)
        self.assertTrue(c.access(1))
        self.assertIn(1, c.active)
        self.assertNotIn(1, c.inactive)

    def test_scan_does_not_flush_the_active_list(self):
        # A one-time scan passes through the inactive list; pages read twice
        # survive it (what LRU would not do).
        c = cache.LinuxCache(100)
        for b in range(20):
            c.access(b)
            c.access(b)
        for b in range(1000, 5000):
            c.access(b)
        self.assertTrue(all(b in c for b in range(20)))

    def test_refault_within_active_size_is_activated(self):
        c = cache.LinuxCache(4)
        for b in (1, 1, 2, 2):      # 1 and 2 active
            c.access(b)
        for b in (10, 11, 12):      # 10 evicted, leaving a shadow
            c.access(b)
        self.assertNotIn(10, c)
        self.assertIn(10, c.shadow)
        c.access(10)
        self.assertEqual(1, c.refaults)
        self.assertEqual(1, c.activations)
        self.assertIn(10, c.active)

    def test_far_refault_counts_but_is_not_activated(self):
        c = cache.LinuxCache(2)
        c.access(1)
        for b in range(100, 103):
            c.access(b)
        self.assertIn(1, c.shadow)
        c.access(1)
        self.assertEqual((1, 0), (c.refaults, c.activations))
        self.assertIn(1, c.inactive)

    def test_shadow_entries_are_bounded(self):
        c = cache.LinuxCache(10, shadow_factor=1.0)
        for b in range(1000):
            c.access(b)
        self.assertLessEqual(len(c.shadow), 10)

    def test_shrink_evicts_inactive_first(self):
        c = cache.LinuxCache(6)
        for b in (1, 1, 2, 2, 3, 4, 5, 6):
            c.access(b)
        c.resize(3)
        self.assertEqual(3, len(c))
        self.assertIn(1, c)
        self.assertIn(2, c)

    def test_inactive_ratio_follows_the_kernel(self):
        self.assertEqual(1, cache.inactive_ratio(0.5))
        self.assertEqual(3, cache.inactive_ratio(1))
        self.assertEqual(10, cache.inactive_ratio(10))
