import dataclasses

import testtools

from tests.unit import factory
from watcher_cams.policy import probe_memory
from watcher_cams.policy import utility

PARAMS = utility.UtilityParams()
BOUND = 4.0 / 1024


def with_state(guest, **state):
    """``guest`` whose utility policy state keeps ``state``."""
    return dataclasses.replace(guest, policy_state={utility.STATE_KEY: state})


class TestProbeMemory(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # At 2048 MiB: probed from there to 2496, or back from 2496.
        self.guest = factory.guest(1)
        self.now = self.guest.sample.timestamp

    def probed(self, actual_mb, ago_s=120):
        guest = dataclasses.replace(self.guest, actual_mb=actual_mb)
        return with_state(guest, **{probe_memory.PROBED_KEY: [
            2048, 2496, BOUND, self.now - ago_s]})

    def test_a_step_held_is_kept_and_one_given_back_remembered(self):
        state = {}
        probe_memory.record(state, self.guest, BOUND, 2496)
        self.assertEqual({probe_memory.PROBED_KEY: [
            2048, 2496, BOUND, self.now]}, state)
        held = self.probed(2496)
        self.assertEqual({probe_memory.PROBED_KEY: [
            2048, 2496, BOUND, self.now - 120]},
            probe_memory.carried(held, PARAMS))
        self.assertFalse(probe_memory.repeats(held, BOUND, PARAMS))
        # Back where it was probed from: the same bound repeats it.
        back = self.probed(2048)
        self.assertEqual({probe_memory.BACK_KEY: [2048, BOUND, self.now]},
                         probe_memory.carried(back, PARAMS))
        self.assertTrue(probe_memory.repeats(back, BOUND, PARAMS))
        self.assertTrue(probe_memory.repeats(back, 1.49 * BOUND, PARAMS))
        self.assertFalse(probe_memory.repeats(back, 1.5 * BOUND, PARAMS))

    def test_forgotten_elsewhere_and_after_memory_s(self):
        # Resized elsewhere, or held longer than memory_s: nothing kept.
        self.assertEqual({}, probe_memory.carried(self.probed(2240), PARAMS))
        self.assertEqual({}, probe_memory.carried(
            self.probed(2496, ago_s=PARAMS.memory_s + 60), PARAMS))
        back = with_state(self.guest, **{probe_memory.BACK_KEY: [
            2048, BOUND, self.now - PARAMS.memory_s - 60]})
        self.assertEqual({}, probe_memory.carried(back, PARAMS))
        self.assertFalse(probe_memory.repeats(back, BOUND, PARAMS))

    def test_a_corrupt_entry_is_forgotten(self):
        for value in ([2048, 2496, 'x', self.now], [2048, True, 1.0],
                      [2048, float('nan'), self.now],
                      [2048, 2496, float('inf'), self.now],
                      'back', None, [2048, BOUND]):
            for key in (probe_memory.PROBED_KEY, probe_memory.BACK_KEY):
                guest = with_state(self.guest, **{key: value})
                self.assertEqual({}, probe_memory.carried(guest, PARAMS))
