import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import cliff_trade
from watcher_cams.policy import guards
from watcher_cams.policy import scan_cliffs
from watcher_cams.policy import utility
from watcher_cams import rpc_common

CFG = guards.GuardConfig()


def fitted(actual_mb=2816):
    """A confirmed 2,500 MiB scan that fits (its cliff: 2,756 MiB).

    It reads nothing; measured at 2,048 MiB it read 2 MiB/s.
    """
    guest = factory.guest(3, actual_mb=actual_mb, active_mb=2400,
                          inactive_mb=160, read_since_boot_mb=40000)
    return dataclasses.replace(guest, policy_state={
        utility.STATE_KEY: {'reuse_mb': 2500, 'scanned_mb': 2500,
                            'seen': [[2048, 0.0, 64, 900.0, 2.0, 3]]}})


def short(read_mb_s):
    """A guest that re-reads all it reads within its 896 MiB active list.

    Its refaults are all activated: its next 896 MiB save all it reads.
    """
    return factory.guest(1, actual_mb=2048, max_mb=4096, active_mb=896,
                         inactive_mb=896, read_mb_s=read_mb_s,
                         refault_s=factory.pages_s(read_mb_s),
                         activate_s=factory.pages_s(read_mb_s),
                         read_since_boot_mb=40000)


class TestCliffTrade(testtools.TestCase):
    def moves(self, *guests):
        host = factory.host(guests, ram_mb=sum(g.actual_mb for g in guests))
        return {m.instance: m for m in utility.plan(host, CFG).moves}

    def test_a_fitted_scan_gives_its_block_where_others_save_more(self):
        # Its first 64 MiB below its cliff cost all its 2 MiB/s (32 per
        # GiB), more than the taker's next MiB saves (6 MiB/s over 896
        # MiB, 6.9 per GiB): granule by granule nothing moves. All it
        # holds above its floor, against its 2 MiB/s, is worth it.
        scan, taker = fitted(), short(6.0)
        moves = self.moves(scan, taker)
        self.assertEqual(896, moves[taker.uuid].delta_mb)
        self.assertEqual(-896, moves[scan.uuid].delta_mb)
        self.assertIn('host-measured', moves[scan.uuid].reason)
        self.assertIn("a trade: saves 6.000 MiB/s for a fitted scan's "
                      '2.000 below 2756 MiB', moves[taker.uuid].reason)
        self.assertLessEqual(len(moves[taker.uuid].reason),
                             rpc_common.MAX_BATCH_REASON)

    def test_not_for_less_than_its_reads_at_the_cliff(self):
        # The taker would save 2 MiB/s: no more than the scan would read.
        self.assertEqual({}, self.moves(fitted(), short(2.0)))

    def test_not_while_it_has_slack_above_its_cliff(self):
        # 316 MiB above its cliff: water-filling takes that, at the slope
        # measured, and the trade waits for the next cycle.
        moves = self.moves(fitted(3072), short(6.0))
        self.assertEqual(-256, moves[fitted().uuid].delta_mb)


def outgrown(refault_mb_s, seen=(), activate_mb_s=1.0):
    """A reader of 5.3 MiB/s whose hot set outgrew its 320 MiB active list.

    ``activate_mb_s`` of its reads refault within the active list; the
    rest of ``refault_mb_s`` beyond it, where its curve cannot place
    them. ``seen``: its utility measurements.
    """
    guest = factory.guest(1, actual_mb=1024, max_mb=4096, used_mb=384,
                          active_mb=320, inactive_mb=320, read_mb_s=5.3,
                          refault_s=factory.pages_s(refault_mb_s),
                          activate_s=factory.pages_s(activate_mb_s),
                          read_since_boot_mb=40000)
    return dataclasses.replace(guest, policy_state={
        utility.STATE_KEY: {'seen': [list(e) for e in seen]}})


class TestTrial(testtools.TestCase):
    def moves(self, *guests):
        return TestCliffTrade.moves(self, *guests)

    def test_refaults_it_cannot_place_try_a_fitted_scans_block(self):
        # Its curve spreads 2.5 MiB/s of refaults over all shadow entries
        # reach: 2 GiB more save 1.8 MiB/s by it, less than the scan's
        # 2 MiB/s and the value band. Its 3.5 MiB/s of refaults could
        # save more: tried, as a probe the next windows measure.
        scan, taker = fitted(), outgrown(3.5)
        self.assertLess(utility.value_curve(taker, CFG).gain(2048), 2.4)
        moves = self.moves(scan, taker)
        self.assertEqual((2048, -2048), (moves[taker.uuid].delta_mb,
                                         moves[scan.uuid].delta_mb))
        for m in moves.values():
            self.assertIn('utility (probe)', m.reason)
            self.assertIn("a trial trade: saves up to 3.500 MiB/s for a "
                          "fitted scan's 2.000 below 2756 MiB", m.reason)

    def test_not_where_its_refaults_do_not_beat_the_scans_reads(self):
        self.assertEqual({}, self.moves(fitted(), outgrown(2.4)))

    def test_not_for_refaults_as_sparse_within_the_active_list(self):
        # 0.2 MiB/s of activations within 320 MiB, 3.3 refaults over the
        # 5,120 MiB beyond: uniformly spread, as its curve says. 2 GiB
        # more may save 1.3 MiB/s at most.
        taker = outgrown(3.5, activate_mb_s=0.2)
        self.assertAlmostEqual(1.28, cliff_trade.unplaced_refaults_mb_s(
            utility.value_curve(taker, CFG), taker, 2048))
        self.assertEqual({}, self.moves(fitted(), taker))

    def test_not_for_a_guest_without_an_agent(self):
        # No counters of its own: whatever its sample says is not read.
        taker = outgrown(3.5)
        curve = utility.value_curve(taker, CFG)
        self.assertEqual(3.5, cliff_trade.unplaced_refaults_mb_s(
            curve, taker, 2048))
        self.assertIsNone(cliff_trade.unplaced_refaults_mb_s(
            curve, dataclasses.replace(taker, host_only=True), 2048))

    def test_not_where_the_host_measured_it_larger(self):
        # It read as much 512 MiB larger, three windows long: the host's
        # reads place its refaults further than that.
        measured = outgrown(3.5, seen=[(1024, 0.0, 64, 1000.0, 5.3, 3),
                                       (1536, 0.0, 64, 700.0, 5.3, 3)])
        self.assertIsNone(cliff_trade.unplaced_refaults_mb_s(
            utility.value_curve(measured, CFG), measured, 2048))
        self.assertEqual({}, self.moves(fitted(), measured))

    def test_a_guest_is_tried_at_most_once_in_trial_every_s(self):
        # Its refaults are its own claim: one that forges them, and shapes
        # its reads so that no measurement at a larger size stays, costs
        # a fitted scan its cliff at most that often.
        scan, taker = fitted(), outgrown(3.5)
        host = factory.host([scan, taker], ram_mb=2816 + 1024)
        state = utility.plan(host, CFG).policy_state[taker.uuid]
        now = taker.sample.timestamp
        self.assertEqual(now, state[utility.STATE_KEY][cliff_trade.TRIAL_KEY])
        for ago_s, tried in ((600.0, False),
                             (cliff_trade.TRIAL_EVERY_S - 1, False),
                             (cliff_trade.TRIAL_EVERY_S, True)):
            again = dataclasses.replace(taker, policy_state={
                utility.STATE_KEY: {cliff_trade.TRIAL_KEY: now - ago_s}})
            plan = utility.plan(factory.host([fitted(), again],
                                             ram_mb=2816 + 1024), CFG)
            self.assertEqual(tried, taker.uuid in {
                m.instance for m in plan.moves}, ago_s)
            # Kept from plan to plan until a new trial or its expiry.
            self.assertEqual(now if tried else now - ago_s, plan.policy_state[
                taker.uuid][utility.STATE_KEY].get(cliff_trade.TRIAL_KEY))


def traded(read_mb_s, actual_mb=1024, record=(2756, 2.0)):
    """A scan that traded its memory: it reads as a stream now."""
    guest = factory.guest(3, actual_mb=actual_mb, read_mb_s=read_mb_s,
                          read_since_boot_mb=40000)
    return dataclasses.replace(guest, policy_state={
        utility.STATE_KEY: {cliff_trade.STATE_KEY: list(record)}})


class TestTraded(testtools.TestCase):
    def test_the_scan_that_gave_keeps_its_cliff_in_its_state(self):
        scan = fitted()
        host = factory.host([scan, short(6.0)], ram_mb=2816 + 2048)
        state = utility.plan(host, CFG).policy_state[scan.uuid]
        self.assertEqual([2756, 2.0],
                         state[utility.STATE_KEY][cliff_trade.STATE_KEY])

    def test_kept_while_it_lacks_its_cliff_and_reads(self):
        self.assertEqual((2756.0, 2.0), cliff_trade.remembered(
            traded(2.0), 2.0))
        # A window its host cache served half of: still that scan.
        self.assertEqual((2756.0, 2.0), cliff_trade.remembered(
            traded(1.0), 1.0))

    def test_gone_once_it_fits_again_or_stops_reading(self):
        self.assertIsNone(cliff_trade.remembered(
            traded(2.0, actual_mb=2816), 2.0))
        self.assertIsNone(cliff_trade.remembered(traded(0.1), 0.1))

    def test_gone_once_it_reads_more_than_that_scan(self):
        # 6 MiB/s where the scan read 2 below its cliff: another workload.
        self.assertEqual((2756.0, 2.0), cliff_trade.remembered(
            traded(3.0), 3.0))
        self.assertIsNone(cliff_trade.remembered(traded(6.0), 6.0))

    def test_reading_more_drops_the_scans_measurements(self):
        # Its fit at 2,816 MiB (nothing read there) prices nothing of the
        # new workload, although a shrink still echoes in its rates.
        for reads, kept in ((3.0, 1), (6.0, 0)):
            guest = traded(reads)
            state = guest.policy_state[utility.STATE_KEY]
            state['seen'] = [[2816, 0.0, 64, 900.0, 0.0, 3]]
            state['last_resize'] = [1030.0, -1]
            curve = utility.value_curve(guest, CFG)
            self.assertEqual(-1, curve.resized)
            self.assertEqual(kept, len(curve.seen))
            self.assertEqual(None if kept else guest.sample.timestamp,
                             curve.phase_at)

    def test_junk_is_dropped(self):
        for junk in (None, 'x', [1], ['a', 2], [float('nan'), 2.0],
                     [1e12, 2.0], [2756, -1.0]):
            guest = dataclasses.replace(traded(2.0), policy_state={
                utility.STATE_KEY: {cliff_trade.STATE_KEY: junk}})
            self.assertIsNone(cliff_trade.remembered(guest, 2.0), junk)

    def test_it_prices_what_it_lacks_as_a_placed_cliff(self):
        # Nothing of its reach left: its refaults alone would spread its
        # reads over all its shadow entries reach. The record prices the
        # 1,732 MiB it lacks at its 2 MiB/s.
        guest = traded(2.0)
        curve = scan_cliffs.priced(
            factory.host([guest], ram_mb=8192), CFG, utility.UtilityParams(),
            {guest.uuid: utility.value_curve(guest, CFG)})[guest.uuid]
        self.assertEqual(2756, curve.cliff_mb)
        self.assertAlmostEqual(2.0, curve.gain(1732))

    def test_a_pass_loan_prices_what_it_lacks_without_a_cliff(self):
        # What a first pass lent is worth all it reads up to the size it
        # lent from, but no cliff was placed: nothing weighs it as a scan
        # that would give up all it holds (scan_cliffs.weighed).
        guest = traded(2.0, record=(2756, 2.0, cliff_trade.LENT, 1732))
        curve = scan_cliffs.priced(
            factory.host([guest], ram_mb=8192), CFG, utility.UtilityParams(),
            {guest.uuid: utility.value_curve(guest, CFG)})[guest.uuid]
        self.assertIsNone(curve.cliff_mb)
        self.assertAlmostEqual(2.0, curve.gain(1732))
        self.assertTrue(cliff_trade.lent(curve.traded))

    def test_a_loan_adds_to_the_last_and_replaces_a_scans_record(self):
        # Lent again: from the size it first lent from, all it lent.
        earlier = traded(0.5, record=(2048, 0.5, cliff_trade.LENT, 128))
        self.assertEqual([2048, 0.5, cliff_trade.LENT, 384],
                         cliff_trade.loan(earlier, 0.5, 256))
        # A guest that traded a fitted scan and now lends a first pass's
        # memory: the pass is its workload now, and the scan's cliff (a
        # size it no longer reads toward) is no longer kept.
        scan = traded(0.5, record=(2756, 0.5))
        self.assertEqual([1024, 0.5, cliff_trade.LENT, 256],
                         cliff_trade.loan(scan, 0.5, 256))


def first_pass(read_mb_s=0.5, actual_mb=2048):
    """A guest filling its cache in a first pass, 1,392 MiB still free.

    It read 400 MiB since it booted, all into its cache, and refaulted
    and activated nothing: no counter can show its reuse yet. At 0.5
    MiB/s its reads fill that free memory within the fill horizon, so
    the water-filling leaves it alone.
    """
    return factory.guest(4, actual_mb=actual_mb, active_mb=0,
                         inactive_mb=400, read_mb_s=read_mb_s,
                         read_since_boot_mb=400)


class TestFirstPassTrade(testtools.TestCase):
    def plan(self, *guests):
        host = factory.host(guests, ram_mb=sum(g.actual_mb for g in guests))
        return utility.plan(host, CFG)

    def test_its_free_memory_goes_where_a_taker_saves_more(self):
        # The most that memory could save the pass is all it reads, 0.5
        # MiB/s; the taker's next 896 MiB save 6.
        donor, taker = first_pass(), short(6.0)
        plan = self.plan(donor, taker)
        moves = {m.instance: m for m in plan.moves}
        self.assertEqual(896, moves[taker.uuid].delta_mb)
        self.assertEqual(-896, moves[donor.uuid].delta_mb)
        self.assertIn("a trade: saves 6.000 MiB/s for a first pass's "
                      '0.500', moves[taker.uuid].reason)
        self.assertLessEqual(len(moves[taker.uuid].reason),
                             rpc_common.MAX_BATCH_REASON)
        # Lent: the pass keeps the size it gave from, and what it reads.
        self.assertEqual([2048, 0.5, cliff_trade.LENT, 896],
                         plan.policy_state[donor.uuid][utility.STATE_KEY][
                             cliff_trade.STATE_KEY])

    def test_what_it_lent_comes_back_once_the_taker_gives_it(self):
        # Its taker gave the 896 MiB back (a tenant's counters belied):
        # nobody holds them, and the pass, its cache full, lacks them at
        # all it reads (0.57 MiB/s per GiB). Before, it went on at 1,152
        # MiB, and the memory to whoever claimed it next.
        lender = factory.guest(4, actual_mb=1152, active_mb=0,
                               inactive_mb=896, read_mb_s=0.5,
                               read_since_boot_mb=1200, policy_state={
                                   utility.STATE_KEY: {
                                       cliff_trade.STATE_KEY: [
                                           2048, 0.5, cliff_trade.LENT,
                                           896]}})
        taker = short(0.0)
        host = factory.host([lender, taker], ram_mb=2048 + 2048)
        moves = {m.instance: m for m in utility.plan(host, CFG).moves}
        self.assertGreater(moves[lender.uuid].delta_mb, 0)
        self.assertLessEqual(moves[lender.uuid].target_mb, 2048)
        self.assertNotIn(taker.uuid, moves)

    def test_not_for_less_than_the_pass_reads(self):
        # A taker that saves no more than 0.6 MiB/s (the pass's 0.5 and
        # value_band): the pass keeps its memory.
        self.assertEqual([], self.plan(first_pass(), short(0.5)).moves)

    def test_all_of_it_at_once_where_a_step_would_not_pay(self):
        # Its pass so far (400 MiB) fitted would save 3.8 MiB/s per GiB,
        # more than the taker's next MiB (2 MiB/s over 896 MiB): the
        # water-filling gives a step that leaves its shadow entries their
        # reach, 200 MiB, which save the taker 0.45 MiB/s. The trade
        # offers all of it: 896 MiB save 2.0, more than the pass's 1.0.
        donor = dataclasses.replace(first_pass(1.0), policy_state={
            utility.STATE_KEY: {'fresh_mb': 400}})
        taker = short(2.0)
        plan = self.plan(donor, taker)
        moves = {m.instance: m for m in plan.moves}
        self.assertEqual(896, moves[taker.uuid].delta_mb)
        self.assertIn("a trade: saves 2.000 MiB/s for a first pass's "
                      '1.000', moves[taker.uuid].reason)

    def test_a_trial_may_take_it(self):
        # The pass reads 1.5 MiB/s: the taker's curve saves less than
        # that and the value band with all the pass has free, its 3.5
        # MiB/s of refaults (test_refaults_it_cannot_place_try_a_fitted_
        # scans_block) could save more. Tried, as a probe the next
        # windows measure.
        donor, taker = first_pass(1.5), outgrown(3.5)
        room_mb = cliff_trade._pass_block(
            factory.host([donor]), CFG, utility.UtilityParams(),
            utility.value_curve(donor, CFG), donor.uuid).room_mb
        self.assertLess(utility.value_curve(taker, CFG).gain(room_mb), 1.8)
        moves = {m.instance: m for m in self.plan(donor, taker).moves}
        self.assertEqual((room_mb, -room_mb), (moves[taker.uuid].delta_mb,
                                               moves[donor.uuid].delta_mb))
        self.assertIn('utility (probe)', moves[taker.uuid].reason)
        self.assertIn("a trial trade: saves up to 3.500 MiB/s for a first "
                      "pass's 1.500", moves[taker.uuid].reason)

    def test_not_once_its_reuse_shows(self):
        # The same guest refaulting what it reads: no first pass.
        donor = dataclasses.replace(first_pass(), sample=dataclasses.replace(
            first_pass().sample, workingset_refault_file=int(
                factory.pages_s(0.5) * 60)))
        self.assertIsNone(cliff_trade._pass_block(
            factory.host([donor]), CFG, utility.UtilityParams(),
            utility.value_curve(donor, CFG), donor.uuid))


class TestCost(testtools.TestCase):
    def test_each_fitted_scan_weighs_a_few_takers_of_two_guests(self):
        # Ten takers that could each pay: the scan weighs the first
        # MAX_TAKERS (by what they could save), each with itself alone,
        # by their curves and then for a trial (their refaults).
        scan = fitted()
        takers = [dataclasses.replace(short(6.0 + i / 10.0),
                                      uuid='taker-%d' % i, name='t%d' % i)
                  for i in range(10)]
        host = factory.host([scan] + takers,
                            ram_mb=2816 + 2048 * len(takers))
        curves = {g.uuid: utility.value_curve(g, CFG) for g in host.guests}
        params = utility.UtilityParams()
        curves = scan_cliffs.priced(host, CFG, params, curves)
        up = {u: 2048 for u in curves}
        weighed = []

        def moves(pair, rooms):
            weighed.append(sorted(pair))
            return {u: 0 for u in pair}, 0.0, set()

        self.assertIsNone(cliff_trade.trade(host, CFG, params, curves, up,
                                            moves))
        self.assertEqual(2 * cliff_trade.MAX_TAKERS, len(weighed))
        self.assertTrue(all(len(p) == 2 and scan.uuid in p for p in weighed))
        # The ones that read most first.
        self.assertIn(sorted([scan.uuid, 'taker-9']), weighed)
