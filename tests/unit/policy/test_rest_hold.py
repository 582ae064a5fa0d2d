import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import rest_hold
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
HOUR_S = 3600.0
# The rate window of factory.guest's samples.
WINDOW_S = 60.0


def running(guest, cpu_s):
    """``guest`` with the host measuring it run ``cpu_s`` CPU s/s."""
    return dataclasses.replace(guest, host_io=host_io.HostIo(
        window_s=60.0, start_mb=guest.actual_mb, end_mb=guest.actual_mb,
        read_mb_s=0.0, read_req_s=0.0, cpu_s=cpu_s))


def rested_since(guest, since, **state):
    """``guest`` whose policy state keeps a rest since ``since``."""
    return dataclasses.replace(guest, policy_state={
        utility.STATE_KEY: dict(state, **{rest_hold.STATE_KEY: since})})


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
        for junk in (self.now + 60, True, 'yesterday', None, [1]):
            self.assertEqual(self.now, rest_hold.rest_since(
                rested_since(self.guest, junk), True), junk)


class TestReturned(testtools.TestCase):

    def test_a_guest_back_from_a_rest_has_returned(self):
        guest = factory.guest(1)
        now = guest.sample.timestamp
        self.assertIsNone(rest_hold.returned_at(guest, False))
        self.assertIsNone(rest_hold.returned_at(guest, True))
        # It rested, and reads again: back now.
        rested = rested_since(guest, now - 600)
        self.assertEqual(now, rest_hold.returned_at(rested, False))
        # Resting again, it keeps when it came back.
        again = rested_since(guest, now - 60, returned_at=now - 600)
        self.assertEqual(now - 600, rest_hold.returned_at(again, True))
        for junk in (now + 1, float('nan'), 'then', False):
            self.assertIsNone(rest_hold.returned_at(rested_since(
                guest, now - 60, returned_at=junk), True), junk)


class TestDensity(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.guest = factory.guest(1)
        self.now = self.guest.sample.timestamp
        self.back = self.now - 7200

    def density(self, rest_s, last_s=None):
        return rest_hold.density(
            self.guest, (self.now - rest_s, self.back, last_s), WINDOW_S)

    def test_a_re_read_spread_over_the_rest(self):
        self.assertEqual(0.0, rest_hold.density(
            self.guest, (None, self.back, None), WINDOW_S))
        # A rest shorter than the rate window is spread over the window...
        self.assertEqual(1 / WINDOW_S, self.density(0))
        self.assertEqual(1 / WINDOW_S, self.density(10))
        # ...and a longer one over all it lasted: it grows cheaper.
        self.assertEqual(1 / 600, self.density(600))
        self.assertEqual(1 / (4 * HOUR_S), self.density(4 * HOUR_S))

    def test_the_last_rest_predicts_this_one(self):
        trust = rest_hold.TRUST
        # The last rest lasted an hour: a taker that would save a re-read
        # over an hour gets the cache sooner than the rule alone says,
        # but not at once.
        self.assertEqual(trust / WINDOW_S, self.density(0, HOUR_S))
        self.assertEqual(1 / HOUR_S, self.density(HOUR_S / 2, HOUR_S))
        # It lasted ten minutes: a taker that saves a re-read in that long
        # gets it by halfway through (the rule alone: 1 / 300)...
        self.assertEqual(1 / 600, self.density(300, 600))
        self.assertEqual(1 / 600, self.density(600, 600))
        # ...and one that saves less, which the prediction says never
        # pays, at the latest 1 / TRUST times as late as the rule alone.
        long_s = 2 * 600 / trust ** 2
        self.assertEqual(1 / (trust * long_s), self.density(long_s, 600))

    def test_nothing_held_for_a_guest_never_seen_back(self):
        # A workload that stopped for good holds nothing (random host 1).
        self.assertEqual(0.0, rest_hold.density(
            self.guest, (self.now, None, HOUR_S), WINDOW_S))


class TestRested(testtools.TestCase):

    def test_how_long_its_last_rest_lasted(self):
        guest = factory.guest(1)
        now = guest.sample.timestamp
        self.assertIsNone(rest_hold.rested_s(guest, False))
        # Back now from a rest of ten minutes.
        self.assertEqual(600, rest_hold.rested_s(
            rested_since(guest, now - 600), False))
        # Resting again, it keeps what the state says.
        self.assertEqual(600, rest_hold.rested_s(
            rested_since(guest, now - 60, rested_s=600), True))
        # A plan keeps it for the next rest.
        back = running(rested_since(factory.guest(2), now - 600), 0.5)
        plan = utility.plan(factory.host([guest, back]), CFG)
        self.assertEqual(600, plan.policy_state[back.uuid][
            utility.STATE_KEY][rest_hold.RESTED_KEY])
        for junk in (True, -1, 0, float('inf'), float('nan'), '600', [1]):
            self.assertIsNone(rest_hold.rested_s(
                rested_since(guest, now - 60, rested_s=junk), True), junk)


class TestRereadMb(testtools.TestCase):

    def test_its_active_list_when_the_rest_began(self):
        guest = factory.guest(1, active_mb=1536, inactive_mb=128)
        now = guest.sample.timestamp
        self.assertIsNone(rest_hold.reread_mb(guest, None))
        self.assertEqual(1536, rest_hold.reread_mb(guest, now))
        # Resting, free memory (128 MiB) and its inactive list go first.
        curve = utility.value_curve(running(guest, 0.005), CFG)
        self.assertEqual(1536, curve.reread_mb)
        self.assertEqual(2048 - 256 - 1536, curve.held_from_mb)

    def test_a_shrink_demoting_its_active_list_changes_nothing(self):
        # Shrunk, its kernel demoted 1,000 MiB of its active list: its
        # return still reads them again, as much as its cache holds.
        shrunk = rested_since(factory.guest(
            1, actual_mb=1792, active_mb=536, inactive_mb=1000),
            1000.0, rest_held_mb=1536)
        self.assertEqual(1536, rest_hold.reread_mb(shrunk, 1000.0))
        small = rested_since(factory.guest(
            1, actual_mb=1280, active_mb=500, inactive_mb=500),
            1000.0, rest_held_mb=1536)
        self.assertEqual(1000, rest_hold.reread_mb(small, 1000.0))
        for junk in (True, -1, 10 ** 9, '1536', None):
            guest = rested_since(factory.guest(1, active_mb=700),
                                 1000.0, rest_held_mb=junk)
            self.assertEqual(700, rest_hold.reread_mb(guest, 1000.0), junk)


class TestRestingGuestInAPlan(testtools.TestCase):
    """A guest that went quiet, its data in its active list."""

    def setUp(self):
        super().setUp()
        quiet = running(factory.guest(2, active_mb=1536, inactive_mb=256),
                        0.005)
        self.now = quiet.sample.timestamp
        # It came back from a rest a while ago, and rests again.
        self.resting = rested_since(quiet, self.now,
                                    returned_at=self.now - 600)
        self.never_back = quiet

    def given(self, resting, taker_reads_mb_s):
        """MiB ``resting`` gives a far reader, and the plan."""
        taker = factory.guest(1, read_mb_s=taker_reads_mb_s,
                              refault_s=factory.pages_s(taker_reads_mb_s),
                              activate_s=factory.pages_s(
                                  taker_reads_mb_s / 10),
                              read_since_boot_mb=factory.READ_FAR_MB)
        plan = utility.plan(factory.host([taker, resting]), CFG)
        return -sum(m.delta_mb for m in plan.moves
                    if m.instance == resting.uuid), plan

    def test_it_keeps_its_active_list_from_a_taker_it_saves_little(self):
        curve = utility.value_curve(self.resting, CFG)
        self.assertEqual(self.now, curve.rest_since)
        # A rest just begun: the re-read spread over one rate window.
        self.assertAlmostEqual(1 / WINDOW_S, curve.hold_density)
        # Its inactive list is free; its active list costs a re-read over
        # the rest so far, more than a reader saves.
        self.assertEqual(0.0, curve.loss_at(0, 256))
        self.assertAlmostEqual(1 / WINDOW_S, curve.loss_at(256, 64))
        given, plan = self.given(self.resting, 4.0)
        self.assertEqual(256, given)
        state = plan.policy_state[self.resting.uuid][utility.STATE_KEY]
        self.assertEqual(self.now, state[rest_hold.STATE_KEY])
        self.assertEqual(1536, state[rest_hold.HELD_KEY])
        self.assertEqual(self.now - 600, state[rest_hold.RETURNED_KEY])

    def test_a_guest_never_seen_back_gives_it_at_no_price(self):
        curve = utility.value_curve(self.never_back, CFG)
        self.assertEqual(0.0, curve.hold_density)
        self.assertEqual(448, self.given(self.never_back, 2.0)[0])

    def test_a_long_rest_gives_it(self):
        # Rested ten hours: its return is that much further off.
        later = dataclasses.replace(self.resting, sample=dataclasses.replace(
            self.resting.sample, timestamp=self.now + 36000),
            previous=dataclasses.replace(
                self.resting.previous, timestamp=self.now + 35940))
        given, _ = self.given(later, 2.0)
        self.assertEqual(448, given)

    def rested(self, rest_s, **state):
        """The resting guest, its rest ``rest_s`` long now, and ``state``."""
        return rested_since(self.resting, self.now - rest_s,
                            returned_at=self.now - rest_s - 600, **state)

    def test_a_taker_gets_it_once_its_saving_paid_the_re_read(self):
        # The ski rental: after an hour's rest, a taker whose saving over
        # an hour beats the re-read gets it, and one that saves less
        # does not.
        self.assertEqual(448, self.given(self.rested(HOUR_S), 4.0)[0])
        self.assertEqual(256, self.given(self.rested(HOUR_S), 2.0)[0])
        # Ten minutes into it, neither.
        self.assertEqual(256, self.given(self.rested(600), 4.0)[0])

    def test_a_return_measured_to_read_more_costs_more(self):
        # An hour into its rest. The host measured it 256 MiB smaller
        # reading 12 MiB/s more (a scan that fitted, thrashing): its
        # return reads that much more for a rate window (60 s) at least,
        # 2.8 MiB per MiB given, not one.
        def measured(reads_below_mb_s):
            return self.rested(HOUR_S, seen=[
                [2048, 0.0, 64, self.now - 60, 0.0, 3],
                [1792, 0.0, 64, self.now - 300, reads_below_mb_s, 3]])
        curve = utility.value_curve(measured(12.0), CFG)
        self.assertAlmostEqual(12.0 / 256 * WINDOW_S / HOUR_S,
                               curve.loss_at(256, 64))
        # The taker that got it all after an hour above gets none of it.
        self.assertEqual(256, self.given(measured(12.0), 4.0)[0])
        # Read as little smaller, it costs one re-read per MiB.
        self.assertAlmostEqual(1 / HOUR_S, utility.value_curve(
            measured(0.5), CFG).loss_at(256, 64))

    def test_a_scan_that_no_longer_fits_re_reads_all_its_reach(self):
        # A scan over 1,700 MiB, with 1,536 MiB active, which the host
        # measured reading 4 MiB/s at 1,024 MiB: its return reads its
        # whole reach again once its cache holds less, however little it
        # gave.
        def scan(*seen):
            return self.rested(0, scanned_mb=1700.0, reuse_mb=1700.0,
                               seen=[list(x) for x in seen])
        here = (2048, 0.0, 64, self.now - 60, 0.0, 3)
        curve = utility.value_curve(
            scan(here, (1024, 0.0, 64, self.now - 300, 4.0, 3)), CFG)
        self.assertEqual(1700, curve.reread_mb)
        self.assertEqual(1792 - 1700, curve.held_from_mb)
        self.assertEqual(0.0, curve.loss_at(0, 64))
        self.assertAlmostEqual(1700 / 64 / WINDOW_S, curve.loss_at(64, 64))
        self.assertAlmostEqual(1700 / 128 / WINDOW_S,
                               curve.loss_at(64, 128))
        # Never measured reading smaller, it is not taken at its claim:
        # one re-read per MiB.
        claimed = utility.value_curve(scan(here), CFG)
        self.assertAlmostEqual(1 / WINDOW_S, claimed.loss_at(64, 64))

    def test_a_guest_that_runs_holds_nothing(self):
        # Its CPUs busy: its data fits and is read from its cache; what
        # keeps that is its active list as the knee (cache_value), not
        # the rest. It is back: the next rest is held.
        busy = utility.value_curve(running(self.resting, 0.5), CFG)
        self.assertIsNone(busy.rest_since)
        self.assertEqual(0.0, busy.hold_density)
        self.assertEqual(self.now, busy.returned_at)
