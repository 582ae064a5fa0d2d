"""What the cloud lab asks of OpenStack: Nova, Glance and Watcher over REST.

A keystoneauth1 session from the usual ``OS_*`` environment (as the
``openstack`` CLI reads it) and one adapter per service. Only the calls the
lab makes; every failure is a :class:`CloudError` that says which call
failed and what the service answered.
"""

import datetime
import os
import time

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session

# Servers without networks ('none') need 2.37, a host to boot on 2.74.
NOVA_MICROVERSION = '2.74'
REQUIRED_ENV = ('OS_AUTH_URL', 'OS_USERNAME', 'OS_PASSWORD',
                'OS_PROJECT_NAME')
FINISHED = ('SUCCEEDED', 'FAILED', 'CANCELLED', 'SUPERSEDED', 'DELETED')


class CloudError(Exception):
    """A call to the cloud failed; the message says which and why."""


def session_from_env(env=None):
    """A keystoneauth1 session for the admin credentials in ``env``."""
    env = os.environ if env is None else env
    missing = [name for name in REQUIRED_ENV if not env.get(name)]
    if missing:
        raise CloudError('set %s (admin credentials, as for the openstack '
                         'CLI; tools/aio/aio.py openrc prints them for the '
                         'all-in-one cloud)' % ', '.join(missing))
    auth = loading.get_plugin_loader('password').load_from_options(
        auth_url=env['OS_AUTH_URL'], username=env['OS_USERNAME'],
        password=env['OS_PASSWORD'], project_name=env['OS_PROJECT_NAME'],
        user_domain_name=env.get('OS_USER_DOMAIN_NAME', 'Default'),
        project_domain_name=env.get('OS_PROJECT_DOMAIN_NAME', 'Default'))
    return ks_session.Session(auth=auth)


def parse_time(text):
    """An API timestamp as aware UTC (Watcher and Nova omit the zone)."""
    stamp = datetime.datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.timezone.utc)
    return stamp


def wait(what, check, timeout, every=2.0):
    """Poll ``check`` until it returns something true; CloudError else."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise CloudError('%s: not within %.0f s (last: %r)'
                     % (what, timeout, last))


class Cloud:
    """The Nova, Glance and Watcher calls of the cloud lab."""

    def __init__(self, session, region=None, interface='public'):
        def api(service_type, **kwargs):
            return adapter.Adapter(session, service_type=service_type,
                                   interface=interface, region_name=region,
                                   **kwargs)
        self.nova = api('compute', default_microversion=NOVA_MICROVERSION)
        self.glance = api('image')
        self.watcher = api('infra-optim')
        self.reports = api('memory-optimization')  # watcher-cams-api

    @staticmethod
    def _call(api, method, path, **kwargs):
        try:
            resp = api.request(path, method, **kwargs)
        except ks_exc.HttpError as exc:
            raise CloudError('%s %s %s: %s %s' % (
                api.service_type, method, path, exc.http_status,
                (exc.response.text if exc.response is not None
                 else exc.message)[:500]))
        except ks_exc.ClientException as exc:
            raise CloudError('%s %s %s: %s' % (api.service_type, method,
                                               path, exc))
        return resp.json() if resp.content else None

    # Glance and Nova.

    def image_id(self, name):
        found = self._call(self.glance, 'GET', '/v2/images',
                           params={'name': name})['images']
        if not found:
            raise CloudError('no image %r in Glance' % name)
        return found[0]['id']

    def flavor_id(self, name, ram_mb, ephemeral_gb):
        """The flavor ``name``; created if missing, refused if different."""
        for flavor in self._call(self.nova, 'GET', '/flavors/detail',
                                 params={'is_public': 'None'})['flavors']:
            if flavor['name'] != name:
                continue
            if (flavor['ram'], flavor['OS-FLV-EXT-DATA:ephemeral']) != (
                    ram_mb, ephemeral_gb):
                raise CloudError('flavor %s exists with %d MiB and %d GB '
                                 'ephemeral, not %d and %d' % (
                                     name, flavor['ram'],
                                     flavor['OS-FLV-EXT-DATA:ephemeral'],
                                     ram_mb, ephemeral_gb))
            return flavor['id']
        return self._call(self.nova, 'POST', '/flavors', json={'flavor': {
            'name': name, 'ram': ram_mb, 'vcpus': 1, 'disk': 1,
            'OS-FLV-EXT-DATA:ephemeral': ephemeral_gb}})['flavor']['id']

    def compute_hosts(self):
        return sorted(s['host'] for s in self._call(
            self.nova, 'GET', '/os-services',
            params={'binary': 'nova-compute'})['services'])

    def servers_on(self, host):
        """Every project's servers on ``host``: [{'id', 'name', 'status'}]."""
        return [{'id': s['id'], 'name': s['name'], 'status': s['status']}
                for s in self._call(self.nova, 'GET', '/servers/detail',
                                    params={'all_tenants': 1,
                                            'host': host})['servers']]

    def boot(self, name, flavor_id, image_id, host, timeout=300):
        """Boot a server without networks on ``host``; its id once ACTIVE."""
        server_id = self._call(self.nova, 'POST', '/servers', json={
            'server': {'name': name, 'imageRef': image_id,
                       'flavorRef': flavor_id, 'networks': 'none',
                       'host': host}})['server']['id']

        def active():
            server = self._call(self.nova, 'GET',
                                '/servers/%s' % server_id)['server']
            if server['status'] == 'ERROR':
                raise CloudError('server %s went to ERROR: %s' % (
                    name, (server.get('fault') or {}).get('message')))
            return server['status'] == 'ACTIVE'
        wait('server %s ACTIVE' % name, active, timeout)
        return server_id

    def reported(self, host, server_ids):
        """Whether ``host``'s agent reports every server, its agent ok.

        Through watcher-cams-api's overview: the agent answers audits
        from its newest background collection, so a guest whose guest
        agent has just come up is in an audit's report only once a
        collection has seen it.
        """
        overview = self._call(self.reports, 'GET',
                              '/v1/hosts/%s/overview' % host)
        ok = {i['uuid'] for i in overview['instances']
              if i['agent'] == 'ok'}
        return set(server_ids) <= ok

    def wait_reported(self, host, server_ids, timeout=120):
        wait('%s reports %s' % (host, ', '.join(server_ids)),
             lambda: self.reported(host, server_ids), timeout, every=3.0)

    def delete_server(self, server_id, timeout=120):
        """Delete a server and wait until it is gone; gone already is fine."""
        def gone():
            try:
                self.nova.get('/servers/%s' % server_id)
            except ks_exc.NotFound:
                return True
            except ks_exc.ClientException as exc:
                raise CloudError('compute GET /servers/%s: %s'
                                 % (server_id, exc))
            return False
        if gone():
            return
        self._call(self.nova, 'DELETE', '/servers/%s' % server_id)
        wait('server %s deleted' % server_id, gone, timeout)

    # Watcher.

    def strategy_goal(self, strategy):
        return self._call(self.watcher, 'GET',
                          '/v1/strategies/%s' % strategy)['goal_name']

    def create_audit_template(self, name, goal, strategy, scope=()):
        return self._call(self.watcher, 'POST', '/v1/audit_templates', json={
            'name': name, 'goal': goal, 'strategy': strategy,
            'scope': list(scope)})['uuid']

    def delete_audit_template(self, uuid):
        self._call(self.watcher, 'DELETE', '/v1/audit_templates/%s' % uuid)

    def create_audit(self, audit_type, parameters, interval=None,
                     template=None, goal=None, strategy=None):
        """An audit with auto-trigger: its plans are applied as they come."""
        body = {'audit_type': audit_type, 'auto_trigger': True,
                'parameters': parameters}
        for key, value in (('interval', interval),
                           ('audit_template_uuid', template),
                           ('goal', goal), ('strategy', strategy)):
            if value is not None:
                body[key] = value
        return self._call(self.watcher, 'POST', '/v1/audits',
                          json=body)['uuid']

    def audit_state(self, uuid):
        return self._call(self.watcher, 'GET', '/v1/audits/%s' % uuid)[
            'state']

    def cancel_audit(self, uuid):
        self._call(self.watcher, 'PATCH', '/v1/audits/%s' % uuid, json=[
            {'op': 'replace', 'path': '/state', 'value': 'CANCELLED'}])

    def action_plans(self, audit):
        return self._call(self.watcher, 'GET', '/v1/action_plans',
                          params={'audit_uuid': audit})['action_plans']

    def actions(self, audit):
        """An audit's actions with their parameters, oldest first."""
        found = self._call(self.watcher, 'GET', '/v1/actions/detail',
                           params={'audit_uuid': audit})['actions']
        return sorted(found, key=lambda a: a['created_at'])

    def run_actions(self, actions, timeout=300):
        """An actuator audit applying ``actions``: the plan's final state."""
        audit = self.create_audit('ONESHOT', {'actions': actions},
                                  goal='unclassified', strategy='actuator')

        def plan_done():
            state = self.audit_state(audit)
            if state in ('FAILED', 'CANCELLED'):
                raise CloudError('actuator audit %s %s' % (audit, state))
            plans = self.action_plans(audit) if state == 'SUCCEEDED' else []
            return plans and plans[0]['state'] in FINISHED and plans[0][
                'state']
        return wait('actuator plan of audit %s' % audit, plan_done, timeout)

    def settle(self, audit, timeout=300):
        """Wait until none of ``audit``'s plans is still being applied."""
        wait('plans of audit %s finished' % audit, lambda: not any(
            p['state'] in ('PENDING', 'ONGOING')
            for p in self.action_plans(audit)), timeout)
