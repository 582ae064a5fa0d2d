import io
import json
import os

import fixtures
import testtools

from watcher_cams.cmd import lab as lab_cmd
from watcher_cams.lab.sim import compare

GIB = 1024 ** 3


def row(point, strategy, gib, moved_mb=0, scenario='random-hosts'):
    return {'scenario': scenario, 'point': point, 'strategy': strategy,
            'disk_read_bytes': int(gib * GIB), 'moved_mb': moved_mb}


def base_run():
    """Three hosts with every reference; utility misses a few targets.

    seed-1 reads more than static and paper mode; seed-2 more than 1.05x
    the oracle and moves more than paper mode; seed-3 misses none.
    """
    refs = {'seed-1': (10.0, 10.2, 10.1), 'seed-2': (20.0, 19.0, 10.0),
            'seed-3': (30.0, 29.0, 28.0)}
    mine = {'seed-1': (10.5, 100), 'seed-2': (12.0, 900),
            'seed-3': (28.5, 100)}
    rows = []
    for p, (static, paper, oracle) in refs.items():
        rows += [row(p, 'static', static), row(p, 'cams-paper', paper, 512),
                 row(p, 'oracle', oracle),
                 row(p, 'utility', mine[p][0], mine[p][1])]
    return rows


class TestCompare(testtools.TestCase):
    def test_sums_counts_and_targets_of_a_sweep_of_one_strategy(self):
        # The new run ran utility alone: its targets are the base run's
        # references. seed-1 gains 1 GiB (now below static and paper),
        # seed-2 loses 0.005 (within the threshold), seed-3 loses 2 GiB
        # (now above static, paper mode and 1.05x the oracle) and moves
        # more than paper mode.
        new = [row('seed-1', 'utility', 9.5, 100),
               row('seed-2', 'utility', 12.005, 900),
               row('seed-3', 'utility', 30.5, 600)]
        [s] = compare.compare(base_run(), new)
        self.assertEqual(('random-hosts', 3), (s.scenario, s.points))
        self.assertAlmostEqual(51.0, s.base_gib)
        self.assertAlmostEqual(52.005, s.new_gib, places=5)
        self.assertEqual((1, 1), (s.better, s.worse))
        self.assertEqual((1100, 1600), (s.base_moved_mb, s.new_moved_mb))
        self.assertEqual({'above static': (1, 1),
                          'above paper mode': (1, 1),
                          'above 1.05x oracle': (1, 2),
                          'moved more than paper mode': (1, 2)}, s.misses)
        self.assertEqual(['seed-1', 'seed-2', 'seed-3'],
                         [c[1] for c in s.changes])

    def test_a_run_s_own_references_come_first(self):
        # Paper mode itself changed in the new run: seed-3's 28.5 is now
        # above it.
        new = [row('seed-3', 'utility', 28.5, 100),
               row('seed-3', 'cams-paper', 28.0, 512)]
        [s] = compare.compare(base_run(), new)
        self.assertEqual((0, 1), s.misses['above paper mode'])

    def test_the_text_has_the_sums_the_targets_and_the_largest_changes(self):
        new = [row('seed-1', 'utility', 9.5, 100)]
        text = '\n'.join(compare.lines(compare.compare(base_run(), new),
                                       top=1))
        self.assertIn('random-hosts  1       10.50            9.50', text)
        self.assertIn('above paper mode', text)
        self.assertIn('random-hosts, gained most: seed-1 -1.00 GiB '
                      '(10.50 -> 9.50)', text)
        self.assertNotIn('lost most', text)

    def test_points_without_disk_reads_are_left_out(self):
        speed = {'scenario': 'llc', 'point': 'p', 'strategy': 'utility',
                 'speed': 1.2}
        new = [row('seed-1', 'utility', 9.5, 100), speed]
        [s] = compare.compare(base_run() + [speed], new)
        self.assertEqual('random-hosts', s.scenario)

    def test_nothing_in_common_is_an_error(self):
        self.assertRaises(compare.CompareError, compare.compare,
                          base_run(), [row('seed-9', 'utility', 1.0)])
        self.assertRaises(compare.CompareError, compare.compare,
                          base_run(), base_run(), 'sms')


class TestCommand(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.stdout = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', self.useFixture(
                fixtures.StringStream('stderr')).stream))

    def run_dir(self, name, rows):
        path = os.path.join(self.tmp, name)
        os.makedirs(path)
        with open(os.path.join(path, 'results.json'), 'w') as f:
            json.dump({'rows': rows}, f)
        return path

    def test_prints_the_comparison_and_draws_it(self):
        base = self.run_dir('base', base_run())
        new = self.run_dir('new', [row('seed-1', 'utility', 9.5, 100)])
        png = os.path.join(self.tmp, 'change.png')
        self.assertEqual(0, lab_cmd.main(['compare', base, os.path.join(
            new, 'results.json'), '--plot', png]))
        text = self.stdout.getvalue()
        self.assertIn('random-hosts, gained most: seed-1', text)
        self.assertIn('wrote %s' % png, text)
        self.assertTrue(os.path.getsize(png) > 1000)

    def test_a_missing_or_broken_run_is_a_usage_error(self):
        base = self.run_dir('base', base_run())
        broken = os.path.join(self.tmp, 'broken.json')
        with open(broken, 'w') as f:
            f.write('{"rows": ')
        for other in (os.path.join(self.tmp, 'nope'), broken):
            exc = self.assertRaises(SystemExit, lab_cmd.main,
                                    ['compare', base, other])
            self.assertEqual(2, exc.code)
