"""What the tests share: Watcher's client, waits, servers on one node."""

import fixtures
import libvirt
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc
from tempest import test

from watcher_cams.lab import cloud as lab_cloud
from watcher_cams.lab import cloud_api
from watcher_cams.lab import guests as lab_guests
from watcher_cams_tempest_plugin.services import infra_optim_client

CONF = config.CONF
# The goal each of the plugin's strategies serves (setup.cfg entry points).
STRATEGY_GOALS = {
    'cache_aware_balloon': 'memory_cache_efficiency',
    'margin_balloon': 'memory_cache_efficiency',
    'ksm_balloon': 'memory_cache_efficiency',
    'sharing_aware_pinning': 'cpu_cache_affinity',
}
FINISHED = ('SUCCEEDED', 'FAILED', 'CANCELLED', 'SUPERSEDED', 'DELETED')
# Servers without networks need 2.37, a host to boot on 2.74.
NOVA_MICROVERSION = '2.74'


def wait_until(what, check, timeout, every=2.0):
    """Poll ``check`` until it returns something true, and return that."""
    try:
        return cloud_api.wait(what, check, timeout, every)
    except cloud_api.CloudError as exc:
        raise lib_exc.TimeoutException(str(exc)) from None


class BaseWatcherCamsTest(test.BaseTestCase):
    """Admin access to Watcher's API, skipped without watcher-cams."""

    credentials = ['admin']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.watcher_cams:
            raise cls.skipException('watcher-cams is not deployed '
                                    '([service_available] watcher_cams)')

    @classmethod
    def setup_credentials(cls):
        # Servers boot without networks: no isolated networks either.
        cls.set_network_resources()
        super().setup_credentials()

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.optim = infra_optim_client.InfraOptimClient(
            cls.os_admin.auth_provider, 'infra-optim',
            CONF.identity.region)

    def create_audit_template(self, strategy, scope=()):
        template = self.optim.create_audit_template(
            name=data_utils.rand_name('cams-tempest'),
            goal=STRATEGY_GOALS[strategy], strategy=strategy,
            scope=list(scope))
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.optim.delete_audit_template, template['uuid'])
        return template


class ScenarioTest(BaseWatcherCamsTest):
    """Servers on [watcher_cams] compute_host, seen through its libvirt."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        for option in ('compute_host', 'libvirt_uri'):
            if not getattr(CONF.watcher_cams, option):
                raise cls.skipException('[watcher_cams] %s is not set'
                                        % option)

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.servers_client = cls.os_admin.servers_client
        cls.flavors_client = cls.os_admin.flavors_client
        cls.services_client = cls.os_admin.services_client

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'tempest.lib.services.compute.base_compute_client.'
            'COMPUTE_MICROVERSION', NOVA_MICROVERSION))
        libvirt.registerErrorHandler(lambda *args: None, None)
        self.conn = libvirt.open(CONF.watcher_cams.libvirt_uri)
        self.addCleanup(self.conn.close)
        self.host = CONF.watcher_cams.compute_host

    def create_flavor(self, ram_mb, ephemeral_gb=0):
        flavor = self.flavors_client.create_flavor(
            name=data_utils.rand_name('cams-tempest'), ram=ram_mb, vcpus=1,
            disk=1, ephemeral=ephemeral_gb)['flavor']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.flavors_client.delete_flavor, flavor['id'])
        return flavor['id']

    def boot(self, name, flavor_id):
        """A server on the test's node, its guest agent answering.

        Returns (server id, libvirt domain). The node's agent reads a
        guest's memory through the guest agent, which under TCG answers
        seconds after Nova calls the server ACTIVE.
        """
        image = CONF.watcher_cams.image_ref or CONF.compute.image_ref
        server = self.servers_client.create_server(
            name=data_utils.rand_name(name), imageRef=image,
            flavorRef=flavor_id, networks='none', host=self.host)['server']
        self.addCleanup(waiters.wait_for_server_termination,
                        self.servers_client, server['id'])
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.servers_client.delete_server, server['id'])
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        dom = self.conn.lookupByUUIDString(server['id'])
        lab_guests.wait_for_agent(dom, timeout=300)
        return server['id'], dom

    def scope(self, server_ids):
        """An audit scope: the test's node and servers, nothing else."""
        hosts = [s['host'] for s in self.services_client.list_services(
            binary='nova-compute')['services']]
        others = [s['id'] for s in self.servers_client.list_servers(
            detail=True, all_tenants=True, host=self.host)['servers']
            if s['id'] not in server_ids]
        return lab_cloud.audit_scope(hosts, self.host, others)

    def audit(self, wait=True, **body):
        """An audit with auto-trigger; once finished if ``wait``.

        Forced: its scope is the test's own servers, and Watcher would
        cancel a one-shot audit while any plan of the cloud runs (one
        another test left to settle, or a neighbour's continuous audit).
        """
        audit = self.optim.create_audit(auto_trigger=True, force=True,
                                        **body)
        self.addCleanup(self.end_audit, audit['uuid'])
        if wait:
            state = wait_until('audit %s' % audit['uuid'], lambda: (
                self.optim.show_audit(audit['uuid'])['state']
                in FINISHED and self.optim.show_audit(
                    audit['uuid'])['state']),
                CONF.watcher_cams.scenario_timeout)
            self.assertEqual('SUCCEEDED', state)
        return audit['uuid']

    def end_audit(self, uuid):
        """Cancel an audit that still runs; wait until its plans stop."""
        if self.optim.show_audit(uuid)['state'] in ('PENDING', 'ONGOING',
                                                    'SUSPENDED'):
            self.optim.cancel_audit(uuid)
        wait_until('plans of audit %s stopped' % uuid, lambda: not any(
            p['state'] in ('PENDING', 'ONGOING')
            for p in self.optim.list_action_plans(uuid)),
            CONF.watcher_cams.scenario_timeout)

    def plans_done(self, audit):
        """The audit's action plans once none is running, else None."""
        plans = self.optim.list_action_plans(audit)
        if plans and all(p['state'] in FINISHED for p in plans):
            return plans
        return None

    def apply_actions(self, actions):
        """An actuator audit applying ``actions``: its plan must succeed."""
        audit = self.audit(goal='unclassified', strategy='actuator',
                           audit_type='ONESHOT',
                           parameters={'actions': actions})
        plans = wait_until('actuator plan', lambda: self.plans_done(audit),
                           CONF.watcher_cams.scenario_timeout)
        self.assertEqual(['SUCCEEDED'], [p['state'] for p in plans],
                         self.optim.list_actions(audit_uuid=audit))

    def balloon_action(self, server_id, target_mb, reason):
        return {'action_type': 'cams_balloon', 'resource_id': server_id,
                'input_parameters': {'host': self.host,
                                     'target_mb': target_mb,
                                     'reason': reason}}
