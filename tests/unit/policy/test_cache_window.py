"""What one rate window says of a guest's cache (cache_window)."""

import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import cache_window
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import model
from watcher_cams.policy import mrc
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
PARAMS = utility.UtilityParams()


def resized(guest, prev_total_mb):
    """``guest`` whose previous sample had ``prev_total_mb`` of MemTotal."""
    prev = dataclasses.replace(guest.previous,
                               mem_total_kb=prev_total_mb * factory.MB)
    return dataclasses.replace(guest, previous=prev)


def with_state(guest, **state):
    return dataclasses.replace(guest, policy_state={mrc.STATE_KEY: state})


class TestReadRates(testtools.TestCase):

    def test_refaults_beyond_the_reads_are_scaled_down(self):
        # It claims four times the refaults it has reads: they cannot
        # save more than it reads, so both figures shrink alike.
        g = factory.guest(1, read_mb_s=1.0, refault_s=factory.pages_s(4.0),
                          activate_s=factory.pages_s(2.0))
        disk, refault, activate = cache_window.read_rates_mb_s(
            model.rates(g))
        self.assertAlmostEqual(1.0, disk, places=2)
        self.assertAlmostEqual(1.0, refault, places=2)
        self.assertAlmostEqual(0.5, activate, places=2)

    def test_the_hosts_reads_stand_for_the_guests_claim(self):
        g = factory.guest(1, read_mb_s=9.0, refault_s=factory.pages_s(2.0))
        io = host_io.HostIo(window_s=60.0, start_mb=2048, end_mb=2048,
                            read_mb_s=1.0, read_req_s=10.0)
        disk, refault, _ = cache_window.read_rates_mb_s(model.rates(g), io)
        self.assertEqual(1.0, disk)
        self.assertAlmostEqual(1.0, refault, places=2)


class TestResizedInWindow(testtools.TestCase):

    def test_memtotal_moved_by_a_balloon_step(self):
        g = factory.guest(1, actual_mb=2048)
        self.assertEqual(1, cache_window.resized_in_window(
            resized(g, 1920), None, PARAMS))
        self.assertEqual(-1, cache_window.resized_in_window(
            resized(g, 2176), None, PARAMS))

    def test_less_than_a_resize_is_none(self):
        g = resized(factory.guest(1, actual_mb=2048), 2047)
        self.assertEqual(0, cache_window.resized_in_window(g, None, PARAMS))

    def test_a_window_begun_just_after_a_recorded_resize_echoes_it(self):
        g = factory.guest(1)
        just_after = (g.previous.timestamp - 1, -1)
        self.assertEqual(-1, cache_window.resized_in_window(
            g, just_after, PARAMS))
        long_before = (g.previous.timestamp - PARAMS.settle_s - 1, -1)
        self.assertEqual(0, cache_window.resized_in_window(
            g, long_before, PARAMS))


class TestLastBalloonChange(testtools.TestCase):

    def test_a_size_other_than_at_the_last_plan_is_a_change(self):
        g = with_state(factory.guest(1, actual_mb=2048), size_mb=1792,
                       at=900.0)
        self.assertEqual((900.0, 1), cache_window.last_balloon_change(g))
        self.assertTrue(cache_window.grew_since_plan(g))

    def test_otherwise_the_recorded_one(self):
        g = with_state(factory.guest(1, actual_mb=2048), size_mb=2048,
                       at=900.0, last_resize=[800.0, -1])
        self.assertEqual((800.0, -1), cache_window.last_balloon_change(g))
        self.assertFalse(cache_window.grew_since_plan(g))

    def test_junk_in_the_state_is_no_change(self):
        for state in ({'size_mb': 'x', 'at': 900.0, 'last_resize': 'y'},
                      {'last_resize': [800.0, 7]}):
            g = with_state(factory.guest(1), **state)
            self.assertIsNone(cache_window.last_balloon_change(g))
        self.assertIsNone(cache_window.last_balloon_change(factory.guest(1)))


class TestCacheFilling(testtools.TestCase):

    def test_free_memory_beyond_the_margin_is_filling(self):
        # 1,792 MiB it could cache, 1,024 of them cached.
        g = factory.guest(1, actual_mb=2048, active_mb=512, inactive_mb=512)
        filling, free_mb = cache_window.cache_filling(g, 0.0, CFG)
        self.assertTrue(filling)
        self.assertEqual(2048 - 256 - 1024, free_mb)

    def test_a_full_cache_that_grew_is_filling(self):
        g = factory.guest(1, actual_mb=2048)
        smaller = dataclasses.replace(g.previous, inactive_file_kb=(
            g.previous.inactive_file_kb - 2 * cache_window.GROWTH_MB
            * factory.MB))
        grown = dataclasses.replace(g, previous=smaller)
        self.assertFalse(cache_window.cache_filling(g, 60.0, CFG)[0])
        self.assertTrue(cache_window.cache_filling(grown, 60.0, CFG)[0])
        self.assertTrue(cache_window.cache_grew(grown, 60.0))


class TestFirstPass(testtools.TestCase):

    def test_a_reader_that_read_less_than_its_caches_reach(self):
        # 1,792 MiB of file LRU; it read 120 MiB since it booted.
        g = factory.guest(1, read_mb_s=2.0)
        self.assertTrue(cache_window.first_pass(g.sample, model.rates(g)))

    def test_not_once_it_read_further_or_refaulted(self):
        far = factory.guest(1, read_mb_s=2.0, read_since_boot_mb=8192)
        self.assertFalse(cache_window.first_pass(far.sample,
                                                 model.rates(far)))
        refaults = factory.guest(1, read_mb_s=2.0,
                                 refault_s=factory.pages_s(1.0))
        self.assertFalse(cache_window.first_pass(refaults.sample,
                                                 model.rates(refaults)))


class TestReadRoom(testtools.TestCase):

    def test_no_more_than_the_data_it_read(self):
        # 256 MiB used; it read 600 MiB since it booted and 480 in the
        # window: 1,080 MiB of data at most, and the floor margin.
        g = factory.guest(1, actual_mb=1024, active_mb=300, inactive_mb=420,
                          read_mb_s=8.0, read_since_boot_mb=600)
        self.assertEqual(256 + 1080 + CFG.floor_margin_mb - 1024,
                         cache_window.read_room_mb(g, CFG))
        # Once it holds more than that, nothing more.
        self.assertEqual(0.0, cache_window.read_room_mb(
            dataclasses.replace(g, actual_mb=2048), CFG))

    def test_a_cache_holding_more_than_it_read_counts_what_it_holds(self):
        # It wrote what its cache holds (1,792 MiB), and read 120 MiB.
        g = factory.guest(1, read_mb_s=2.0)
        self.assertEqual(CFG.floor_margin_mb,
                         cache_window.read_room_mb(g, CFG))
