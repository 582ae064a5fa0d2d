"""A simulated tenant that forges its counters, and the scenario of it."""

import testtools

from watcher_cams.lab.sim import experiment
from watcher_cams.lab.sim import forged_claims
from watcher_cams.lab.sim import host as host_mod
from watcher_cams.lab.sim import scenarios
from watcher_cams.lab.sim import simulate
from watcher_cams.lab.sim import spec as spec_mod
from watcher_cams.lab.sim import targets
from watcher_cams.policy import model
from watcher_cams.policy import report


def forged_host(forged=True, seed=3):
    host = spec_mod.build_host(spec_mod.validate(
        forged_claims.spec(seed, forged)))
    for _ in range(5):
        host.step(60)
    return host


class TestForgedGuest(testtools.TestCase):
    def test_its_counters_claim_every_read_an_activated_refault(self):
        host = forged_host()
        liar = host.guests[0]
        self.assertEqual(host_mod.FORGED, liar.claims)
        sample = liar.sample(host.now)
        vmstat, meminfo = sample['vmstat'], sample['meminfo']
        # Every page it read, refaulted and activated; its cache a small
        # active list; PSI at its most.
        pages = liar.pgpgin_kb // model.PAGE_KB
        self.assertGreater(pages, 0)
        self.assertEqual(pages, vmstat['workingset_refault_file'])
        self.assertEqual(pages, vmstat['workingset_activate_file'])
        cached = meminfo['Active(file)'] + meminfo['Inactive(file)']
        self.assertAlmostEqual(host_mod.FORGED_ACTIVE_SHARE,
                               meminfo['Active(file)'] / cached, places=2)
        self.assertEqual(100.0, sample['psi']['some_avg10'])
        # The honest run's counters are what its cache counted: a stream
        # activates nothing.
        honest = forged_host(False).guests[0].sample(host.now)
        self.assertEqual(0, honest['vmstat']['workingset_activate_file'])

    def test_its_claims_stay_within_what_the_host_read(self):
        # Otherwise the claims check drops its sample and the forgery
        # tests nothing.
        host = forged_host()
        host.report()
        host.step(60)
        view = report.parse_host(host.report())
        liar = view.guests[0]
        self.assertIsNone(liar.problem)
        self.assertTrue(liar.has_data)
        self.assertGreater(model.rates(liar).activate_s, 0)

    def test_its_workload_is_a_stream_in_both_runs(self):
        for forged in (False, True):
            first = spec_mod.validate(
                forged_claims.spec(5, forged))['guests'][0]
            self.assertEqual(['scan'], [p['pattern'] for p in first['phases']])
            self.assertGreater(first['phases'][0]['range_mb'],
                               first['max_mb'])

    def test_a_spec_refuses_claims_it_does_not_know(self):
        spec = forged_claims.spec(1, True)
        spec['guests'][0]['claims'] = 'truthful'
        self.assertRaises(spec_mod.ScenarioError, spec_mod.validate, spec)


class TestForgedScenario(testtools.TestCase):
    def test_each_host_runs_honest_then_forged(self):
        scenario = scenarios.forged(seeds=(4, 9))
        self.assertEqual(['seed-4', 'seed-4 forged', 'seed-9',
                          'seed-9 forged'],
                         [p.label for p in scenario.points])
        self.assertEqual(('static', 'utility'), scenario.strategies)

    def test_rows_carry_each_guests_mean_size(self):
        spec = spec_mod.validate(forged_claims.spec(2, False))
        run = simulate.Simulation(spec, 'static').run()
        sizes = experiment.mean_sizes_mb(run, spec['warmup_s'])
        self.assertEqual({g['name']: float(g['size_mb'])
                          for g in spec['guests']}, sizes)

    def rows(self, honest, forged):
        """Utility's rows: (neighbour's GiB, forger's mean MiB) each."""
        out = []
        for label, (gib, mb) in (('a', honest), ('a forged', forged)):
            out.append({'scenario': 'forged-claims', 'point': label,
                        'strategy': 'utility', 'guests': {
                            'g0': {'disk_read_bytes': 0, 'mean_size_mb': mb},
                            'g1': {'disk_read_bytes': int(gib * 2 ** 30),
                                   'mean_size_mb': 1024.0}}})
        return out

    def test_the_target_holds_where_the_forgery_moves_nothing(self):
        found = targets.forged_checks(self.rows((10.0, 640), (10.1, 700)))
        self.assertEqual([True], [ok for _, ok, _ in found], found)

    def test_missed_where_the_neighbours_read_more_or_it_holds_more(self):
        for forged in ((10.5, 640), (10.0, 900)):
            found = targets.forged_checks(self.rows((10.0, 640), forged))
            self.assertEqual([False], [ok for _, ok, _ in found], forged)
            self.assertIn('missed at a (', found[0][2])
        self.assertEqual([], targets.forged_checks([]))
