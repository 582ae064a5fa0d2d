"""The cloud lab's bookkeeping and its errors, without a cloud.

The run itself, through Nova and Watcher: tests/cloud/test_lab_cloud.py.
"""

import datetime

import fixtures
from keystoneauth1 import exceptions as ks_exc
import testtools

from watcher_cams.cmd import lab as lab_cmd
from watcher_cams.lab import cloud
from watcher_cams.lab import cloud_api
from watcher_cams.lab import core
from watcher_cams.lab import real_guests as rg

ENV = {'OS_AUTH_URL': 'http://127.0.0.1:5000/v3', 'OS_USERNAME': 'admin',
       'OS_PASSWORD': 'secret', 'OS_PROJECT_NAME': 'admin'}


class FakeCloud:
    """Answers what CloudLab asks before it touches libvirt."""

    def __init__(self, hosts):
        self.hosts = hosts

    def compute_hosts(self):
        return self.hosts


class FailingAdapter:
    service_type = 'infra-optim'

    def __init__(self, exc):
        self.exc = exc

    def request(self, path, method, **kwargs):
        raise self.exc


class TestScopeAndActions(testtools.TestCase):

    def test_scope_leaves_only_the_lab_host_and_its_servers(self):
        self.assertEqual(
            [{'compute': [{'exclude': [
                {'compute_nodes': [{'name': 'cmp-b'}, {'name': 'cmp-c'}]},
                {'instances': [{'uuid': 'u-1'}]}]}]}],
            cloud.audit_scope(['cmp-a', 'cmp-b', 'cmp-c'], 'cmp-a',
                              ['u-1']))
        self.assertEqual([], cloud.audit_scope(['cmp-a'], 'cmp-a', []))

    def test_actions_are_timed_from_the_run_start(self):
        started = datetime.datetime(
            2026, 11, 23, 6, 0, 0,
            tzinfo=datetime.timezone.utc).timestamp()
        rows = cloud.lab_actions([
            {'created_at': '2026-11-23T06:01:30.5+00:00',
             'action_type': 'cams_balloon', 'state': 'SUCCEEDED',
             'input_parameters': {'resource_id': 'id-hot', 'current_mb': 448,
                                  'target_mb': 512, 'reason': 'why'}},
            # Watcher may omit the zone: UTC.
            {'created_at': '2026-11-23T06:02:00',
             'action_type': 'cams_balloon', 'state': 'FAILED',
             'input_parameters': {'resource_id': 'stranger',
                                  'target_mb': 256}}],
            {'id-hot': 'hotcold'}, started)
        self.assertEqual([(90.5, 'hotcold', 448, 512, 'SUCCEEDED'),
                          (120.0, 'stranger', None, 256, 'FAILED')],
                         [(r['t'], r['guest'], r['from_mb'], r['to_mb'],
                           r['outcome']) for r in rows])


class TestErrors(testtools.TestCase):

    def test_missing_credentials_are_named(self):
        env = dict(ENV, OS_PASSWORD='')
        del env['OS_USERNAME']
        exc = self.assertRaises(cloud_api.CloudError,
                                cloud_api.session_from_env, env)
        self.assertIn('OS_USERNAME, OS_PASSWORD', str(exc))
        self.assertIsNotNone(cloud_api.session_from_env(ENV))

    def test_a_failed_call_says_which_and_what_came_back(self):
        exc = self.assertRaises(
            cloud_api.CloudError, cloud_api.Cloud._call,
            FailingAdapter(ks_exc.NotFound(message='no such audit')),
            'GET', '/v1/audits/x')
        self.assertIn('infra-optim GET /v1/audits/x: 404 no such audit',
                      str(exc))
        exc = self.assertRaises(
            cloud_api.CloudError, cloud_api.Cloud._call,
            FailingAdapter(ks_exc.ConnectFailure('refused')), 'GET', '/')
        self.assertIn('refused', str(exc))

    def test_wait_gives_up_with_what_it_waited_for(self):
        exc = self.assertRaises(cloud_api.CloudError, cloud_api.wait,
                                'the plan', lambda: None, 0.05, every=0.01)
        self.assertIn('the plan: not within', str(exc))

    def test_data_in_whole_gb_and_a_known_host(self):
        exp = rg.Experiment(data_mb=1536)
        exc = self.assertRaises(core.LabError, cloud.CloudLab, exp,
                                FakeCloud(['cmp-a']), 'cmp-a', 'test:///')
        self.assertIn('multiple of 1024', str(exc))
        exc = self.assertRaises(core.LabError, cloud.CloudLab,
                                rg.Experiment(), FakeCloud(['cmp-a']),
                                'cmp-x', 'test:///')
        self.assertIn("no nova-compute on host 'cmp-x'", str(exc))

    def test_command_needs_a_host_and_credentials(self):
        stderr = self.useFixture(fixtures.StringStream('stderr')).stream
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
        for name in list(ENV) + ['CAMS_LAB_HOST', 'CAMS_LAB_LIBVIRT_URI']:
            self.useFixture(fixtures.EnvironmentVariable(name))
        for argv, words in (
                ([], '--host and --libvirt-uri'),
                (['--host', 'cmp-a', '--libvirt-uri', 'test:///'],
                 'set OS_AUTH_URL')):
            exc = self.assertRaises(SystemExit, lab_cmd.main,
                                    ['cloud'] + argv)
            self.assertEqual(2, exc.code)
            stderr.seek(0)
            self.assertIn(words, stderr.read())
