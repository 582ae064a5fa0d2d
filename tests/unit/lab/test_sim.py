import io
import json
import os

import fixtures
import testtools
import yaml

from watcher_cams.cmd import lab as lab_cmd
from watcher_cams.lab import progress
from watcher_cams.lab.sim import experiment
from watcher_cams.lab.sim import host as sim_host
from watcher_cams.lab.sim import lfu as lfu_sim
from watcher_cams.lab.sim import llc
from watcher_cams.lab.sim import memory_scenarios as ms
from watcher_cams.lab.sim import oracle
from watcher_cams.lab.sim import policies
from watcher_cams.lab.sim import random_hosts
from watcher_cams.lab.sim import scenarios
from watcher_cams.lab.sim import simulate
from watcher_cams.lab.sim import spec as spec_mod
from watcher_cams.lab.sim import targets
from watcher_cams.lab.sim import workloads
from watcher_cams.policy import guards
from watcher_cams.policy import lfu
from watcher_cams.policy import report


def small_spec(**changes):
    """Two guests on a 2 GiB host: hot/cold vs uniform, a few minutes."""
    data = {
        'name': 'small', 'block_kb': 4096, 'cycle_s': 10,
        'duration_s': 600, 'warmup_s': 200,
        'host': {'ram_mb': 2048, 'reserved_mb': 256},
        'guests': [
            {'name': 'vm1', 'max_mb': 1536, 'size_mb': 896, 'phases': [
                {'pattern': 'hot_cold', 'range_mb': 2048, 'rate_mb_s': 8,
                 'committed_mb': 128}]},
            {'name': 'vm2', 'max_mb': 1536, 'size_mb': 896, 'phases': [
                {'pattern': 'uniform', 'range_mb': 65536, 'rate_mb_s': 32,
                 'committed_mb': 128}]},
        ],
    }
    data.update(changes)
    return spec_mod.validate(data)


class TestOracle(testtools.TestCase):
    def test_oracle_equals_brute_force(self):
        s = small_spec()
        best_reads, best_sizes = oracle.brute_force(s, 128)
        result = oracle.solve(s, step_mb=128)
        self.assertEqual(best_reads, result.reads_kb)
        self.assertEqual(sum(result.disk_kb.values()), result.reads_kb)

    def test_floors_off_the_step_still_split_all_the_memory(self):
        # Floors of 298 MiB (170 committed and the margin): from them in
        # 64 MiB steps two guests reach 1,748 of the 1,792 MiB at most.
        s = small_spec()
        for g in s['guests']:
            g['phases'][0]['committed_mb'] = 170
        s = spec_mod.validate(s)
        sizes = oracle.solve(s).splits[0][1]
        self.assertEqual(1792, sum(sizes.values()), sizes)

    def test_memory_no_whole_step_fills_goes_to_a_guest(self):
        # 1,788 MiB (KSM savings make such budgets): 60 MiB beyond any
        # split in whole steps, worth blocks to either guest.
        s = small_spec()
        s['guests'][1]['size_mb'] = 892
        s['host']['ram_mb'] -= 4
        sizes = oracle.solve(spec_mod.validate(s)).splits[0][1]
        self.assertEqual(1788, sum(sizes.values()), sizes)

    def test_memory_no_guest_starts_with_is_split_too(self):
        # Whatever the guards let a policy promise (utility hands it out),
        # not only what the guests start with.
        s = small_spec()
        s['guests'][1]['size_mb'] = 640
        sizes = oracle.solve(spec_mod.validate(s)).splits[0][1]
        self.assertEqual(1792, sum(sizes.values()), sizes)

    def test_guests_that_never_evict_run_once_above_their_data(self):
        s = small_spec()
        s['guests'][0]['phases'][0]['range_mb'] = 256
        solo = oracle.solo_spec(spec_mod.validate(s), s['guests'][0])
        runs = oracle.SoloRuns()
        at_1536 = oracle.SoloRuns().reads(solo, 1536)
        self.assertEqual(runs.reads(solo, 576), runs.reads(solo, 1536))
        self.assertEqual(at_1536, runs.reads(solo, 1536))
        self.assertEqual(1, len(runs._memo))
        # Below its data it evicts: every size is a run of its own.
        self.assertNotEqual(runs.reads(solo, 320), runs.reads(solo, 384))
        self.assertEqual(3, len(runs._memo))

    def test_runs_ahead_in_processes_read_as_runs_one_by_one(self):
        s = small_spec()
        s['guests'][0]['phases'][0]['range_mb'] = 256
        s = spec_mod.validate(s)
        grids = {'vm1': [320, 384, 576, 640, 704], 'vm2': [320, 384]}
        ahead = oracle.SoloRuns(workers=2)
        oracle.Curves(s, ahead).prefetch(grids)
        one_by_one = oracle.SoloRuns(workers=1)
        curves = oracle.Curves(s, one_by_one)
        curves.prefetch(grids)
        self.assertEqual(0, len(one_by_one._memo))
        for name, sizes in grids.items():
            for size in sizes:
                self.assertEqual(curves.reads(name, size),
                                 oracle.Curves(s, ahead).reads(name, size))
        # vm1's 256 MiB never evict at 384 MiB or more: its larger sizes,
        # in later batches, were not run ahead.
        vm1 = oracle.solo_spec(s, s['guests'][0])
        self.assertEqual(384, ahead._fits[vm1])
        self.assertEqual({320, 384}, {size for solo, size in ahead._memo
                                      if solo == vm1})

    def test_points_that_share_a_guest_run_it_once(self):
        runs = oracle.SoloRuns()
        for rate in (4, 8):
            s = small_spec()
            s['guests'][0]['phases'][0]['rate_mb_s'] = rate
            curves = oracle.Curves(spec_mod.validate(s), runs)
            curves.reads('vm1', 640)
            curves.reads('vm2', 640)
        self.assertEqual(3, len(runs._memo))

    def test_oracle_is_a_lower_bound_for_the_policies(self):
        s = small_spec()
        floor = oracle.solve(s).reads_kb
        for label in ('static', 'cams-paper', 'utility'):
            reads = simulate.Simulation(s, label).run().total.disk_kb
            self.assertLessEqual(floor, reads, label)

    def test_the_replay_holds_the_split_where_nothing_changes(self):
        s = small_spec()
        result = oracle.solve(s)
        run = oracle.replay(s, result)
        self.assertEqual(0, run.moves)
        self.assertEqual(result.reads_kb, run.total.disk_kb)

    def test_the_replay_pays_the_refill_the_oracle_does_not(self):
        # A uniform reader over 1 GiB at 32 MiB/s for 400 s, then over
        # 64 GiB; a 1,100 MiB scan beside it fits only once that one
        # needs nothing. At the phase change the scan gets 1 GiB more,
        # which the oracle finds full already (its solo run held that
        # size from the start) and the replay has to fill: about the
        # scan's range, read once more.
        s = small_spec(duration_s=1200, warmup_s=200)
        s['guests'][0]['phases'] = [{'pattern': 'scan', 'range_mb': 1100,
                                     'rate_mb_s': 4, 'committed_mb': 128}]
        s['guests'][1]['phases'] = [
            {'pattern': 'uniform', 'range_mb': 1024, 'rate_mb_s': 32,
             'duration_s': 600, 'committed_mb': 128},
            {'pattern': 'uniform', 'range_mb': 65536, 'rate_mb_s': 8,
             'committed_mb': 128}]
        s = spec_mod.validate(s)
        result = oracle.solve(s)
        (_, first), (at, then) = result.splits
        self.assertLess(first['vm1'], then['vm1'])
        run = oracle.replay(s, result)
        self.assertEqual(2, run.moves)
        self.assertEqual(abs(then['vm1'] - first['vm1'])
                         + abs(then['vm2'] - first['vm2']), run.moved_mb)
        refill_kb = run.total.disk_kb - result.reads_kb
        self.assertGreater(refill_kb, 700 * 1024)
        self.assertLess(refill_kb, 1100 * 1024)

    def test_phases_split_the_oracle(self):
        phases = [{'pattern': 'hot_cold', 'range_mb': 1024, 'rate_mb_s': 8,
                   'duration_s': 300},
                  {'pattern': 'idle', 'duration_s': 300}]
        s = small_spec(duration_s=1200, warmup_s=0)
        s['guests'][0]['phases'] = phases
        s = spec_mod.validate(s)
        self.assertEqual([0, 300.0, 600.0, 900.0], oracle.segments(s))
        self.assertEqual(4, len(oracle.solve(s).splits))


class TestSimulation(testtools.TestCase):
    def test_every_policy_keeps_the_guards(self):
        s = small_spec()
        cfg = policies.GUARDS
        for label in policies.POLICIES:
            sim = simulate.Simulation(s, label)
            result = sim.run()
            for cycle in result.series:
                total = sum(cycle['size_mb'].values())
                self.assertLessEqual(total, 2048 - 256, label)
                for name, size in cycle['size_mb'].items():
                    self.assertLessEqual(size, 1536)
                    self.assertGreaterEqual(
                        size, min(896, cfg.min_guest_mb), label)
            self.assertEqual(0.0, max(0.0, result.overcommit_mb))

    def test_static_never_moves_and_counts_reads(self):
        result = simulate.Simulation(small_spec(), 'static').run()
        self.assertEqual(0, result.moves)
        vm2 = result.traffic['vm2']
        # 400 measured seconds at 32 MiB/s, nearly all missed.
        self.assertEqual(400 * 32 * 1024, vm2.app_kb)
        self.assertGreater(vm2.disk_kb, 0.9 * vm2.app_kb)

    def test_cache_aware_moves_memory_to_the_hot_cold_guest(self):
        # Over the run (the oracle's split is 1024/768 MiB; utility mode
        # later also tries the uniform reader's 0.5 MiB/s per GiB, so its
        # last cycle alone says little).
        for label in ('cams-paper', 'utility'):
            result = simulate.Simulation(small_spec(), label).run()
            mean = {name: sum(c['size_mb'][name] for c in result.series)
                    / len(result.series) for name in ('vm1', 'vm2')}
            self.assertGreater(mean['vm1'], mean['vm2'] + 128, label)

    def test_report_goes_through_the_agent_format(self):
        sim = simulate.Simulation(small_spec(), 'utility')
        sim.host.step(10)
        rep = sim.host.report()
        sim.host.step(10)
        rep = sim.host.report()
        self.assertEqual(1, rep['version'])
        guest = rep['guests'][0]
        self.assertEqual(10.0, guest['sample']['timestamp']
                         - guest['previous']['timestamp'])
        self.assertIsNotNone(policies.plan('utility', rep, sim))

    def test_background_collection_starts_the_next_rate_window(self):
        # As an agent on its own timer: a sample 4 s into each cycle, and
        # rates over at least 3 s, so each report is against it.
        sim = simulate.Simulation(small_spec(collect_at_s=4,
                                             rate_window_s=3,
                                             duration_s=20, warmup_s=0),
                                  'static')
        windows = []
        orig = sim.host.report

        def report():
            rep = orig()
            g = rep['guests'][0]
            if g['previous'] is not None:
                windows.append((g['previous']['timestamp'],
                                g['sample']['timestamp']))
            return rep
        sim.host.report = report
        result = sim.run()
        self.assertEqual([(4.0, 10.0), (14.0, 20.0)], windows)
        # The cycle's reads are all counted, split or not.
        whole = simulate.Simulation(small_spec(duration_s=20, warmup_s=0),
                                    'static').run()
        self.assertEqual(whole.total.app_kb, result.total.app_kb)
        exc = self.assertRaises(spec_mod.ScenarioError, spec_mod.validate,
                                dict(small_spec(), collect_at_s=10))
        self.assertIn('collect_at_s must be below cycle_s', str(exc))

    def test_a_churning_full_cache_shows_kswapd_jitter(self):
        spec = small_spec(guests=[dict(g, phases=[dict(
            g['phases'][0], pattern='uniform')]) for g in small_spec(
            )['guests']])
        spec['guests'][1]['phases'] = [{'pattern': 'idle',
                                        'committed_mb': 128}]
        host = spec_mod.build_host(spec_mod.validate(spec))
        busy, idle = host.guests
        seen = {busy.name: set(), idle.name: set()}
        for _ in range(30):
            host.step(10)
            for g in (busy, idle):
                seen[g.name].add(g.sample(host.now)['meminfo']['Cached'])
        # The busy guest's cache filled, then moved by less than the
        # watermark gap from sample to sample; the idle one never moved.
        full = busy.cache.capacity * busy.block_kb
        late = [c for c in seen[busy.name] if c > full - 4096]
        self.assertGreater(len(late), 2)
        self.assertTrue(all(full - busy.watermark_gap_kb() < c <= full
                            for c in late))
        self.assertEqual(1, len(seen[idle.name]))

    def test_ksm_savings_are_reported(self):
        s = small_spec(ksm={'ramp_s': 100})
        for g in s['guests']:
            g['shared_mb'] = 200
        host = spec_mod.build_host(spec_mod.validate(s))
        host.now = 50
        self.assertEqual(100, host.ksm_saved_mb())
        host.now = 500
        self.assertEqual(51200, host.report()['ksm']['pages_sharing'])


class TestSpec(testtools.TestCase):
    def test_bad_specs_have_clear_errors(self):
        base = small_spec()
        cases = [
            ({'host': {}}, 'ram_mb is required'),
            ({'duration_s': 'long'}, 'must be a number'),
            ({'warmup_s': 600}, 'warmup_s must be below duration_s'),
            ({'strategies': ['best']}, 'unknown strategies best'),
            ({'guests': []}, 'non-empty list'),
            ({'block_kb': 6}, 'multiple of 4'),
        ]
        for change, message in cases:
            data = dict(base, **change)
            exc = self.assertRaises(spec_mod.ScenarioError,
                                    spec_mod.validate, data)
            self.assertIn(message, str(exc))

    def test_bad_guests(self):
        base = small_spec()
        guest = dict(base['guests'][0])
        for change, message in (
                ({'size_mb': 4096}, 'above max_mb'),
                ({'phases': [{'pattern': 'zipf', 'range_mb': 10}]},
                 'unknown pattern'),
                ({'phases': [{'pattern': 'uniform'}]}, 'at least one block'),
                ({'phases': [{'pattern': 'idle', 'committed_mb': 9999}]},
                 'below max_mb'),
                ({'agent': 'no'}, 'agent must be true or false')):
            data = dict(base, guests=[dict(guest, **change)])
            exc = self.assertRaises(spec_mod.ScenarioError,
                                    spec_mod.validate, data)
            self.assertIn(message, str(exc))
        data = dict(base, guests=[dict(guest, size_mb=1536),
                                  dict(guest, name='b', size_mb=1536)])
        self.assertIn('host has', str(self.assertRaises(
            spec_mod.ScenarioError, spec_mod.validate, data)))

    def test_files(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        data = dict(small_spec(), name='from-file')
        for ext, dump in (('.json', json.dumps), ('.yaml', yaml.safe_dump)):
            path = os.path.join(tmp, 'scenario' + ext)
            with open(path, 'w') as f:
                f.write(dump(data))
            self.assertEqual('from-file', spec_mod.load_file(path)['name'])
        path = os.path.join(tmp, 'bad.yaml')
        with open(path, 'w') as f:
            f.write('guests: [unclosed')
        self.assertIn('not valid JSON/YAML', str(self.assertRaises(
            spec_mod.ScenarioError, spec_mod.load_file, path)))
        self.assertIn('cannot read', str(self.assertRaises(
            spec_mod.ScenarioError, spec_mod.load_file, path + '.missing')))

    def test_the_documented_scenario_files_load(self):
        # lab.rst runs these as scenarios nobody tuned for: they must stay
        # valid as the format grows.
        where = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                             'doc', 'source', 'scenarios')
        names = sorted(n for n in os.listdir(where) if n.endswith('.yaml'))
        self.assertEqual(['fast-audits.yaml', 'fourteen-guests.yaml',
                          'slow-readers.yaml'], names)
        for name in names:
            data = spec_mod.load_file(os.path.join(where, name))
            self.assertEqual(name[:-len('.yaml')], data['name'])
            self.assertIn('utility', data['strategies'])

    def test_workload_phases_repeat(self):
        w = workloads.Workload([
            workloads.Phase('uniform', 10, 1.0, duration_s=60),
            workloads.Phase('idle', duration_s=40)])
        self.assertEqual('idle', w.phase_at(170).pattern)
        self.assertEqual('uniform', w.phase_at(210).pattern)
        self.assertEqual([60, 100, 160], w.changes(200))
        self.assertEqual(30, len(w.blocks(0, 30)))
        self.assertEqual([], w.blocks(70, 30))


class TestLfu(testtools.TestCase):
    def test_swap_rule(self):
        hot = lfu.HotSet(1, lfu.LfuParams(check_every=1, history=10))
        for b in (1, 2, 2, 2):
            hot.record(b)
        self.assertEqual((True, None), hot.miss(1))
        self.assertEqual((True, 1), hot.miss(2))
        self.assertEqual({2}, hot.hot)

    def test_confidence_holds_back_noise(self):
        params = lfu.LfuParams(check_every=1, history=100, confidence=3.0)
        hot = lfu.HotSet(1, params)
        for b in [1] * 10 + [2] * 13:
            hot.record(b)
        hot.miss(1)
        self.assertEqual((False, None), hot.miss(2))
        for _ in range(40):
            hot.record(2)
        self.assertEqual((True, 1), hot.miss(2))

    def test_bad_params(self):
        self.assertRaises(ValueError, lfu.LfuParams, history=0)
        self.assertRaises(ValueError, lfu.LfuParams, confidence=-1)

    def test_lfu_keeps_the_host_cache_useful(self):
        s = lfu_sim.spec('uniform', 'lru', reads=20000)
        trace = lfu_sim.trace(s)
        plain = lfu_sim.run(s, 'static', trace)['host_hit_ratio']
        ours = lfu_sim.run(s, 'lfu-ours', trace)['host_hit_ratio']
        best = lfu_sim.run(s, 'oracle', trace)['host_hit_ratio']
        self.assertGreater(ours, plain + 0.3)
        self.assertGreater(best, ours - 0.02)


class TestLlc(testtools.TestCase):
    def test_pairs_that_share_go_together(self):
        s = dict(llc.spec('paper-4vm'), reads=4000)
        static = llc.placement_for(s, 'static')
        self.assertNotEqual(static['a1'], static['a2'])
        for strategy in ('pinning-paper', 'pinning-ours'):
            p = llc.placement_for(s, strategy)
            self.assertEqual(p['a1'], p['a2'])
            self.assertEqual(p['b1'], p['b2'])
            self.assertNotEqual(p['a1'], p['b1'])
        self.assertLess(llc.cost(llc.measure(s, p)),
                        llc.cost(llc.measure(s, static)))


class TestCommand(testtools.TestCase):
    def test_simulate_a_scenario_file(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'mine.yaml')
        data = dict(small_spec(), name='mine',
                    strategies=['static', 'utility', 'oracle',
                                'oracle-replay'])
        with open(path, 'w') as f:
            yaml.safe_dump(data, f)
        out = os.path.join(tmp, 'out')
        stdout = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', stdout.stream))
        self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', self.useFixture(
                fixtures.StringStream('stderr')).stream))
        self.assertEqual(0, lab_cmd.main(['simulate', '--scenario-file',
                                          path, '--out', out]))
        with open(os.path.join(out, 'results.json')) as f:
            results = json.load(f)
        rows = results['rows']
        self.assertEqual(['static', 'utility', 'oracle', 'oracle-replay'],
                         [r['strategy'] for r in rows])
        for r in rows:
            for key in ('scenario', 'point', 'strategy', 'app_read_bytes',
                        'disk_read_bytes', 'io_reduction', 'paper'):
                self.assertIn(key, r)
            self.assertEqual('mine', r['scenario'])
        self.assertTrue(os.path.getsize(
            os.path.join(out, 'mine-disk-reads.png')) > 1000)
        self.assertTrue(os.path.exists(
            os.path.join(out, 'mine-default-memory.png')))

    def test_unknown_scenario_is_a_usage_error(self):
        self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', self.useFixture(
                fixtures.StringStream('stderr')).stream))
        for argv in (['--scenario', 'nope'], ['--strategies', 'nope'],
                     ['--strategies', ''], ['--jobs', '0'],
                     ['--scenario', 'ksm', '--seeds', '3']):
            exc = self.assertRaises(SystemExit, lab_cmd.main,
                                    ['simulate'] + argv)
            self.assertEqual(2, exc.code, argv)


class TestGuardsUnchanged(testtools.TestCase):
    def test_simulator_uses_the_strategies_defaults(self):
        self.assertEqual(guards.GuardConfig(), policies.GUARDS)


class TestMarginTargets(testtools.TestCase):
    @staticmethod
    def rows(speeds):
        """Rows whose read time gives ``speeds[(files, label)]`` x static."""
        out = []
        for (files, label), speed in speeds.items():
            out.append({'scenario': 'balloon-controller',
                        'point': '%dfiles' % files, 'strategy': label,
                        'read_time_s': 100.0 / speed})
        for files in {f for f, _ in speeds}:
            out.append({'scenario': 'balloon-controller',
                        'point': '%dfiles' % files, 'strategy': 'static',
                        'read_time_s': 100.0})
        return out

    def test_shape_of_the_paper(self):
        speeds = {(1000, 'margin-paper'): 0.6, (1000, 'utility'): 1.0,
                  (2000, 'margin-paper'): 2.5, (2000, 'utility'): 1.2,
                  (3000, 'margin-paper'): 1.4, (3000, 'utility'): 1.7,
                  (5000, 'margin-paper'): 1.2, (5000, 'utility'): 1.2}
        gain, loss = targets.margin_checks(self.rows(speeds))
        self.assertTrue(gain[1], gain)
        self.assertTrue(loss[1], loss)
        # No gain at 3,000 MB, a larger one above, no loss below: fails.
        for key, value, which in (((3000, 'margin-paper'), 1.0, 0),
                                  ((5000, 'margin-paper'), 3.0, 0),
                                  ((1000, 'margin-paper'), 1.0, 1),
                                  ((1000, 'utility'), 0.95, 1)):
            bad = dict(speeds)
            bad[key] = value
            self.assertFalse(targets.margin_checks(self.rows(bad))[which][1],
                             key)


class TestRealLabCopy(testtools.TestCase):
    """The simulated real-guest lab is the real one's experiment."""

    def test_spec_follows_the_real_lab_defaults(self):
        from watcher_cams.lab import real_guests
        exp = real_guests.Experiment()
        spec = spec_mod.validate(ms.real_lab_spec(exp.hot_prob))
        self.assertEqual(exp.block_kib, spec['block_kb'])
        self.assertEqual(exp.cycle_s, spec['cycle_s'])
        self.assertEqual(exp.duration_s, spec['duration_s'])
        self.assertEqual(exp.measure_from_s, spec['warmup_s'])
        self.assertEqual(exp.budget_mb, spec['host']['ram_mb']
                         - spec['host']['reserved_mb'])
        for real, sim in zip(exp.guests, spec['guests']):
            self.assertEqual((real.max_mb, real.boot_mb),
                             (sim['max_mb'], sim['size_mb']))
            phase = sim['phases'][0]
            self.assertEqual(exp.data_mb, phase['range_mb'])
            self.assertAlmostEqual(exp.reads_per_s * exp.block_kib / 1024,
                                   phase['rate_mb_s'])
        self.assertIn(exp.hot_prob, ms.REAL_LAB_HOT_PROBS)
        self.assertEqual(exp.hot_prob,
                         spec['guests'][0]['phases'][0]['hot_share'])

    def test_target_reads_the_hot_cold_guest(self):
        def row(strategy, miss):
            return {'scenario': 'real-lab', 'point': '90%',
                    'strategy': strategy, 'guests': {
                        'hotcold': {'io_reduction': 1 - miss}}}
        rows = [row('static', 0.4), row('utility', 0.2), row('oracle', 0.1)]
        [(name, ok, detail)] = targets.real_lab_checks(rows)
        self.assertTrue(ok, detail)
        self.assertIn('utility 2.00x', detail)
        rows[1] = row('utility', 0.25)
        self.assertFalse(targets.real_lab_checks(rows)[0][1])
        self.assertEqual([], targets.real_lab_checks(rows[1:]))

    def test_shadow_entries_for_more_cache_sizes_see_more_refaults(self):
        # vm2 reads uniformly over 64 GiB: with shadow entries for eight
        # cache sizes of evictions, far more of its misses are refaults.
        refaults = {}
        for factor in (1, 8):
            spec = small_spec(host={'ram_mb': 2048, 'reserved_mb': 256,
                                    'shadow_factor': factor})
            host = spec_mod.build_host(spec)
            self.assertEqual(factor, host.guests[1].cache.shadow_factor)
            host.step(600)
            refaults[factor] = host.guests[1].cache.refaults
        self.assertGreater(refaults[8], 2 * refaults[1])
        self.assertEqual(1.0, small_spec()['host']['shadow_factor'])


class TestCamsTargets(testtools.TestCase):

    @staticmethod
    def rows(point, **reads):
        return [{'scenario': 'cams-grid', 'point': point, 'strategy': s,
                 'disk_read_bytes': r} for s, r in reads.items()]

    def test_utility_is_checked_against_paper_mode_and_static(self):
        good = self.rows('r1-1g', static=120, oracle=100, utility=104,
                         **{'cams-paper': 110})
        found = targets.cams_checks(good, 'cams-grid')
        self.assertEqual([True] * 3, [ok for _, ok, _ in found], found)
        # Better than paper mode, but above static: a point where memory
        # moved for nothing.
        bad = self.rows('r8-1g', static=100, oracle=100, utility=101,
                        **{'cams-paper': 102})
        found = {name: (ok, detail) for name, ok, detail
                 in targets.cams_checks(good + bad, 'cams-grid')}
        ok, detail = found['cams-grid: utility reads no more from disk '
                           'than static at any point']
        self.assertFalse(ok)
        self.assertEqual('worse at r8-1g (+1.00%)', detail)
        self.assertTrue(found['cams-grid: utility reads no more from disk '
                              'than CAMS at any point'][0])


class TestAllocatorTargets(testtools.TestCase):

    @staticmethod
    def rows(point, **reads_moved):
        return [{'scenario': 'allocator', 'point': point, 'strategy': s,
                 'disk_read_bytes': reads, 'moved_mb': moved}
                for s, (reads, moved) in reads_moved.items()]

    def test_each_figure_checked_at_every_point(self):
        good = self.rows('a', static=(120, 0), oracle=(100, 0),
                         utility=(104, 256), **{'cams-paper': (110, 512)})
        found = targets.allocator_checks(good)
        self.assertEqual([True] * 4, [ok for _, ok, _ in found], found)
        bad = good + self.rows('b', static=(100, 0), oracle=(90, 0),
                               utility=(101, 900),
                               **{'cams-paper': (100, 300)})
        found = targets.allocator_checks(bad)
        self.assertEqual([False] * 4, [ok for _, ok, _ in found], found)
        self.assertIn('missed at b (1.122)', found[0][2])
        self.assertEqual([], targets.allocator_checks(
            [r for r in good if r['strategy'] != 'utility']))

    def test_a_sweep_names_its_worst_misses(self):
        rows = []
        for i in range(12):
            rows += self.rows('seed-%d' % i, static=(100, 0),
                              utility=(101 + i, 0))
        (_, ok, detail), = targets.allocator_checks(rows)
        self.assertFalse(ok)
        self.assertTrue(detail.startswith(
            'missed at 12 of 12 points; the worst: seed-11 (1.120), '
            'seed-10 (1.110), seed-9 (1.100)'), detail)
        self.assertEqual(targets.MISSES_NAMED, detail.count('seed-'))

    def test_guests_without_agent_keep_a_share_of_the_gain(self):
        def rows(point, static, utility):
            return [{'scenario': 'agentless', 'point': point,
                     'strategy': s, 'disk_read_bytes': reads}
                    for s, reads in (('static', static),
                                     ('utility', utility))]
        found = targets.agentless_checks(
            rows('a', 100, 60) + rows('a no agent', 100, 70))
        self.assertEqual([True], [ok for _, ok, _ in found], found)
        self.assertIn('a 75%', found[0][2])
        found = targets.agentless_checks(
            rows('a', 100, 60) + rows('a no agent', 100, 80))
        self.assertIn('missed at a (50%)', found[0][2])
        self.assertIsNone(experiment.gain_kept(100, 100, 90))

    def test_agentless_points_report_only_the_balloon(self):
        spec = spec_mod.validate(ms.agentless_spec('real-lab-90', False))
        self.assertEqual('real-lab-90-agentless', spec['name'])
        host = spec_mod.build_host(spec)
        host.step(60)
        entry = host.report()['guests'][0]
        self.assertEqual(report.MISSING_AGENT, entry['agent'])
        self.assertEqual(report.BALLOON_SOURCE, entry['sample']['source'])
        # Its reads are what the host read for it.
        self.assertEqual(host.guests[0].disk_read_kb,
                         entry['sample']['vmstat']['pgpgin'])
        view = report.parse_host(host.report())
        self.assertTrue(all(g.host_only for g in view.guests))

    def test_random_hosts_are_drawn_again_from_their_seed(self):
        self.assertEqual(random_hosts.spec(7), random_hosts.spec(7))
        self.assertNotEqual(random_hosts.spec(7), random_hosts.spec(8))
        patterns, changes = set(), 0
        for seed in random_hosts.SEEDS:
            spec = spec_mod.validate(random_hosts.spec(seed))
            self.assertEqual('random-%d' % seed, spec['name'])
            self.assertTrue(2 <= len(spec['guests']) <= 5)
            for guest in spec['guests']:
                patterns.update(p['pattern'] for p in guest['phases'])
                changes += len(guest['phases']) > 1
        # The seeds draw every kind of the allocator points, phase
        # changes too.
        self.assertEqual({'hot_cold', 'uniform', 'scan', 'idle'}, patterns)
        self.assertGreater(changes, 0)
        self.assertEqual(len(random_hosts.spec(18)['guests']),
                         len(random_hosts.describe(random_hosts.spec(18))))

    def test_wide_hosts_are_a_family_of_their_own(self):
        self.assertEqual(random_hosts.wide_spec(7), random_hosts.wide_spec(7))
        self.assertNotEqual(random_hosts.wide_spec(7),
                            random_hosts.wide_spec(8))
        patterns, sizes, cycles, on_off, counts = set(), set(), set(), 0, set()
        for seed in range(1, 41):
            spec = spec_mod.validate(random_hosts.wide_spec(seed))
            self.assertEqual('wide-%d' % seed, spec['name'])
            counts.add(len(spec['guests']))
            cycles.add(spec['cycle_s'])
            # The host holds what its guests boot with.
            self.assertEqual(sum(g['size_mb'] for g in spec['guests']),
                             spec['host']['ram_mb']
                             - spec['host']['reserved_mb'])
            for guest in spec['guests']:
                sizes.add(guest['size_mb'])
                kinds = [p['pattern'] for p in guest['phases']]
                patterns.update(kinds)
                on_off += len(kinds) == 2 and 'idle' in kinds
        self.assertEqual({'hot_cold', 'uniform', 'scan', 'idle'}, patterns)
        self.assertEqual(set(random_hosts.WIDE_SIZES_MB), sizes)
        self.assertEqual(set(random_hosts.WIDE_CYCLES_S), cycles)
        self.assertEqual(set(random_hosts.WIDE_COUNTS), counts)
        self.assertGreater(on_off, 0)
        # No kin of the first family's host of the same seed.
        self.assertNotEqual(
            [g['phases'] for g in random_hosts.spec(7)['guests']],
            [g['phases'] for g in random_hosts.wide_spec(7)['guests']])

    def assert_checked_as_allocator_points(self, scenario, point):
        """A seeded scenario's rows go through the allocator's checks."""
        rows = [dict(r, scenario=scenario) for r in
                TestAllocatorTargets.rows(
                    point, static=(120, 0), oracle=(100, 0),
                    utility=(110, 256), **{'cams-paper': (105, 512)})]
        found = {name: ok for name, ok, _ in targets.check(rows, {})}
        self.assertFalse(found['%s: utility reads at most 1.05x the oracle '
                               'at every point' % scenario])
        self.assertTrue(found['%s: utility reads no more than static at '
                              'every point' % scenario])

    def test_wide_hosts_are_checked_as_the_allocator_points(self):
        scenario, = scenarios.named('wide-hosts', (3, 5))
        self.assertEqual(['seed-3', 'seed-5'],
                         [p.label for p in scenario.points])
        self.assertIn('audit every 30 to 120 s', scenario.scale)
        self.assert_checked_as_allocator_points('wide-hosts', 'seed-3')

    def test_random_hosts_are_checked_as_the_allocator_points(self):
        scenario = scenarios.named('random-hosts')[0]
        self.assertEqual(len(random_hosts.SEEDS), len(scenario.points))
        self.assert_checked_as_allocator_points('random-hosts', 'seed-1')

    def test_seeds_no_one_tuned_on_can_be_drawn(self):
        self.assertEqual((61, 62, 63, 7), random_hosts.parse_seeds(
            '61-63, 7,62'))
        for bad in ('', '5-2', 'x', '-3', '1-'):
            self.assertRaises(ValueError, random_hosts.parse_seeds, bad)
        scenario = scenarios.named('random-hosts', (61, 62))[0]
        self.assertEqual(['seed-61', 'seed-62'],
                         [p.label for p in scenario.points])
        self.assertIn('2 seeds', scenario.scale)
        self.assertRaises(spec_mod.ScenarioError, scenarios.named,
                          'allocator', (61,))

    def test_the_table_ends_with_the_mean_of_each_ratio(self):
        scenario = scenarios.named('random-hosts', (1, 2))[0]
        rows = [dict(r, scenario='random-hosts') for r in
                TestAllocatorTargets.rows(
                    'seed-1', static=(120, 0), oracle=(100, 0),
                    utility=(110, 256), **{'cams-paper': (105, 512),
                                           'oracle-replay': (110, 0)})
                + TestAllocatorTargets.rows(
                    'seed-2', static=(120, 0), oracle=(100, 0),
                    utility=(100, 256), **{'cams-paper': (125, 512),
                                           'oracle-replay': (104, 0)})]
        headers, table = scenario.summary(rows)
        self.assertEqual(['utility/oracle', 'utility/replay',
                          'utility/paper', 'moved util/paper'], headers[-4:])
        self.assertEqual(['mean', '1.050', '0.981', '0.924', '0.500'],
                         [table[-2][0]] + table[-2][-4:])
        # Then each strategy's reads over all points.
        self.assertEqual(['total'] + ['0.0'] * 5, table[-1][:6])

    def test_a_sweep_runs_only_the_strategies_asked(self):
        scenario, = scenarios.named('agentless', (3, 5),
                                    ('static', 'utility'))
        self.assertEqual(['seed-3', 'seed-3 no agent', 'seed-5',
                          'seed-5 no agent'],
                         [p.label for p in scenario.points])
        self.assertEqual(('static', 'utility'), scenario.strategies)
        blind = scenario.points[1].spec
        self.assertEqual('random-3', blind['name'])
        self.assertFalse(any(g['agent'] for g in blind['guests']))
        self.assertRaises(spec_mod.ScenarioError, scenarios.named,
                          'paper-grid', None, ('utility',))
        self.assertRaises(spec_mod.ScenarioError, scenarios.named,
                          'allocator', None, ('ksm-paper',))
        # Not without what a scenario's summary compares.
        self.assertRaises(spec_mod.ScenarioError, scenarios.named,
                          'agentless', (3,), ('utility',))
        self.assertRaises(spec_mod.ScenarioError, scenarios.named,
                          'default', None, ('static', 'utility'))
        self.assertEqual(scenarios.MEMORY_LABELS, scenarios.named(
            'default', None, scenarios.MEMORY_LABELS)[0].strategies)
        # Only the targets whose strategies ran are checked.
        rows = TestAllocatorTargets.rows(
            'a', static=(120, 0), utility=(110, 256))
        self.assertEqual(['allocator: utility reads no more than static '
                          'at every point'],
                         [n for n, _, _ in targets.allocator_checks(rows)])

    def test_points_run_in_processes_read_as_one_by_one(self):
        rows = {}
        for jobs in (1, 2):
            scenario, = scenarios.named('agentless', (1, 2),
                                        ('static', 'utility'))
            rows[jobs] = scenario.run(progress.Progress(
                8, io.StringIO()), jobs)
        self.assertEqual(rows[1], rows[2])
        _, table = scenario.summary(rows[2])
        self.assertEqual('all', table[-1][0])
        self.assertEqual('-', table[-1][4])

    def test_the_points_build_and_name_their_guests(self):
        for point in ms.ALLOCATOR_POINTS:
            spec = spec_mod.validate(ms.allocator_spec(point))
            self.assertEqual(point, spec['name'])
            self.assertGreaterEqual(len(spec['guests']), 2)
        self.assertGreaterEqual(len(spec_mod.validate(
            ms.allocator_spec('mixed-12'))['guests']), 10)


def shrinking_scan_spec():
    """A fitted 1.8 GiB scan turns 0.9 GiB beside a hot/cold reader."""
    mem = {'committed_mb': 256, 'used_mb': 256}
    return spec_mod.validate({
        'name': 'shrinking-scan', 'block_kb': 1024, 'cycle_s': 60,
        'duration_s': 5400, 'warmup_s': 0,
        'host': {'ram_mb': 4096 + 512, 'reserved_mb': 512,
                 'shadow_factor': 4},
        'guests': [
            {'name': 'scan', 'size_mb': 2176, 'max_mb': 2560, 'phases': [
                dict(mem, pattern='scan', range_mb=1843, rate_mb_s=6.0,
                     duration_s=1800),
                dict(mem, pattern='scan', range_mb=921, rate_mb_s=6.0)]},
            {'name': 'reader', 'size_mb': 1920, 'max_mb': 4096, 'phases': [
                dict(mem, pattern='hot_cold', range_mb=8192, rate_mb_s=8.0,
                     hot_fraction=0.25, hot_share=0.9)]},
        ]})


class TestTouchedMemory(testtools.TestCase):
    """What the agent's touched collector gives, simulated."""

    def run_utility(self, window_s):
        self.useFixture(fixtures.MockPatchObject(
            sim_host, 'TOUCH_WINDOW_S', window_s))
        return simulate.Simulation(shrinking_scan_spec(), 'utility').run()

    def test_a_scan_turned_shorter_gives_what_it_no_longer_touches(self):
        # No guest counter shows the shorter scan: its old pages stay
        # active and it reads nothing from disk before and after.
        unmeasured = self.run_utility(1e9)
        measured = self.run_utility(600.0)
        self.assertGreaterEqual(unmeasured.series[-1]['size_mb']['scan'],
                                256 + 1843)
        self.assertLess(measured.series[-1]['size_mb']['scan'],
                        256 + 1843 - 512)
        reads = {n: t.disk_kb for n, t in measured.traffic.items()}
        before = {n: t.disk_kb for n, t in unmeasured.traffic.items()}
        self.assertLess(reads['reader'], 0.8 * before['reader'])
        self.assertLessEqual(reads['scan'], before['scan'])

    def test_a_window_is_reported_whole_with_its_half(self):
        host = simulate.Simulation(shrinking_scan_spec(), 'utility').host
        scan = host.guests[0]
        host.step(300.0)
        host.report()
        self.assertIsNone(scan.touched.last)
        host.step(300.0)
        host.report()
        touched = scan.touched.last
        self.assertEqual(600.0, touched.window_s)
        # 6 MiB/s over a 1,843 MiB scan: all of it by the end, 1,800 by
        # the half, and its processes' memory.
        self.assertEqual(256 + 1800, touched.half_mb)
        self.assertEqual(256 + 1843, touched.mb)
        self.assertEqual(2176, touched.least_mb)
