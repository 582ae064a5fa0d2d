import io
import json
import os

import fixtures
import testtools

from watcher_cams.cmd import lab as lab_cmd
from watcher_cams.lab.sim import compare
from watcher_cams.lab.sim import experiment

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


def with_guests(r, **guests):
    """Row ``r`` with ``guests``: {name: (GiB read, workload or None)}."""
    r['guests'] = {n: dict({'disk_read_bytes': int(gib * GIB)}, **(
        {'workload': kind} if kind else {}))
        for n, (gib, kind) in guests.items()}
    return r


def workload_runs():
    """Two hosts: utility against the oracle, guest by guest.

    seed-1's scan reads 3 GiB more, its uniform reader 1 less; seed-2's
    scan 0.5 more and its idle guest as much; a guest of an old run has
    no workload.
    """
    base = [
        with_guests(row('seed-1', 'oracle', 5.0),
                    a=(1.0, 'idle, then scan'), b=(4.0, 'uniform')),
        with_guests(row('seed-2', 'oracle', 2.0),
                    a=(2.0, 'idle, then scan'), c=(0.0, 'idle'),
                    d=(0.0, None))]
    new = [
        with_guests(row('seed-1', 'utility', 7.0),
                    a=(4.0, 'idle, then scan'), b=(3.0, 'uniform')),
        with_guests(row('seed-2', 'utility', 2.5),
                    a=(2.5, 'idle, then scan'), c=(0.0, 'idle'),
                    d=(9.0, None))]
    return base, new


class TestByWorkload(testtools.TestCase):
    def test_each_kind_sums_what_its_guests_read_more_and_less(self):
        excess = compare.by_workload(*workload_runs())
        self.assertEqual(
            [('idle, then scan', 2, 3.5, 0.0), ('idle', 1, 0.0, 0.0),
             ('uniform', 1, 0.0, 1.0)],
            [(w.workload, w.guests, w.more_gib, w.less_gib)
             for w in excess])

    def test_the_new_run_s_own_reference_comes_first(self):
        base, new = workload_runs()
        new.append(with_guests(row('seed-1', 'oracle', 7.0),
                               a=(4.0, 'idle, then scan'),
                               b=(3.0, 'uniform')))
        excess = {w.workload: w.more_gib
                  for w in compare.by_workload(base, new)}
        self.assertEqual(0.5, excess['idle, then scan'])

    def test_without_a_workload_or_a_reference_it_is_an_error(self):
        base, new = workload_runs()
        self.assertRaises(compare.CompareError, compare.by_workload,
                          base, new, 'utility', 'static')
        self.assertRaises(compare.CompareError, compare.by_workload,
                          base_run(), base_run())

    def test_rows_of_a_run_keep_what_each_guest_runs(self):
        spec = {'guests': [{'name': 'g0', 'phases': [
            {'pattern': 'idle'}, {'pattern': 'scan'}]}]}
        r = experiment.memory_row(
            'random-hosts', experiment.Point('seed-1', {}, dict(
                spec, host={'disk_mb_s': 100.0})),
            'utility', {'g0': 1024}, {'g0': 512}, None)
        self.assertEqual('idle, then scan', r['guests']['g0']['workload'])


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

    def test_prints_what_each_kind_of_guest_read_more(self):
        # One run with the oracle in it, against itself.
        rows = sum(workload_runs(), [])
        run = self.run_dir('run', rows)
        self.assertEqual(0, lab_cmd.main(['compare', run, run,
                                          '--by-workload', 'oracle']))
        text = self.stdout.getvalue()
        self.assertIn('GiB read more than oracle', text)
        self.assertIn('idle, then scan  2       3.50', text)
        exc = self.assertRaises(SystemExit, lab_cmd.main, [
            'compare', run, run, '--by-workload', 'static'])
        self.assertEqual(2, exc.code)

    def test_a_missing_or_broken_run_is_a_usage_error(self):
        base = self.run_dir('base', base_run())
        broken = os.path.join(self.tmp, 'broken.json')
        with open(broken, 'w') as f:
            f.write('{"rows": ')
        for other in (os.path.join(self.tmp, 'nope'), broken):
            exc = self.assertRaises(SystemExit, lab_cmd.main,
                                    ['compare', base, other])
            self.assertEqual(2, exc.code)
