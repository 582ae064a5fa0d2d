"""The real-guest lab's bookkeeping: status lines, parameters, results.

The runs themselves boot guests: tests/functional/test_lab_guests.py.
"""

import dataclasses
import os

import fixtures
import testtools

from tests.unit.agent import fakes
from watcher_cams.cmd import lab as lab_cmd
from watcher_cams.lab import core
from watcher_cams.lab import guest_results as gr
from watcher_cams.lab import real_guests as rg

MB = core.MB


def synthetic_run(label, hot_miss, random_miss, window_from=2):
    """A Run of 4 samples, 100 MiB read per guest per sample."""
    run = rg.Run(label)
    for i in range(4):
        # Misses only count from ``window_from`` on in the hot/cold guest,
        # so the whole run and the window differ.
        hot = 100 * max(0, i - window_from + 1) * hot_miss
        run.series.append({
            't': 100.0 * i,
            'size_mb': {'hotcold': 640 + 64 * i, 'random': 640 - 64 * i},
            'app_mb': {'hotcold': 100.0 * i, 'random': 100.0 * i},
            'disk_mb': {'hotcold': hot + 50.0 * min(i, 1),
                        'random': 100.0 * i * random_miss},
            'counters': {}, 'done': {'hotcold': i == 3, 'random': i == 3}})
    return run


class TestParameters(testtools.TestCase):

    def test_status_line(self):
        self.assertEqual((12, 786432, 1.5, True),
                         core.parse_status('12 786432 1.500 1\n'))
        self.assertEqual((0, 0, 0.0, False), core.parse_status('0 0 0 0'))
        for bad in ('', '1 2 3', '1 2 3 4 5', 'a b c d', 'cams-reader: no'):
            self.assertRaises(ValueError, core.parse_status, bad)

    def test_reader_command_is_paced_and_seeded(self):
        exp = rg.Experiment()
        cmd = rg.reader_command(exp.guests[0], exp, 7)
        self.assertIn('cams-reader hotcold /lab/data -b 64', cmd)
        self.assertIn('-n %d -r 100 -P 0.9 -s 7' % exp.reads, cmd)
        self.assertTrue(cmd.rstrip().endswith('&'))

    def test_one_reader_command_line_for_both_labs(self):
        # The double-caching lab's uniform reader: no hot share, unpaced.
        cmd = core.reader_command('uniform', '/lab/data', (1024, 50, 0), 2)
        self.assertEqual('cams-reader uniform /lab/data -b 1024 -n 50 -r 0 '
                         '-s 2 -o %s' % core.READER_STATUS, cmd)
        self.assertIn(' -r 2.5 -P 0.75 -s 1 ', core.reader_command(
            'hotcold', '/dev/vdb', (64, 10, 2.5), 1, 0.75))
        self.assertEqual('x </dev/null >%s 2>&1 &' % core.READER_LOG,
                         core.in_background('x'))

    def test_bad_experiments_are_refused_with_the_reason(self):
        g = rg.GuestSpec('a', 'hotcold', 1024, 512)
        cases = [
            ({'guests': (g,)}, 'two guests'),
            ({'guests': (g, g)}, 'distinct'),
            ({'guests': (g, dataclasses.replace(g, name='b',
                                                reader='scan'))}, 'reader'),
            ({'guests': (g, dataclasses.replace(g, name='b', boot_mb=2048))},
             'boot_mb'),
            ({'strategies': ('utility',)}, 'static'),
            ({'strategies': ('static', 'magic')}, 'static'),
            ({'measure_from_s': 600}, 'measure_from_s'),
            ({'cycle_s': 1}, 'cycle_s'),
            ({'domain_type': 'xen'}, 'domain_type'),
            ({'hot_prob': 1.0}, 'hot_prob'),
            ({'hot_prob': 0}, 'hot_prob'),
        ]
        for changes, words in cases:
            exc = self.assertRaises(core.LabError, rg.Experiment, **changes)
            self.assertIn(words, str(exc))

    def test_budget_is_the_static_total(self):
        exp = rg.Experiment()
        self.assertEqual(sum(g.boot_mb for g in exp.guests), exp.budget_mb)
        self.assertEqual(60000, exp.reads)


class TestResults(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.exp = rg.Experiment(duration_s=300, measure_from_s=150,
                                 strategies=('static', 'utility'))

    def test_rows_have_whole_run_and_window_figures(self):
        rows = gr.rows(self.exp, {'static': synthetic_run('static', 0.6, 0.9),
                                  'utility': synthetic_run('utility', 0.2,
                                                           0.95)})
        static, utility = rows
        self.assertEqual(('guests', 'static'),
                         (static['scenario'], static['strategy']))
        hot = static['guests']['hotcold']
        self.assertEqual(300 * MB, hot['app_read_bytes'])
        self.assertEqual(int((120 + 50) * MB), hot['disk_read_bytes'])
        # Window from t=200: 100 MiB read, 60 MiB missed.
        self.assertAlmostEqual(0.6, hot['window_miss_ratio'])
        self.assertEqual(832, utility['guests']['hotcold']['final_mb'])
        self.assertEqual(sum(g['disk_read_bytes']
                             for g in static['guests'].values()),
                         static['disk_read_bytes'])

    def test_target_is_the_window_miss_ratio_of_hotcold_guests(self):
        runs = {'static': synthetic_run('static', 0.6, 0.9),
                'utility': synthetic_run('utility', 0.15, 0.95)}
        [(name, ok, detail)] = gr.reduction_checks(
            self.exp, gr.rows(self.exp, runs))
        # The default mode at the 90% hot share: 3x.
        self.assertIn('utility: hotcold reads >= 3x less', name)
        self.assertTrue(ok, detail)
        self.assertIn('4.00x', detail)
        runs['utility'] = synthetic_run('utility', 0.3, 0.95)
        [(name, ok, detail)] = gr.reduction_checks(
            self.exp, gr.rows(self.exp, runs))
        self.assertFalse(ok, detail)
        self.assertIn('2.00x', detail)
        # Below that hot share the lab's own 2x.
        exp = dataclasses.replace(self.exp, hot_prob=0.8)
        [(name, ok, detail)] = gr.checks(exp, gr.rows(exp, runs))
        self.assertIn('>= 2x less', name)
        self.assertTrue(ok, detail)

    def test_default_mode_reads_no_more_than_paper_mode(self):
        exp = rg.Experiment(duration_s=300, measure_from_s=150, strategies=(
            'static', 'cams-paper', 'utility'))
        runs = {'static': synthetic_run('static', 0.6, 0.9),
                'cams-paper': synthetic_run('cams-paper', 0.25, 0.92),
                'utility': synthetic_run('utility', 0.2, 0.95,
                                         window_from=1)}
        found = {c[0]: c for c in gr.checks(exp, gr.rows(exp, runs))}
        _, ok, detail = found['utility: the guests read no more than '
                              'cams-paper']
        # Less in the window (0.2 + 0.95 against 0.25 + 0.92), more over
        # the whole run, where the hot/cold guest missed from the start.
        self.assertFalse(ok, detail)
        self.assertIn('from the window on 1.150 against 1.170 (-1.7%)',
                      detail)
        self.assertIn('whole run 1.317 against 1.253 (+5.1%)', detail)
        runs['utility'] = synthetic_run('utility', 0.2, 0.92)
        found = {c[0]: c for c in gr.checks(exp, gr.rows(exp, runs))}
        self.assertTrue(found['utility: the guests read no more than '
                              'cams-paper'][1])

    def test_a_move_the_wrong_way_is_reported(self):
        exp = rg.Experiment(strategies=('static', 'cams-paper', 'utility'))
        right = [{'strategy': 'utility', 't': 150.0, 'guest': 'hotcold',
                  'from_mb': 640, 'to_mb': 896},
                 {'strategy': 'utility', 't': 150.0, 'guest': 'random',
                  'from_mb': 640, 'to_mb': 384},
                 {'strategy': 'cams-paper', 't': 60.0, 'guest': 'hotcold',
                  'from_mb': 896, 'to_mb': 768}]
        [(_, ok, detail)] = gr.direction_checks(exp, right)
        self.assertTrue(ok, detail)
        self.assertEqual('0 of 2 moves the wrong way', detail)
        wrong = right + [{'strategy': 'utility', 't': 540.0,
                          'guest': 'hotcold', 'from_mb': 896,
                          'to_mb': 576}]
        [(_, ok, detail)] = gr.direction_checks(exp, wrong)
        self.assertFalse(ok, detail)
        self.assertIn('1 of 3 moves the wrong way; 540.0 s hotcold 896 -> '
                      '576 MiB', detail)
        # Nothing of a mode that did not run.
        exp = rg.Experiment(strategies=('static', 'cams-paper'))
        self.assertEqual([], gr.direction_checks(exp, wrong))

    def test_guests_without_agent_keep_a_share_of_utility_gain(self):
        exp = rg.Experiment(duration_s=300, measure_from_s=150, strategies=(
            'static', 'utility', 'utility-agentless'))
        runs = {'static': synthetic_run('static', 0.6, 0.9),
                'utility': synthetic_run('utility', 0.2, 0.95),
                'utility-agentless': synthetic_run('utility-agentless',
                                                   0.3, 0.92)}
        name, ok, detail = gr.checks(exp, gr.rows(exp, runs))[-1]
        self.assertIn('utility-agentless keeps', name)
        # Window miss ratios summed over the guests: static 1.5, saved
        # 0.35 with agents and 0.28 without.
        self.assertTrue(ok, detail)
        self.assertIn('(80%)', detail)
        runs['utility-agentless'] = synthetic_run('utility-agentless',
                                                  0.35, 0.93)
        name, ok, detail = gr.checks(exp, gr.rows(exp, runs))[-1]
        self.assertFalse(ok, detail)
        self.assertIn('(63%)', detail)
        # Miss ratios in the window, not bytes over the run: misses
        # before the window change nothing.
        runs['utility-agentless'] = synthetic_run('utility-agentless',
                                                  0.3, 0.92, window_from=1)
        name, ok, detail = gr.checks(exp, gr.rows(exp, runs))[-1]
        self.assertIn('(80%)', detail)

    def test_summary_table_names_every_guest_and_strategy(self):
        runs = {'static': synthetic_run('static', 0.6, 0.9),
                'utility': synthetic_run('utility', 0.2, 0.95)}
        text = gr.summary(self.exp, gr.rows(self.exp, runs))
        self.assertEqual(6, len(text.splitlines()))
        self.assertIn('3.00x', text)


class TestCommand(testtools.TestCase):

    def test_bad_arguments_and_a_missing_image_are_usage_errors(self):
        image_dir = self.useFixture(fixtures.TempDir()).path
        for name in ('vmlinuz', 'initrd.gz', 'data.img'):
            open(os.path.join(image_dir, name), 'w').close()
        stderr = self.useFixture(fixtures.StringStream('stderr')).stream
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
        for argv, words in (
                (['--duration', '10', '--measure-from', '20'],
                 'measure_from_s'),
                (['--strategies', 'utility'], 'start with static'),
                (['--boot-mb', '2048', '--max-mb', '1024'], 'boot_mb'),
                (['--image-dir', image_dir, '--data-mb', '77'],
                 'guest-image.sh --lab-data 77')):
            exc = self.assertRaises(SystemExit, lab_cmd.main,
                                    ['guests'] + argv)
            self.assertEqual(2, exc.code)
            stderr.seek(0)
            self.assertIn(words, stderr.read())


class TestReservedForBudget(testtools.TestCase):
    def test_all_but_the_budget_and_what_other_domains_hold(self):
        mine = [fakes.FakeDomain('lab-%d' % i, max_mb=1024, actual_mb=768)
                for i in (1, 2)]
        conn = fakes.FakeConn(mine + [fakes.FakeDomain('other',
                                                       max_mb=2048)])
        self.useFixture(fixtures.MockPatch(
            'watcher_cams.agent.collectors.host.meminfo_kb',
            return_value={'MemTotal': 16384 * 1024}))
        guests = [core.GuestRun(d) for d in mine]
        # 16 GiB less the 1,536 MiB budget and the other domain's 2 GiB.
        self.assertEqual(12800,
                         core.reserved_for_budget_mb(conn, 1536, guests))
        self.assertEqual(0, core.reserved_for_budget_mb(conn, 16384, guests))
