import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import rest_hold
from watcher_cams.policy import stale_active
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
HOUR_S = utility.UtilityParams().fill_horizon_s


def running(guest, cpu_s):
    """``guest`` with the host measuring it run ``cpu_s`` CPU s/s."""
    return dataclasses.replace(guest, host_io=host_io.HostIo(
        window_s=60.0, start_mb=guest.actual_mb, end_mb=guest.actual_mb,
        read_mb_s=0.0, read_req_s=0.0, cpu_s=cpu_s))


def rested_since(guest, since):
    return dataclasses.replace(guest, policy_state={
        utility.STATE_KEY: {rest_hold.STATE_KEY: since}})


class TestRestSince(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.guest = factory.guest(1)
        self.now = self.guest.sample.timestamp

    def test_a_rest_begins_now_and_lasts_while_it_rests(self):
        self.assertIsNone(rest_hold.rest_since(self.guest, False))
        self.assertEqual(self.now, rest_hold.rest_since(self.guest, True))
        earlier = rested_since(self.guest, self.now - 600)
        self.assertEqual(self.now - 600, rest_hold.rest_since(earlier, True))
        # Reading again ends it.
        self.assertIsNone(rest_hold.rest_since(earlier, False))

    def test_junk_in_the_state_begins_the_rest_now(self):
        for junk in (self.now + 60, -1, True, 'yesterday', None, [1]):
            self.assertEqual(self.now, rest_hold.rest_since(
                rested_since(self.guest, junk), True), junk)


class TestDensity(testtools.TestCase):

    def test_a_re_read_spread_over_the_rest(self):
        guest = factory.guest(1)
        now = guest.sample.timestamp
        self.assertEqual(0.0, rest_hold.density(guest, None, HOUR_S))
        # A rest shorter than the shortest is spread over the shortest...
        self.assertEqual(1 / HOUR_S, rest_hold.density(guest, now, HOUR_S))
        self.assertEqual(1 / HOUR_S,
                         rest_hold.density(guest, now - 600, HOUR_S))
        # ...and a longer one over all it lasted: it grows cheaper.
        self.assertEqual(1 / (4 * HOUR_S), rest_hold.density(
            guest, now - 4 * HOUR_S, HOUR_S))


class TestHeldFrom(testtools.TestCase):

    def test_its_active_list_is_held(self):
        guest = factory.guest(1, active_mb=1536, inactive_mb=128)
        # Free memory (128 MiB) and its inactive list go first.
        self.assertEqual(2048 - 256 - 1536,
                         rest_hold.held_from_mb(guest, None))

    def test_not_what_its_workload_never_activated(self):
        guest = factory.guest(1, active_mb=1536, inactive_mb=256)
        # Since its workload began it activated 512 MiB: the rest of its
        # active list is an old workload's, which its return never reads.
        base = stale_active.activated(guest.sample) - 512 * 256
        self.assertEqual(2048 - 256 - 512,
                         rest_hold.held_from_mb(guest, base))


class TestRestingGuestInAPlan(testtools.TestCase):
    """A guest that went quiet, its data in its active list."""

    def setUp(self):
        super().setUp()
        self.resting = running(
            factory.guest(2, active_mb=1536, inactive_mb=256), 0.005)
        self.now = self.resting.sample.timestamp

    def given(self, resting, taker_reads_mb_s):
        """MiB ``resting`` gives a far reader, and the plan."""
        taker = factory.guest(1, read_mb_s=taker_reads_mb_s,
                              refault_s=factory.pages_s(taker_reads_mb_s),
                              activate_s=factory.pages_s(
                                  taker_reads_mb_s / 10))
        plan = utility.plan(factory.host([taker, resting]), CFG)
        return -sum(m.delta_mb for m in plan.moves
                    if m.instance == resting.uuid), plan

    def test_it_keeps_its_active_list_from_a_taker_it_saves_little(self):
        curve = utility.value_curve(self.resting, CFG)
        self.assertEqual(self.now, curve.rest_since)
        self.assertAlmostEqual(1 / HOUR_S, curve.hold_density)
        # Its inactive list is free; its active list costs a re-read over
        # an hour, more than a reader that saves 0.23 MiB/s per GiB.
        self.assertEqual(0.0, curve.loss_at(0, 256))
        self.assertAlmostEqual(1 / HOUR_S, curve.loss_at(256, 64))
        given, plan = self.given(self.resting, 2.0)
        self.assertEqual(256, given)
        state = plan.policy_state[self.resting.uuid][utility.STATE_KEY]
        self.assertEqual(self.now, state[rest_hold.STATE_KEY])

    def test_a_long_rest_gives_it(self):
        # Rested ten hours: its return is that much further off.
        later = dataclasses.replace(self.resting, sample=dataclasses.replace(
            self.resting.sample, timestamp=self.now + 36000),
            previous=dataclasses.replace(
                self.resting.previous, timestamp=self.now + 35940))
        given, _ = self.given(rested_since(later, self.now), 2.0)
        self.assertEqual(448, given)

    def test_a_taker_that_saves_more_gets_it_at_once(self):
        self.assertEqual(448, self.given(self.resting, 4.0)[0])

    def test_a_guest_that_runs_holds_nothing(self):
        # Its CPUs busy: its data fits and is read from its cache; what
        # keeps that is its active list as the knee (cache_value), not
        # the rest.
        busy = utility.value_curve(running(self.resting, 0.5), CFG)
        self.assertIsNone(busy.rest_since)
        self.assertEqual(0.0, busy.hold_density)
