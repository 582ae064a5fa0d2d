import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import stale_active


def counted(guest, before, now):
    """``guest`` whose kernel had activated ``before``, then ``now`` pages."""
    return dataclasses.replace(
        guest,
        previous=dataclasses.replace(guest.previous, pgactivate=before),
        sample=dataclasses.replace(guest.sample, pgactivate=now))


class TestBase(testtools.TestCase):
    """When the workload began, in pages activated (a claim, bounded)."""

    def setUp(self):
        super().setUp()
        self.guest = counted(factory.guest(1, active_mb=630,
                                           inactive_mb=84, actual_mb=1024),
                             1000, 1500)

    def test_a_phase_change_begins_a_workload_at_the_window_start(self):
        self.assertEqual(1000, stale_active.base(
            self.guest, {}, (True, False)))
        self.assertEqual(1000, stale_active.base(
            self.guest, {stale_active.BASE_KEY: 7}, (True, True)))

    def test_kept_from_the_policy_state(self):
        self.assertEqual(700, stale_active.base(
            self.guest, {stale_active.BASE_KEY: 700}, (False, False)))

    def test_a_shrink_s_reactivations_are_not_the_workload_s(self):
        # 500 pages activated in a window the balloon shrank it: its
        # reclaim demoted them and the workload hit them again.
        self.assertEqual(1200, stale_active.base(
            self.guest, {stale_active.BASE_KEY: 700}, (False, True)))
        # Never beyond its counters (a state at the window's start).
        self.assertEqual(1500, stale_active.base(
            self.guest, {stale_active.BASE_KEY: 1200}, (False, True)))

    def test_none_when_never_seen_or_junk(self):
        for state in (None, {}, 'junk', {stale_active.BASE_KEY: 'x'},
                      {stale_active.BASE_KEY: -1},
                      {stale_active.BASE_KEY: True},
                      {stale_active.BASE_KEY: 1.5},
                      # Above its counters: it rebooted, or the state lies.
                      {stale_active.BASE_KEY: 1501}):
            self.assertIsNone(stale_active.base(
                self.guest, state, (False, False)), state)


class TestNeverActivated(testtools.TestCase):

    def test_the_file_lru_less_what_was_activated_since(self):
        guest = counted(factory.guest(1, actual_mb=1024, active_mb=630,
                                      inactive_mb=84), 0, 0)
        self.assertEqual(714.0, stale_active.never_activated_mb(guest, 0))
        # 512 MiB activated since (a scan's second pass).
        guest = counted(guest, 0, factory.pages_s(512))
        self.assertEqual(202.0, stale_active.never_activated_mb(guest, 0))
        # More than it holds: nothing (a page activated twice counts
        # twice).
        self.assertEqual(0.0, stale_active.never_activated_mb(
            guest, -factory.pages_s(1000)))

    def test_nothing_without_a_base(self):
        guest = factory.guest(1, actual_mb=1024, active_mb=630,
                              inactive_mb=84)
        self.assertEqual(0.0, stale_active.never_activated_mb(guest, None))
