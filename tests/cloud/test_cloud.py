"""Nova, Watcher and watcher-cams together on the all-in-one cloud.

The cloud comes up once per test process (tools/aio/aio.py up, about 3
minutes once its venv exists) and goes down at the end unless
CAMS_AIO_KEEP=1. Servers boot through Nova on cmp-a, whose nova-compute
runs the driver extension; actions go through Watcher's applier to the
agent and libvirt.
"""

import json
import os
import subprocess
import sys
import threading
import time

from lxml import etree
import testtools

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'tools', 'aio'))
import aio  # noqa: E402

NODE = 'cmp-a'
SERVERS = ('cams-e2e-1', 'cams-e2e-2')
_lock = threading.Lock()
_cloud = {}


def cloud():
    """Bring the cloud up and boot the servers once per process."""
    with _lock:
        if 'error' in _cloud:
            raise RuntimeError('the cloud did not come up: %s'
                               % _cloud['error'])
        if 'servers' not in _cloud:
            try:
                out = subprocess.run(
                    [sys.executable, os.path.join(TOP, 'tools', 'aio',
                                                  'aio.py'), 'up'],
                    capture_output=True, text=True, timeout=1500)
                if out.returncode:
                    raise RuntimeError(out.stdout[-3000:] + out.stderr[-3000:])
                if os.environ.get('CAMS_AIO_KEEP') != '1':
                    import atexit
                    atexit.register(aio.down, True)
                _cloud['servers'] = boot(SERVERS)
            except Exception as exc:
                _cloud['error'] = exc
                raise
        return _cloud['servers']


def openstack(*args, api=None):
    argv = [os.path.join(aio.BIN, 'openstack')]
    if api:
        argv += ['--os-compute-api-version', api]
    out = aio.run(*argv, *args, '-f', 'json', env=aio.admin_env())
    return json.loads(out) if out.strip() else None


def wait_for(what, check, timeout=180.0, every=2.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError('%s: not within %.0f s (last: %r)'
                         % (what, timeout, last))


def boot(names):
    ids = {}
    for name in names:
        ids[name] = openstack('server', 'create', '--flavor', 'cams.tiny',
                              '--image', 'cams-tiny', '--nic', 'none',
                              '--host', NODE, '--wait', name,
                              api='2.74')['id']
    return ids


def virsh(*args):
    uri = 'qemu+unix:///system?socket=%s' % os.path.join(
        aio.libvirt_dir(NODE), 'run', 'libvirt-sock')
    return subprocess.run(['virsh', '-c', uri] + list(args), check=True,
                          capture_output=True, text=True).stdout


def domain_name(server_id):
    return openstack('server', 'show', server_id)[
        'OS-EXT-SRV-ATTR:instance_name']


def actual_mb(server_id):
    for line in virsh('dominfo', domain_name(server_id)).splitlines():
        if line.startswith('Used memory:'):
            return int(line.split()[2]) // 1024


def run_actions(actions):
    """An actuator audit with ``actions``, its plan applied; plan state."""
    audit = openstack('optimize', 'audit', 'create', '-g', 'unclassified',
                      '-s', 'actuator', '-p',
                      'actions=%s' % json.dumps(actions))['UUID']
    state = wait_for('audit', lambda: openstack(
        'optimize', 'audit', 'show', audit)['State'] in (
        'SUCCEEDED', 'FAILED') and openstack(
        'optimize', 'audit', 'show', audit)['State'])
    if state != 'SUCCEEDED':
        raise AssertionError('the actuator audit %s' % state)
    plan = openstack('optimize', 'actionplan', 'list', '--audit', audit)[0][
        'UUID']
    openstack('optimize', 'actionplan', 'start', plan)
    return wait_for('action plan', lambda: openstack(
        'optimize', 'actionplan', 'show', plan)['State'] in (
        'SUCCEEDED', 'FAILED') and openstack(
        'optimize', 'actionplan', 'show', plan)['State'])


class TestCloud(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.servers = cloud()

    def test_servers_on_the_extension_node_get_its_devices(self):
        for server_id in self.servers.values():
            server = openstack('server', 'show', server_id)
            self.assertEqual(('ACTIVE', NODE), (
                server['status'], server['OS-EXT-SRV-ATTR:host']))
            devices = etree.fromstring(virsh(
                'dumpxml', domain_name(server_id))).find('devices')
            balloon = devices.find('memballoon')
            # Nova alone writes autodeflate='on'.
            self.assertEqual(('virtio', 'off', '10'), (
                balloon.get('model'), balloon.get('autodeflate'),
                balloon.find('stats').get('period')))
            self.assertIsNotNone(devices.find(
                "channel/target[@name='org.qemu.guest_agent.0']"))

    def test_watcher_s_applier_resizes_through_the_agent(self):
        server_id = self.servers[SERVERS[0]]
        self.assertEqual(512, actual_mb(server_id))
        action = {'action_type': 'cams_balloon', 'resource_id': server_id,
                  'input_parameters': {'host': NODE, 'target_mb': 448,
                                       'reason': 'end-to-end test'}}
        self.assertEqual('SUCCEEDED', run_actions([action]))
        self.assertLessEqual(abs(actual_mb(server_id) - 448), 8)
        action['input_parameters']['target_mb'] = 512
        self.assertEqual('SUCCEEDED', run_actions([action]))
        self.assertLessEqual(abs(actual_mb(server_id) - 512), 8)
