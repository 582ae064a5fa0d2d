"""A guest whose counters the host belied takes only what the host priced."""

import testtools

from tests.unit import factory
from tests.unit.policy.test_forged_counters import NOW
from tests.unit.policy.test_forged_counters import seen
from watcher_cams.policy import claims
from watcher_cams.policy import distrust
from watcher_cams.policy import guards
from watcher_cams.policy import model
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
PARAMS = utility.UtilityParams()
HOLD_S = PARAMS.memory_s * distrust.HOLD_MEMORIES


def stream(n=1, reads_mb_s=8.0, entries=(), belied=None, size_mb=2048,
           active_mb=224):
    """A stream claiming an active list of ``active_mb`` (a clean window).

    At ``size_mb``, reading ``reads_mb_s``, every read an activated
    refault. ``entries``: its measurements; ``belied``: (held until, spells).
    """
    state = {'size_mb': size_mb, 'at': 1000.0, 'confirmed_at': 1000.0,
             'seen': list(entries)}
    if belied is not None:
        state[distrust.UNTIL_KEY], state[distrust.TIMES_KEY] = belied
    return factory.guest(
        n, actual_mb=size_mb, active_mb=active_mb,
        inactive_mb=size_mb - 256 - active_mb, read_mb_s=reads_mb_s,
        refault_s=factory.pages_s(reads_mb_s),
        activate_s=factory.pages_s(reads_mb_s), read_since_boot_mb=40000,
        policy_state={utility.STATE_KEY: state})


def reader(n=2, size_mb=2048):
    """An honest reader whose counters value more memory a little."""
    return factory.guest(n, actual_mb=size_mb, read_mb_s=2.0,
                         refault_s=factory.pages_s(0.5),
                         activate_s=factory.pages_s(0.5),
                         read_since_boot_mb=40000)


def state_of(plan, guest):
    return plan.policy_state[guest.uuid][utility.STATE_KEY]


class TestBelied(testtools.TestCase):
    """When the host's reads belie the counters, and for how long."""

    def test_a_step_that_saved_nothing_belies_the_counters(self):
        # 8 MiB/s at 1536 MiB, where the counters promised all of it over
        # the next active list, and 8 MiB/s again 512 MiB up.
        g = stream(entries=[seen(1536, 8.0)])
        self.assertTrue(utility.value_curve(g, CFG).counters_belied)
        plan = utility.plan(factory.host([g, reader()]), CFG)
        self.assertEqual((g.sample.timestamp + HOLD_S, 1), tuple(
            state_of(plan, g)[k]
            for k in (distrust.UNTIL_KEY, distrust.TIMES_KEY)))

    def test_not_a_step_that_paid_nor_an_empty_promise_nor_a_near_one(self):
        for g in (stream(reads_mb_s=3.0, entries=[seen(1536, 8.0)]),
                  stream(entries=[seen(1536, 8.0, per_gib=0.5)]),
                  stream(entries=[seen(1920, 8.0)]), stream()):
            self.assertFalse(utility.value_curve(g, CFG).counters_belied)
            plan = utility.plan(factory.host([g, reader()]), CFG)
            self.assertNotIn(distrust.UNTIL_KEY, state_of(plan, g))

    def test_larger_sizes_measured_before_belie_the_counters(self):
        # Back at 1536 MiB from a trial at 2048 that read 8 MiB/s as here,
        # where the counters promise all of it over the next active list.
        back = [seen(1536, 8.0, at=NOW - 60), seen(2048, 8.0, at=NOW - 400)]
        g = stream(size_mb=1536, entries=back)
        self.assertTrue(utility.value_curve(g, CFG).counters_belied)
        plan = utility.plan(factory.host([g, reader()]), CFG)
        self.assertEqual(1, state_of(plan, g)[distrust.TIMES_KEY])

    def test_not_a_larger_size_that_paid_nor_a_near_one_nor_a_first_pass(
            self):
        # Read less there, only 256 MiB up (less than two active lists),
        # nothing measured here yet; or a workload begun 300 s ago, which
        # has not read at 8 MiB/s all 1,792 MiB of cache the larger size
        # held: its first pass reads as much at every size.
        young = stream(size_mb=1536, entries=[
            seen(1536, 8.0, at=NOW - 60), seen(2048, 8.0, at=NOW - 100)])
        young.policy_state[utility.STATE_KEY]['phase_at'] = NOW - 300
        for g in (stream(size_mb=1536, entries=[
                      seen(1536, 8.0, at=NOW - 60),
                      seen(2048, 3.0, at=NOW - 400)]),
                  stream(size_mb=1536, entries=[
                      seen(1536, 8.0, at=NOW - 60),
                      seen(1792, 8.0, at=NOW - 400)]),
                  stream(size_mb=1536, entries=[
                      seen(2048, 8.0, at=NOW - 400)]), young):
            self.assertFalse(utility.value_curve(g, CFG).counters_belied)

    def test_a_hold_lasts_longer_each_time(self):
        for times, hold_s in ((1, HOLD_S), (2, 2 * HOLD_S), (3, 4 * HOLD_S),
                              (9, HOLD_S * 2 ** distrust.MAX_DOUBLINGS)):
            g = stream(entries=[seen(1536, 8.0)],
                       belied=(NOW - 60, times - 1) if times > 1 else None)
            plan = utility.plan(factory.host([g, reader()]), CFG)
            self.assertEqual(g.sample.timestamp + hold_s,
                             state_of(plan, g)[distrust.UNTIL_KEY], times)
        self.assertTrue(distrust.held(stream(belied=(NOW + 60, 1))))
        self.assertFalse(distrust.held(stream(belied=(NOW, 1))))
        for junk in ((NOW + 60, 0), (NOW + 60, True), ('x', 1),
                     (True, 1), (float('inf'), 1), (NOW + 60, 1.5)):
            self.assertFalse(distrust.held(stream(belied=junk)), junk)

    def test_each_spell_counts_once(self):
        # Belied again while held: the hold runs from now, still one
        # spell. Belied after it ended: a second.
        g = stream(entries=[seen(1536, 8.0)], belied=(NOW + 600, 1))
        plan = utility.plan(factory.host([g, reader()]), CFG)
        self.assertEqual([g.sample.timestamp + HOLD_S, 1], [
            state_of(plan, g)[k]
            for k in (distrust.UNTIL_KEY, distrust.TIMES_KEY)])
        g = stream(entries=[seen(1536, 8.0)], belied=(NOW - 60, 1))
        plan = utility.plan(factory.host([g, reader()]), CFG)
        self.assertEqual(2, state_of(plan, g)[distrust.TIMES_KEY])

    def test_the_report_flags_a_held_guest(self):
        why = distrust.flag(stream(belied=(1.8e9, 1)))
        self.assertTrue(why.startswith(claims.DISAGREE), why)
        self.assertIn('until 2027-01-15 08:00:00 UTC', why)
        # A time no date holds (a state store gone bad): the number.
        self.assertIn('until %.0f' % 1e300,
                      distrust.flag(stream(belied=(1e300, 1))))
        self.assertIsNone(distrust.flag(stream(belied=(NOW - 60, 1))))


class TestHeld(testtools.TestCase):
    """What a held guest may take and what it gives back."""

    def test_it_gives_back_what_the_host_measured_saved_nothing(self):
        held = stream(entries=[seen(2048, 8.0, at=NOW - 60),
                               seen(1536, 8.0), seen(1024, 8.2)],
                      belied=(NOW + 600, 1))
        plan = utility.plan(factory.host([held, reader()]), CFG)
        move = next(m for m in plan.moves if m.instance == held.uuid)
        self.assertEqual(1024, move.target_mb)
        self.assertIn('its counters belied', move.reason)
        self.assertIn(utility.HOST_MEASURED, move.reason)
        # Not a guest that read more smaller, nor one not held.
        for g in (stream(entries=[seen(2048, 8.0, at=NOW - 60),
                                  seen(1536, 12.0)],
                         belied=(NOW + 600, 1)),
                  stream(entries=[seen(2048, 8.0, at=NOW - 60),
                                  seen(1920, 8.0)])):
            curves = {g.uuid: utility.value_curve(g, CFG)}
            self.assertEqual({}, distrust.paid_for_nothing(
                factory.host([g]), CFG, curves))

    def test_it_takes_only_what_the_host_measured(self):
        held = stream(size_mb=1536, entries=[seen(1536, 8.0, at=NOW - 60)],
                      belied=(NOW + 600, 1))
        free = stream(size_mb=1536, entries=[seen(1536, 8.0, at=NOW - 60)])
        donor = reader(size_mb=3072)
        for g, grows in ((free, True), (held, False)):
            plan = utility.plan(factory.host([g, donor]), CFG)
            grown = [m for m in plan.moves
                     if m.instance == g.uuid and m.target_mb > m.current_mb]
            self.assertEqual(grows, bool(grown), plan.moves)

    def test_rooms_within_the_host_measured_gain(self):
        held = stream(size_mb=1536, entries=[seen(1536, 8.0, at=NOW - 60),
                                             seen(2048, 4.0)],
                      belied=(NOW + 600, 1))
        curve = utility.value_curve(held, CFG)
        self.assertEqual(512, curve.measured_mb)
        host = factory.host([held])
        self.assertEqual({held.uuid: 512}, distrust.measured_rooms(
            host, {held.uuid: curve}, {held.uuid: 2048}))
        free = stream(size_mb=1536, entries=held.policy_state[
            utility.STATE_KEY]['seen'])
        self.assertEqual({free.uuid: 2048}, distrust.measured_rooms(
            factory.host([free]), {free.uuid: curve}, {free.uuid: 2048}))

    def test_no_probe_or_tie_grows_it(self):
        held = stream(belied=(NOW + 600, 1))
        host = factory.host([held, reader()])
        grow = model.Plan(host.name, moves=[model.BalloonMove(
            host.name, held.uuid, 2048, 2112, 'probe')])
        self.assertTrue(distrust.grows_held(host, grow))
        shrink = model.Plan(host.name, moves=[model.BalloonMove(
            host.name, held.uuid, 2048, 1984, 'probe')])
        self.assertFalse(distrust.grows_held(host, shrink))

    def test_only_measured_reads_price_what_it_gives(self):
        held = stream(size_mb=1536, entries=[seen(1536, 8.0, at=NOW - 60)],
                      belied=(NOW + 600, 1))
        free = stream(n=3, size_mb=1536,
                      entries=[seen(1536, 8.0, at=NOW - 60)])
        curves = {g.uuid: utility.value_curve(g, CFG) for g in (held, free)}
        self.assertGreater(curves[held.uuid].loss_at(0, 64), 0.0)
        priced = distrust.host_priced(factory.host([held, free]), curves)
        self.assertEqual(0.0, priced[held.uuid].loss_at(0, 64))
        self.assertEqual([0.0], [x.density for x in priced[held.uuid].seen])
        self.assertIs(curves[free.uuid], priced[free.uuid])

    def test_what_it_gives_is_priced_by_its_measured_reads(self):
        # Measured at its size only, its counters valuing the 224 MiB
        # active list they claim at all it reads: trusted, it grows on
        # them; held, nothing the host measured prices what it holds, and
        # it gives down to its floor.
        entries = [seen(1536, 8.0, at=NOW - 60)]
        for belied, target in ((None, 1792), ((NOW + 600, 1), 640)):
            g = stream(size_mb=1536, entries=entries, belied=belied)
            plan = utility.plan(factory.host([g, reader()]), CFG)
            self.assertEqual([target], [
                m.target_mb for m in plan.moves if m.instance == g.uuid])

    def test_its_active_list_keeps_nothing_of_its_memory(self):
        # Measured reading as much at 1,536 and 2,048 MiB, an active list
        # of 1 GiB claimed: trusted, it keeps that list (above its used
        # memory and margin, all it has); held, it gives down to its floor.
        entries = [seen(1536, 8.0, at=NOW - 60), seen(2048, 8.0)]
        for belied, targets in ((None, []), ((NOW + 600, 1), [640])):
            g = stream(size_mb=1536, entries=entries, belied=belied,
                       active_mb=1024)
            plan = utility.plan(factory.host([g, reader()]), CFG)
            self.assertEqual(targets, [
                m.target_mb for m in plan.moves if m.instance == g.uuid])

    def test_ties_count_none_of_its_active_list(self):
        held, honest = stream(belied=(NOW + 600, 1)), reader()
        host = distrust.believed(factory.host([held, honest]))
        self.assertEqual((0, 1792), (
            host.guest(held.uuid).sample.active_file_mb,
            host.guest(held.uuid).sample.inactive_file_mb))
        self.assertEqual(honest, host.guest(honest.uuid))
        plain = factory.host([honest])
        self.assertIs(plain, distrust.believed(plain))
