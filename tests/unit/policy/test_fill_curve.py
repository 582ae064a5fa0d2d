"""What a cache's reads did while it filled (guests without an agent)."""

import dataclasses

import testtools

from tests.unit.policy.test_host_only import agentless
from tests.unit.policy.test_host_only import CFG
from tests.unit.policy.test_host_only import deltas
from watcher_cams.policy import fill_curve
from watcher_cams.policy import utility


def window(cache_mb, read_mb_s, cache_before_mb=None, **state):
    """A guest without an agent whose cache grew to ``cache_mb``."""
    g = agentless(1, read_mb_s=read_mb_s, cache_mb=cache_mb)
    kib = (cache_mb if cache_before_mb is None else cache_before_mb) * 1024
    before = dataclasses.replace(g.previous, active_file_kb=0,
                                 inactive_file_kb=kib, cached_kb=kib)
    return dataclasses.replace(g, previous=before,
                               policy_state={utility.STATE_KEY: state})


class TestFillCurve(testtools.TestCase):

    def test_a_fill_keeps_its_first_window_and_its_last_span(self):
        g = window(450, 3.0, 350, fill_points=[[100, 6.0], [200, 5.0],
                                               [300, 4.0]])
        fill = fill_curve.measured(g, 3.0, (True, 0), False)
        # The newest at the cache's mean size over the window (400 MiB);
        # the first, and from the latest at least MIN_SPAN_MB below it.
        self.assertEqual(((100, 6.0), (200, 5.0), (300, 4.0), (400.0, 3.0)),
                         fill.points)
        state = {}
        fill_curve.remember(state, fill)
        self.assertEqual([[100, 6.0], [200, 5.0], [300, 4.0], [400.0, 3.0]],
                         state[fill_curve.POINTS_KEY])
        # At most MAX_POINTS, the first kept.
        g = window(450, 3.0, 350, fill_points=[[1, 6.0]] + [
            [300 + i / 100, 4.0] for i in range(fill_curve.MAX_POINTS - 1)])
        fill = fill_curve.measured(g, 3.0, (True, 0), False)
        self.assertEqual(fill_curve.MAX_POINTS, len(fill.points))
        self.assertEqual((1, 6.0), fill.points[0])

    def test_a_full_cache_measures_the_fill_slope(self):
        points = [[200, 5.0], [300, 4.0]]
        g = window(400, 3.0, fill_points=points)
        # From 200 MiB (the latest at least MIN_SPAN_MB below 400) on,
        # 2 MiB/s fewer reads over 200 MiB.
        fill = fill_curve.measured(g, 3.0, (False, 0), False)
        self.assertEqual(fill_curve.Fill(slope=0.01), fill)
        state = {}
        fill_curve.remember(state, fill)
        self.assertEqual({fill_curve.SLOPE_KEY: 0.01}, state)
        # A fall within the noise shows no reuse: a stream, or a scan's
        # first pass (mrc.NOISE_SHARE of 5 MiB/s: no request count).
        flat = fill_curve.measured(window(400, 4.9, fill_points=points),
                                   4.9, (False, 0), False)
        self.assertEqual(0.0, flat.slope)
        # Over less than MIN_SPAN_MB: no slope.
        short = fill_curve.measured(window(250, 3.0, fill_points=points),
                                    3.0, (False, 0), False)
        self.assertIsNone(short.slope)

    def test_a_resize_ends_a_fill_and_a_new_workload_its_slope(self):
        g = window(400, 3.0, fill_points=[[200, 5.0]],
                   fill_slope=0.01)
        self.assertEqual(fill_curve.Fill(slope=0.01),
                         fill_curve.measured(g, 3.0, (True, 1), False))
        self.assertEqual(fill_curve.Fill(),
                         fill_curve.measured(g, 3.0, (True, 1), True))

    def test_junk_in_the_state_is_dropped(self):
        for junk in ({'fill_points': [[200, 'x']], 'fill_slope': -1},
                     {'fill_slope': [0.01]},
                     {'fill_points': [[1e9, 5.0]], 'fill_slope': True},
                     {'fill_points': 'no', 'fill_slope': float('nan')},
                     {'fill_points': [[1, 1.0]] * 65}):
            g = window(400, 3.0, **junk)
            self.assertEqual(fill_curve.Fill(),
                             fill_curve.measured(g, 3.0, (True, 1), False))


class TestFillOrdersProbes(testtools.TestCase):

    def test_toward_the_guest_whose_fill_showed_reuse(self):
        # A reads more per MiB it caches (the guess would probe it first),
        # but its fill read as much all along; B's reads fell as it filled.
        a = agentless(1, read_mb_s=3.0)
        a.policy_state[utility.STATE_KEY] = {'fill_slope': 0.0}
        b = agentless(2, read_mb_s=1.0)
        b.policy_state[utility.STATE_KEY] = {'fill_slope': 0.004}
        moved, plan = deltas(a, b)
        self.assertEqual({a.uuid: -64, b.uuid: 64}, moved)
        self.assertIn('utility (probe)', plan.moves[0].reason)
        # B's fill prices what it gives at most: its guess, lower here.
        curve = utility.value_curve(b, CFG)
        self.assertEqual(0.004, curve.prior)
        self.assertAlmostEqual(1.0 / (2048 - 256 - 64), curve.prior_loss)
        # A's flat fill says nothing: the guess, both ways.
        curve = utility.value_curve(a, CFG)
        self.assertAlmostEqual(3.0 / (2048 - 256 - 64), curve.prior)
        self.assertEqual(curve.prior, curve.prior_loss)
        # Without the fills, the guess.
        moved, _ = deltas(agentless(1, read_mb_s=3.0),
                          agentless(2, read_mb_s=1.0))
        self.assertEqual({a.uuid: 64, b.uuid: -64}, moved)


class TestPastTheKnee(testtools.TestCase):

    def test_a_fill_whose_reads_stopped_falling_is_past_its_knee(self):
        # Its reads fell from 6 to 1 MiB/s over 600 MiB of fill, then by
        # 0.03 over the next 180: its hot set is in.
        g = window(900, 0.97, 860, fill_points=[[100, 6.0], [700, 1.0],
                                                [800, 0.98]])
        self.assertTrue(fill_curve.measured(g, 0.97, (True, 0),
                                            False).flattened)
        # Still falling over its last span: before the knee.
        g = window(900, 1.0, 860, fill_points=[[100, 6.0], [700, 2.0]])
        self.assertFalse(fill_curve.measured(g, 1.0, (True, 0),
                                             False).flattened)
        # Never fell: a scan's first pass, whose cliff may lie beyond.
        g = window(900, 6.0, 860, fill_points=[[100, 6.0], [700, 6.0]])
        self.assertFalse(fill_curve.measured(g, 6.0, (True, 0),
                                             False).flattened)
        # A cache the guest dropped below where its fill began.
        g = window(300, 0.5, 260, fill_points=[[280, 6.0], [100, 1.0]])
        self.assertFalse(fill_curve.measured(g, 0.5, (True, 0),
                                             False).flattened)

    def test_a_probe_takes_the_free_memory_of_a_fill_past_its_knee(self):
        taker = agentless(1, read_mb_s=3.0)
        points = [[100, 6.0], [700, 1.0], [800, 0.98]]
        donor = dataclasses.replace(
            window(900, 0.97, 860, fill_points=points), uuid=agentless(
                2).uuid, name='g2')
        moved, plan = deltas(taker, donor)
        self.assertGreater(moved[taker.uuid], 0)
        self.assertEqual(-moved[taker.uuid], moved[donor.uuid])
        self.assertIn('utility (probe)', plan.moves[0].reason)
        # Before its knee its free memory is what its fill spends next.
        points = [[100, 6.0], [700, 2.0]]
        donor = dataclasses.replace(
            window(900, 1.0, 860, fill_points=points), uuid=agentless(
                2).uuid, name='g2')
        moved, _ = deltas(taker, donor)
        self.assertEqual({}, moved)
