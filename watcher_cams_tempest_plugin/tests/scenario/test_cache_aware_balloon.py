"""A continuous cache_aware_balloon audit moves memory where cache pays.

Two servers on [watcher_cams] compute_host with a flavor of flavor_ram_mb
and a data_gb ephemeral disk, sized to boot_mb each by an actuator plan
(the operator's first plan). Inside them the lab's readers read the disk
through the guest agent: one hot/cold (90% of reads in the first fifth,
more than a boot_mb guest caches), one uniform over all of it (its cache
barely pays). A continuous audit in paper mode, scoped to the two servers,
must move memory from the random reader to the hot/cold one with
cams_host_balloon actions that succeed, never giving the two more than they
had together.
"""

from oslo_log import log
from tempest import config
from tempest.lib import decorators

from watcher_cams.lab import core
from watcher_cams.lab import guests as lab_guests
from watcher_cams.lab import real_guests
from watcher_cams_tempest_plugin.tests import base

CONF = config.CONF
LOG = log.getLogger(__name__)
MOVED_MB = 64
# A balloon settles within a few MiB of its target.
SLACK_MB = 8


class TestCacheAwareBalloon(base.ScenarioTest):

    def _experiment(self):
        c = CONF.watcher_cams
        if not c.boot_mb < c.flavor_ram_mb:
            raise self.skipException('[watcher_cams] boot_mb must be below '
                                     'flavor_ram_mb')
        return real_guests.Experiment(
            guests=(real_guests.GuestSpec('hotcold', 'hotcold',
                                          c.flavor_ram_mb, c.boot_mb),
                    real_guests.GuestSpec('random', 'uniform',
                                          c.flavor_ram_mb, c.boot_mb)),
            data_mb=1024 * c.data_gb, cycle_s=c.audit_interval,
            # The readers outlast the test.
            duration_s=2 * c.scenario_timeout + 600, measure_from_s=0)

    def _sizes(self, guests):
        return {name: g.dom.memoryStats()['actual'] // 1024
                for name, g in guests.items()}

    def _readers_at_boot_size(self, exp, boot_mb):
        """Both servers ballooned to ``boot_mb``, their readers started."""
        flavor = self.create_flavor(CONF.watcher_cams.flavor_ram_mb,
                                    CONF.watcher_cams.data_gb)
        guests = {}
        for spec in exp.guests:
            _, dom = self.boot('cams-' + spec.name, flavor)
            # Nova formats the ephemeral disk; the guest sees it as vdb
            # and the reader reads the device.
            guests[spec.name] = core.GuestRun(
                dom, spec, data_path='/dev/vdb', data_disk='vdb')
        self.apply_actions([
            self.balloon_action(g.uuid, boot_mb, 'tempest: boot size')
            for g in guests.values()])
        for g in guests.values():
            lab_guests.wait_for_balloon(g.dom, boot_mb, timeout=300)
        for seed, g in enumerate(guests.values(), 1):
            real_guests.start_reader(g, exp, seed)
        return guests

    @decorators.attr(type=['slow'])
    @decorators.idempotent_id('7d1e3b5a-2f8c-4a96-b0d4-9e6c1a3f5b45')
    def test_memory_moves_to_the_guest_whose_cache_pays(self):
        exp = self._experiment()
        boot_mb = CONF.watcher_cams.boot_mb
        guests = self._readers_at_boot_size(exp, boot_mb)

        template = self.create_audit_template(
            'cache_aware_balloon', self.scope([g.uuid for g in
                                               guests.values()]))
        audit = self.audit(
            wait=False, audit_template_uuid=template['uuid'],
            audit_type='CONTINUOUS',
            interval=str(CONF.watcher_cams.audit_interval),
            parameters={'mode': 'paper'})
        budget = 2 * boot_mb

        def moved():
            sizes = self._sizes(guests)
            # Never more than the two had together, at any time.
            self.assertLessEqual(sum(sizes.values()), budget + SLACK_MB,
                                 sizes)
            failed = [a for a in self.optim.list_actions(audit_uuid=audit)
                      if a['state'] == 'FAILED']
            self.assertEqual([], failed)
            return (sizes['hotcold'] >= boot_mb + MOVED_MB
                    and sizes['random'] <= boot_mb - MOVED_MB and sizes)
        sizes = base.wait_until('memory moved to the hot/cold guest', moved,
                                CONF.watcher_cams.scenario_timeout, every=5)
        self.end_audit(audit)

        actions = self.optim.list_actions(audit_uuid=audit)
        # One action per host and audit, carrying its guests' targets.
        self.assertEqual({'cams_host_balloon'},
                         {a['action_type'] for a in actions})
        ran = [a for a in actions if a['state'] not in ('PENDING',
                                                        'CANCELLED')]
        self.assertTrue(ran)
        self.assertEqual({'SUCCEEDED'}, {a['state'] for a in ran}, ran)
        hotcold = guests['hotcold'].uuid
        targets = [(t['instance'], t['target_mb'], a['state'])
                   for a in ran for t in a['input_parameters']['targets']]
        grown = [t for t in targets
                 if t[0] == hotcold and t[1] > boot_mb]
        self.assertTrue(grown, (sizes, targets))
        LOG.info('sizes %s after targets %s', sizes, targets)
