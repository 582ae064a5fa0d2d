"""What the cloud tests share: the cloud, the CLI, libvirt of a compute.

The cloud comes up once per test process (tools/aio/aio.py up, about 3
minutes once its venv exists), unless tools/test.sh started it already
(CAMS_AIO_UP=1), and goes down at the end unless CAMS_AIO_KEEP=1.
"""

import ast
import atexit
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading

import libvirt
import yaml

from watcher_cams.lab import cloud as lab_cloud
from watcher_cams.lab import cloud_api
from watcher_cams.lab import guests as lab_guests

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'tools', 'aio'))
import aio  # noqa: E402

# cmp-a runs the driver extension and the agent.
NODE = 'cmp-a'
_lock = threading.Lock()
_cloud = {}


def cloud():
    """Bring the cloud up once per process; raise if it did not come up.

    With CAMS_AIO_UP=1 (tools/test.sh) it is up already.
    """
    with _lock:
        if 'error' in _cloud:
            raise RuntimeError('the cloud did not come up: %s'
                               % _cloud['error'])
        if not _cloud and os.environ.get('CAMS_AIO_UP') != '1':
            out = subprocess.run(
                [sys.executable, os.path.join(TOP, 'tools', 'aio', 'aio.py'),
                 'up'], capture_output=True, text=True, timeout=1500)
            if out.returncode:
                _cloud['error'] = out.stdout[-3000:] + out.stderr[-3000:]
                raise RuntimeError(_cloud['error'])
        if not _cloud:
            if os.environ.get('CAMS_AIO_KEEP') != '1':
                atexit.register(aio.down, True)
            _cloud['up'] = True


def openstack(*args, api=None):
    """The openstack CLI as admin; its JSON output, None when empty."""
    argv = ['--os-compute-api-version', api] if api else []
    out = aio.openstack(*argv, *args, '-f', 'json')
    return json.loads(out) if out.strip() else None


def openstack_quiet(*args):
    """A CLI command that prints nothing (delete, start, update)."""
    aio.openstack(*args)


def wait_for(what, check, timeout=180.0, every=2.0):
    """``cloud_api.wait``, failing the test when it gives up."""
    try:
        return cloud_api.wait(what, check, timeout, every)
    except cloud_api.CloudError as exc:
        raise AssertionError(str(exc)) from None


def boot(names, flavor='cams.tiny', node=NODE):
    """Servers on ``node``, ACTIVE and their guest agents answering.

    Returns {name: id}.

    The agent reads a guest's memory figures through its guest agent, which
    under TCG answers seconds after Nova calls the server ACTIVE, and an
    audit gets the agent's newest collection: an audit before one has seen
    the guest agent would leave the guest out.
    """
    servers = {}
    for name in names:
        try:
            servers[name] = openstack(
                'server', 'create', '--flavor', flavor, '--image',
                'cams-tiny', '--nic', 'none', '--host', node, '--wait',
                name, api='2.74')['id']
        except RuntimeError as exc:
            raise RuntimeError('%s\nNova says: %s' % (exc, why_failed(name)))
    for server_id in servers.values():
        lab_guests.wait_for_agent(domain(server_id, node), timeout=300)
    # Audits get the agent's newest collection: wait until one has them.
    api().wait_reported(node, list(servers.values()))
    return servers


def api():
    """The cloud lab's REST client (cloud_api.Cloud), as admin."""
    return cloud_api.Cloud(cloud_api.session_from_env(aio.admin_env()))


def why_failed(name):
    """The fault Nova recorded for a server, and the compute services."""
    try:
        fault = (openstack('server', 'show', name) or {}).get('fault')
        services = [(s['Binary'], s['Host'], s['State']) for s in
                    openstack('compute', 'service', 'list')]
    except RuntimeError as exc:
        return 'nothing (%s)' % exc
    return 'fault %r; services %r' % (fault, services)


def compute_heard_from(node=NODE):
    """When Nova last heard from ``node``'s nova-compute (aware, UTC)."""
    for service in openstack('compute', 'service', 'list', '--service',
                             'nova-compute', '--host', node):
        return datetime.datetime.fromisoformat(
            service['Updated At']).replace(tzinfo=datetime.timezone.utc)
    raise AssertionError('no nova-compute on %s' % node)


def delete_server(server_id):
    """Delete a server and wait; one a test deleted already is fine."""
    try:
        openstack_quiet('server', 'delete', '--wait', server_id)
    except RuntimeError:
        pass


def boot_for(test, names, flavor='cams.tiny', node=NODE):
    """``boot``, with each server deleted when ``test`` ends."""
    servers = boot(names, flavor, node)
    for server_id in servers.values():
        test.addCleanup(delete_server, server_id)
    return servers


def scope_file(test, node, others):
    """A YAML audit scope (lab.cloud.audit_scope) in a file ``test`` owns.

    The scope keeps ``node`` (None: no compute node) without the servers
    ``others``; the file is removed when ``test`` ends.
    """
    hosts = [s['Host'] for s in openstack(
        'compute', 'service', 'list', '--service', 'nova-compute')]
    fd, path = tempfile.mkstemp(suffix='.yaml')
    with os.fdopen(fd, 'w') as f:
        yaml.safe_dump(lab_cloud.audit_scope(hosts, node, others), f)
    test.addCleanup(os.unlink, path)
    return path


def scoped_template(test, name, goal, strategy, keep, node=NODE):
    """An audit template that sees only the servers ``keep`` on ``node``.

    Other tests leave servers on the node (tests/cloud/test_cloud.py keeps
    two for its module); an audit scoped this way leaves them alone. The
    template is deleted when ``test`` ends.
    """
    others = [s['ID'] for s in openstack(
        'server', 'list', '--all-projects', '--host', node) or []
        if s['ID'] not in set(keep)]
    openstack('optimize', 'audittemplate', 'create', name, goal,
              '-s', strategy, '--scope', scope_file(test, node, others))
    test.addCleanup(openstack_quiet, 'optimize', 'audittemplate', 'delete',
                    name)
    return name


def libvirt_uri(node=NODE):
    return aio.libvirt_uri(node)


def virsh(*args, node=NODE):
    return subprocess.run(['virsh', '-c', libvirt_uri(node)] + list(args),
                          check=True, capture_output=True, text=True).stdout


def domain(server_id, node=NODE):
    """The libvirt domain of a server (libvirt-python, NODE's libvirtd)."""
    libvirt.registerErrorHandler(lambda *args: None, None)
    return libvirt.open(libvirt_uri(node)).lookupByUUIDString(server_id)


def domain_name(server_id):
    return openstack('server', 'show', server_id)[
        'OS-EXT-SRV-ATTR:instance_name']


def actual_mb(server_id):
    """The server's current memory as libvirt reports it."""
    for line in virsh('dominfo', domain_name(server_id)).splitlines():
        if line.startswith('Used memory:'):
            return int(line.split()[2]) // 1024


def finished(kind, uuid):
    """The state of an audit or action plan once it stopped, else None."""
    state = openstack('optimize', kind, 'show', uuid)['State']
    return state if state in ('SUCCEEDED', 'FAILED', 'CANCELLED') else None


def oneshot_audit(*args, auto_trigger=True):
    """A one-shot audit (``openstack optimize audit create`` ``args``).

    Forced (see :func:`start_actions`), and auto-triggered unless told
    not; returns its UUID once it SUCCEEDED, else raises AssertionError.
    """
    trigger = ('--auto-trigger',) if auto_trigger else ()
    audit = openstack('optimize', 'audit', 'create', *args, *trigger,
                      '--force')['UUID']
    state = wait_for('audit', lambda: finished('audit', audit))
    if state != 'SUCCEEDED':
        raise AssertionError('the one-shot audit %s %s' % (audit, state))
    return audit


def start_actions(actions):
    """An actuator audit with ``actions``, its plan started: the plan.

    The actuator strategy keeps the given order: one cams_balloon after
    the other (the shipped parallelization is 1). The audit is forced:
    Watcher cancels a one-shot audit created while any action plan is
    ONGOING, and a test's continuous audit may be applying one (seen in
    CI after the RabbitMQ restart, whose lost RPC kept a plan ONGOING).
    """
    audit = oneshot_audit('-g', 'unclassified', '-s', 'actuator', '-p',
                          'actions=%s' % json.dumps(actions),
                          auto_trigger=False)
    plan = openstack('optimize', 'actionplan', 'list', '--audit', audit)[0][
        'UUID']
    openstack('optimize', 'actionplan', 'start', plan)
    return plan


def run_actions(actions):
    """``start_actions``, waited for: (plan, its final state)."""
    plan = start_actions(actions)
    return plan, wait_for('action plan', lambda: finished('actionplan', plan))


def balloon_action(server_id, target_mb, reason='cloud test'):
    return {'action_type': 'cams_balloon', 'resource_id': server_id,
            'input_parameters': {'host': NODE, 'target_mb': target_mb,
                                 'reason': reason}}


def plan_actions(plan):
    """A plan's actions: [{'type', 'state', 'params'}], in creation order."""
    out = []
    for action in openstack('optimize', 'action', 'list', '--action-plan',
                            plan, '--detail'):
        params = action['Parameters']
        if isinstance(params, str):
            # Older clients print the mapping as Python, newer as JSON.
            params = ast.literal_eval(params)
        out.append({'type': action['Action'], 'state': action['State'],
                    'params': params, 'created': action['Created At'],
                    'message': action.get('Status Message') or ''})
    return sorted(out, key=lambda a: a['created'])
