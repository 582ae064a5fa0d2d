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
        # 2 MiB/s fewer reads over 200 MiB; the whole fill, from 200 MiB,
        # saved as much per MiB.
        fill = fill_curve.measured(g, 3.0, (False, 0), False)
        self.assertEqual(fill_curve.Fill(slope=0.01, mean=0.01,
                                         mean_from_mb=200), fill)
        state = {}
        fill_curve.remember(state, fill)
        self.assertEqual({fill_curve.SLOPE_KEY: 0.01,
                          fill_curve.MEAN_KEY: 0.01,
                          fill_curve.MEAN_FROM_KEY: 200}, state)
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

    def test_a_fill_whose_last_span_saved_reads_is_falling(self):
        def falling(read_mb_s, **state):
            g = window(900, read_mb_s, 860, **state)
            return fill_curve.measured(g, read_mb_s, (True, 0),
                                       False).falling
        # 2 to 1 MiB/s over its last 180 MiB: beyond the chance (a tenth).
        self.assertTrue(falling(1.0, fill_points=[[100, 6.0], [700, 2.0]]))
        # 0.05 less: within it.
        self.assertFalse(falling(0.95, fill_points=[[100, 6.0], [700, 1.0]]))
        # Its first window alone: nothing to tell.
        self.assertFalse(falling(1.0))

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


class TestAFillsMean(testtools.TestCase):

    def test_from_nearly_empty_it_measures_the_whole_curve_below(self):
        # From 100 MiB (at most a quarter of 800) the reads fell from 6
        # to 1 MiB/s: 5 MiB/s saved over 700 MiB, on average.
        g = window(800, 1.0, fill_points=[[100, 6.0], [600, 1.2]])
        fill = fill_curve.measured(g, 1.0, (False, 0), False)
        self.assertAlmostEqual(5.0 / 700, fill.mean)
        self.assertTrue(fill.from_empty)
        state = {}
        fill_curve.remember(state, fill)
        self.assertAlmostEqual(5.0 / 700, state[fill_curve.MEAN_KEY])
        self.assertEqual(0.0, state[fill_curve.MEAN_FROM_KEY])

    def test_from_higher_up_the_span_it_passed(self):
        # A fill that began at 300 of 800 MiB saw only the curve's top:
        # 0.5 MiB/s saved over 500 MiB.
        g = window(800, 1.0, fill_points=[[300, 1.5], [600, 1.2]])
        fill = fill_curve.measured(g, 1.0, (False, 0), False)
        self.assertAlmostEqual(0.001, fill.mean)
        self.assertEqual(300, fill.mean_from_mb)
        self.assertFalse(fill.from_empty)

    def test_a_later_fill_keeps_a_lower_ones_and_a_new_workload_none(self):
        # Kept before fill_mean_from was: from nearly empty.
        g = window(800, 1.0, fill_points=[[300, 1.5], [600, 1.2]],
                   fill_mean=0.007)
        for window_ in ((False, 0), (True, 0)):
            fill = fill_curve.measured(g, 1.0, window_, False)
            self.assertEqual((0.007, 0.0), (fill.mean, fill.mean_from_mb))
        # A new workload forgets it: this fill's own, from 300 MiB.
        fill = fill_curve.measured(g, 1.0, (False, 0), True)
        self.assertEqual(300, fill.mean_from_mb)
        self.assertIsNone(fill_curve.measured(g, 1.0, (True, 0),
                                              True).mean)
        # An earlier fill from 400 MiB spanned less than this one.
        g = window(800, 1.0, fill_points=[[300, 1.5], [600, 1.2]],
                   fill_mean=0.007, fill_mean_from=400)
        fill = fill_curve.measured(g, 1.0, (False, 0), False)
        self.assertEqual(300, fill.mean_from_mb)

    def test_junk_in_the_state_is_dropped(self):
        for junk in ('x', -1, float('nan'), True, [0.01]):
            for state in ({'fill_mean': junk},
                          {'fill_mean': 0.01, 'fill_mean_from': junk}):
                g = window(400, 3.0, **state)
                self.assertIsNone(fill_curve.measured(g, 3.0, (True, 1),
                                                      False).mean)


class TestAFillPricesASearch(testtools.TestCase):
    """What a flat reader's search takes below every size a donor held."""

    def flat_and_donor(self, **state):
        # Measured reading as much from 1,536 to 2,304 MiB: its search
        # steps to 3,072 MiB. The donor, at 3,072 MiB, was never measured
        # smaller: only its fill from nearly empty prices that memory.
        flat = agentless(1, read_mb_s=6.0, seen=[(1536, 6.0, 300),
                                                 (2304, 6.0, 120)])
        donor = dataclasses.replace(
            agentless(2, actual_mb=3072, read_mb_s=0.5), max_mb=3072)
        donor.policy_state[utility.STATE_KEY] = state
        return flat, donor

    def test_memory_a_flat_fill_prices_at_little(self):
        # 0.1 MiB/s per GiB: 1,024 MiB cost at most a twentieth of the 6
        # MiB/s the search may save.
        flat, donor = self.flat_and_donor(fill_mean=0.1 / 1024)
        moved, plan = deltas(flat, donor)
        self.assertEqual({flat.uuid: 1024, donor.uuid: -1024}, moved)
        self.assertIn('past every size', plan.moves[0].reason)

    def test_only_down_to_the_cache_the_fill_began_at(self):
        # The donor's cache is 2,816 MiB; its fill from 2,304 MiB priced
        # 512 MiB of it, one from 2,600 less than a search step.
        flat, donor = self.flat_and_donor(fill_mean=0.1 / 1024,
                                          fill_mean_from=2304)
        moved, plan = deltas(flat, donor)
        self.assertEqual({flat.uuid: 512, donor.uuid: -512}, moved)
        self.assertIn('past every size', plan.moves[0].reason)
        flat, donor = self.flat_and_donor(fill_mean=0.1 / 1024,
                                          fill_mean_from=2600)
        moved, plan = deltas(flat, donor)
        self.assertNotIn('past every size', str(plan.moves))

    def test_not_what_a_steep_fill_or_no_fill_prices(self):
        # A hot/cold reader's fill: 5 MiB/s per GiB, its hot set below.
        for state in ({'fill_mean': 5.0 / 1024}, {}):
            flat, donor = self.flat_and_donor(**state)
            moved, plan = deltas(flat, donor)
            self.assertNotIn('past every size', str(plan.moves))
