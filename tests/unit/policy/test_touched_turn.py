import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import touched_turn
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
PARAMS = utility.UtilityParams()


def reader(touched_mb, least_mb=3584, kept=(3400.0, 1800.0, 3584.0),
           read_mb_s=1.9, seen=()):
    """A guest of 3,584 MiB reading 1.9 MiB/s, its last two windows.

    ``touched_mb``/``least_mb``: the window the agent reports now (1,800
    to 2,400 s); ``kept``: the one before it in the policy state (MiB
    touched, when it ended, least MiB), or None.
    """
    g = factory.guest(1, actual_mb=3584, max_mb=4608, used_mb=256,
                      read_mb_s=read_mb_s)
    touched = host_io.Touched(mb=touched_mb, half_mb=touched_mb / 2,
                              window_s=600.0, ended_at=2400.0,
                              least_mb=least_mb)
    io = host_io.HostIo(window_s=60.0, start_mb=3584, end_mb=3584,
                        read_mb_s=read_mb_s, read_req_s=read_mb_s,
                        touched=touched)
    state = {'seen': [list(s) for s in seen]}
    if kept is not None:
        state[touched_turn.STATE_KEY] = list(kept)
    return dataclasses.replace(g, host_io=io,
                               policy_state={utility.STATE_KEY: state})


class TestTurned(testtools.TestCase):

    def test_touched_memory_that_moved_by_a_third_is_a_new_workload(self):
        # A hot/cold reader touched all its cache, a uniform reader over
        # 64 GiB at the same reads a third of it.
        self.assertTrue(touched_turn.turned(reader(1450), PARAMS))
        self.assertTrue(touched_turn.turned(
            reader(3400, kept=(1450.0, 1800.0, 3584.0)), PARAMS))

    def test_not_a_steady_workload_or_a_change_its_sizes_explain(self):
        cases = {
            'the same workload': reader(3300),
            'no window kept': reader(1450, kept=None),
            'a window not the one before': reader(
                1450, kept=(3400.0, 1200.0, 3584.0)),
            'it was grown in the window': reader(
                2200, least_mb=2304, kept=(3400.0, 1800.0, 3584.0)),
            'it was smaller in the window before': reader(
                3400, kept=(2200.0, 1800.0, 2304.0)),
            'it held more in the window before': reader(
                3300, kept=(4600.0, 1800.0, 3584.0)),
            'it was idle in the window before': reader(
                3400, kept=(300.0, 1800.0, 3584.0)),
        }
        for why, g in cases.items():
            self.assertFalse(touched_turn.turned(g, PARAMS), why)

    def test_a_window_is_kept_only_while_the_guest_reads(self):
        state = {}
        touched_turn.remember(state, reader(1450), True)
        self.assertEqual([1450, 2400.0, 3584], state[touched_turn.STATE_KEY])
        state = {}
        touched_turn.remember(state, reader(1450), False)
        self.assertEqual({}, state)
        # Junk kept is no window.
        g = reader(1450, kept=('many', 1800.0, 3584.0))
        self.assertIsNone(touched_turn.remembered(g))
        self.assertFalse(touched_turn.turned(g, PARAMS))


class TestValueCurve(testtools.TestCase):
    """What a turn does to the guest's curve (cache_value._history)."""

    def curve(self, touched_mb):
        # Measured smaller reading more: steep where a hot set stopped
        # fitting. The reads at its size are the same either way.
        now = factory.guest(1).sample.timestamp
        seen = ((3584, 0.1, 512, now - 60, 1.9, 10),
                (2688, 1.5, 896, now - 1200, 3.2, 4))
        return utility.value_curve(reader(touched_mb, seen=seen), CFG)

    def test_a_turn_drops_what_the_old_workload_measured(self):
        turned = self.curve(1450)
        self.assertEqual([3584], [x.size_mb for x in turned.seen])
        self.assertEqual(turned.phase_at, factory.guest(1).sample.timestamp)
        steady = self.curve(3300)
        self.assertEqual([3584, 2688], [x.size_mb for x in steady.seen])
        self.assertIsNone(steady.phase_at)
