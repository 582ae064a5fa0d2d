"""A continuous cache_aware_balloon audit on real Nova servers.

Two servers of flavor cams.lab (768 MiB, a 2 GiB ephemeral disk) on the
driver extension's node, ballooned to 448 MiB each by the operator's first
plan; inside them, through the guest agent, the lab's readers read the
ephemeral disk: a hot/cold reader (90% of reads in the first fifth, 410 MiB,
more than a 448 MiB guest can cache) and a uniform reader (whose cache
barely pays). An audit template for cache_aware_balloon and a continuous
audit with auto-trigger: Watcher's applier applies the plans through the
agent, and libvirt shows memory moving from the random reader to the
hot/cold one, within what the two had.
"""

import uuid

import testtools

from tests.cloud import base
from watcher_cams.lab import guests as lab_guests
from watcher_cams.lab import real_guests as rg

START_MB = 448
SLACK_MB = 8
EXP = rg.Experiment(
    guests=(rg.GuestSpec('cams-hotcold', 'hotcold', 768, START_MB),
            rg.GuestSpec('cams-random', 'uniform', 768, START_MB)),
    data_mb=2048, duration_s=3600, measure_from_s=0)


class TestCacheAwareAudit(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        self.servers = base.boot_for(self, [g.name for g in EXP.guests],
                                     flavor='cams.lab')

    def _start_readers(self):
        for seed, spec in enumerate(EXP.guests, 1):
            dom = base.domain(self.servers[spec.name])
            lab_guests.wait_for_agent(dom, timeout=300)
            code, out = lab_guests.guest_exec(dom, rg.reader_command(
                spec, EXP, seed, path='/dev/vdb'), timeout=30)
            self.assertEqual(0, code, out)

    def _audit(self, name, strategy, goal, *params):
        # Audits keep their template: it stays (a kept cloud gets a new one
        # per run).
        name = '%s-%s' % (name, uuid.uuid4().hex[:8])
        base.openstack('optimize', 'audittemplate', 'create', name, goal,
                       '--strategy', strategy)
        audit = base.openstack(
            'optimize', 'audit', 'create', '-a', name, '-t', 'CONTINUOUS',
            '-i', '30', '--auto-trigger', *params)['UUID']
        self.addCleanup(base.openstack_quiet, 'optimize', 'audit', 'update',
                        audit, 'replace', 'state=CANCELLED')
        return audit

    def _sizes(self):
        return {spec.name: base.actual_mb(self.servers[spec.name])
                for spec in EXP.guests}

    def test_memory_moves_to_the_guest_whose_cache_pays(self):
        hot, rand = (self.servers[g.name] for g in EXP.guests)
        _, state = base.run_actions([base.balloon_action(s, START_MB)
                                     for s in (hot, rand)])
        self.assertEqual('SUCCEEDED', state)
        self._start_readers()
        audit = self._audit('cams-e2e-cache', 'cache_aware_balloon',
                            'memory_cache_efficiency', '-p', 'mode=paper')

        def moved():
            sizes = self._sizes()
            # Never more than the two had together.
            self.assertLessEqual(sum(sizes.values()),
                                 2 * START_MB + SLACK_MB, sizes)
            if (sizes['cams-hotcold'] >= START_MB + 64
                    and sizes['cams-random'] <= START_MB - 64):
                return sizes
        sizes = base.wait_for('memory moved to the hot/cold guest', moved,
                              timeout=900, every=10)
        self.assertGreater(sizes['cams-hotcold'], sizes['cams-random'])

        plans = base.openstack('optimize', 'actionplan', 'list', '--audit',
                               audit)
        applied = [a for p in plans for a in base.plan_actions(p['UUID'])
                   if a['state'] == 'SUCCEEDED']
        self.assertTrue(applied)
        for a in applied:
            self.assertEqual('cams_balloon', a['type'])
        failed = [a for p in plans for a in base.plan_actions(p['UUID'])
                  if a['state'] == 'FAILED']
        self.assertEqual([], failed)
