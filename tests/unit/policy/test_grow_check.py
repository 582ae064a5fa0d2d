"""A guest whose reads rose with the memory this policy gave it."""

import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import grow_check
from watcher_cams.policy import guards
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
REASON = 'read less at 1536 MiB than since it grew, gives back to there'


def scan(read_mb_s=4.0, state=None, **kw):
    """A guest at 2048 MiB whose reads all refault and activate.

    A scan larger than its cache: its counters value more memory at all
    it reads.
    """
    return factory.guest(1, actual_mb=2048, read_mb_s=read_mb_s,
                         refault_s=factory.pages_s(read_mb_s),
                         activate_s=factory.pages_s(read_mb_s),
                         read_since_boot_mb=40000,
                         policy_state={utility.STATE_KEY: state or {}},
                         **kw)


def after_plan(reads_mb_s=1.5, size_mb=1536):
    """State of a plan that read ``reads_mb_s`` at ``size_mb`` and grew it.

    Its window ended 10 s before this one began: the grow echoes in this
    one (cache_window.resized_in_window).
    """
    return {'size_mb': size_mb, 'at': 990.0, 'reads_mb_s': reads_mb_s}


def echo_over(reads_mb_s=1.5):
    """State after the grow's echo: the grow to check, carried."""
    return {'size_mb': 2048, 'at': 1000.0,
            'last_resize': [940.0, 1], 'grown_from': [1536, reads_mb_s]}


class TestGivesBackWhatCostItReads(testtools.TestCase):

    def plan(self, *guests):
        return utility.plan(factory.host(guests), CFG)

    def moves(self, *guests):
        return {m.instance: m for m in self.plan(*guests).moves}

    def test_reads_that_rose_with_the_grow_give_it_back(self):
        # 1.5 MiB/s at 1536 MiB, 4.0 since it grew: the memory goes back
        # with no taker to want it, the host's reads deciding.
        g = scan(state=echo_over())
        move = self.moves(g)[g.uuid]
        self.assertEqual(1536, move.target_mb)
        self.assertIn(REASON, move.reason)
        self.assertIn('(host-measured)', move.reason)

    def test_premise_its_counters_would_grow_it(self):
        g, donor = scan(), factory.guest(2, actual_mb=2048)
        self.assertGreater(self.moves(g, donor)[g.uuid].delta_mb, 0)

    def test_the_grow_is_carried_through_its_echo(self):
        # The window in which it grew is not the check: the state keeps
        # the plan's size and reads for the next.
        g = scan(state=after_plan())
        plan = self.plan(g)
        self.assertNotIn(g.uuid, {m.instance for m in plan.moves})
        state = plan.policy_state[g.uuid][utility.STATE_KEY]
        self.assertEqual([1536, 1.5], state['grown_from'])

    def test_only_the_first_window_after_the_echo_decides(self):
        g = scan(state=echo_over())
        state = self.plan(g).policy_state[g.uuid][utility.STATE_KEY]
        self.assertNotIn('grown_from', state)
        # A rise later on, at the same size, is the workload's.
        later = scan(state=dict(state, grown_from=None))
        self.assertEqual({}, self.moves(later))

    def test_not_for_reads_its_kernel_does_not_activate(self):
        # All refaults, few activated: a scan whose rate rose with a new
        # phase reads more for another reason than the grow.
        g = factory.guest(1, actual_mb=2048, read_mb_s=4.0,
                          refault_s=factory.pages_s(4.0),
                          activate_s=factory.pages_s(1.0),
                          read_since_boot_mb=40000,
                          policy_state={utility.STATE_KEY: echo_over()})
        self.assertNotIn(REASON, ''.join(
            m.reason for m in self.plan(g).moves))

    def test_not_for_a_rise_within_the_disk_rates_noise(self):
        self.assertEqual({}, self.moves(scan(state=echo_over(3.7))))

    def test_not_a_grow_decided_in_a_window_a_resize_blurred(self):
        state = after_plan()
        del state['reads_mb_s']
        g = scan(state=state)
        plan = self.plan(g)
        self.assertNotIn('grown_from',
                         plan.policy_state[g.uuid][utility.STATE_KEY])

    def test_not_below_its_floor(self):
        g = scan(state=echo_over())
        g = dataclasses.replace(g, sample=dataclasses.replace(
            g.sample, committed_as_kb=1700 * 1024))
        move = self.moves(g)[g.uuid]
        self.assertEqual(1700 + CFG.floor_margin_mb, move.target_mb)

    def test_nothing_from_a_guest_at_its_floor(self):
        g = scan(state=echo_over())
        g = dataclasses.replace(g, sample=dataclasses.replace(
            g.sample, committed_as_kb=2000 * 1024))
        self.assertEqual({}, self.moves(g))

    def test_a_clean_window_keeps_what_it_read(self):
        g = scan()
        state = self.plan(g).policy_state[g.uuid][utility.STATE_KEY]
        self.assertEqual(4.0, state['reads_mb_s'])


class TestPending(testtools.TestCase):
    """What the policy state says of a grow; junk is no grow."""

    def test_from_the_last_plan_or_carried(self):
        self.assertEqual((1536, 1.5), grow_check.pending(
            scan(state=after_plan()), True))
        self.assertEqual((1536, 1.5), grow_check.pending(
            scan(state=echo_over()), False))

    def test_junk_is_none(self):
        for bad in ('x', None, [1536], [1536, 'y'], [1536, -1.0],
                    [1536, float('nan')], [4096, 1.0], [0, 1.0]):
            state = dict(echo_over(), grown_from=bad)
            self.assertIsNone(grow_check.pending(scan(state=state), False),
                              bad)
        self.assertIsNone(grow_check.pending(
            scan(state=dict(after_plan(), reads_mb_s='x')), True))

    def test_read_less_at(self):
        self.assertEqual(1536, grow_check.read_less_at(
            (1536, 1.5), 2048, (4.0, 4.0)))
        # Closer than a disk rate's noise reaches, or no grow.
        self.assertIsNone(grow_check.read_less_at(
            (1856, 1.5), 2048, (4.0, 4.0)))
        self.assertIsNone(grow_check.read_less_at(None, 2048, (4.0, 4.0)))
