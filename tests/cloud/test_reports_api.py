"""watcher-cams-api on the all-in-one cloud, with real Keystone tokens.

The read-only path a dashboard uses for the agents' overviews: found in
the catalog (type ``memory-optimization``), Keystone's auth_token in front,
the default policy (admin only) and the agents behind it over RabbitMQ.
"""

import json
import os
import time
import urllib.error
import urllib.request

import testtools

from tests.cloud import base

MEMBER = 'cams-member'


def get(url, token=None):
    """(status, JSON body) of a GET."""
    req = urllib.request.Request(url, headers={'Accept': 'application/json'})
    if token:
        req.add_header('X-Auth-Token', token)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b'null')


def token(username='admin', password=base.aio.PASSWORD):
    env = dict(base.aio.admin_env(), OS_USERNAME=username,
               OS_PASSWORD=password)
    out = base.aio.run(os.path.join(base.aio.BIN, 'openstack'), 'token',
                       'issue', '-f', 'json', env=env)
    return json.loads(out)['id']


class TestReportsApi(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        endpoints = [e for e in base.openstack('endpoint', 'list')
                     if e['Service Type'] == 'memory-optimization'
                     and e['Interface'] == 'public']
        self.assertEqual(1, len(endpoints), endpoints)
        self.url = endpoints[0]['URL'].rstrip('/')

    def overview(self, host, tok):
        return get('%s/v1/hosts/%s/overview' % (self.url, host), tok)

    def test_admins_see_the_hosts_instances_others_do_not(self):
        [server] = base.boot_for(self, ['cams-api']).values()
        admin = token()
        deadline = time.monotonic() + 120
        while True:
            code, body = self.overview(base.NODE, admin)
            self.assertEqual(200, code, body)
            mine = [i for i in body['instances'] if i['uuid'] == server]
            # The balloon gives cache_mb before the guest agent answers;
            # the guest is ready when both are in.
            if (mine and mine[0]['cache_mb'] is not None
                    and mine[0]['agent'] == 'ok'):
                break
            self.assertLess(time.monotonic(), deadline, body)
            time.sleep(5)
        [inst] = mine
        self.assertEqual(('ok', 512), (inst['agent'], inst['max_mb']))
        self.assertLessEqual(inst['floor_mb'], inst['actual_mb'])
        self.assertEqual(base.NODE, body['host'])
        self.assertTrue(body['timeline'][server])
        self.assertGreater(body['memory']['ram_mb'], 0)
        # The cmp-a agent treats each CPU as a cache of its own.
        self.assertGreater(len(body['llc']), 1)

        # No token, a member's token, a host without an agent.
        code, body = self.overview(base.NODE, None)
        self.assertEqual(401, code)
        users = base.openstack('user', 'list')
        if not any(u['Name'] == MEMBER for u in users):
            base.openstack('user', 'create', '--password',
                           base.aio.PASSWORD, MEMBER)
            base.openstack_quiet('role', 'add', '--user', MEMBER,
                                 '--project', 'admin', 'member')
        code, body = self.overview(base.NODE, token(MEMBER))
        self.assertEqual(403, code, body)
        self.assertIn('watcher_cams:overview:get', body['error']['message'])
        code, body = self.overview('cmp-nowhere', admin)
        self.assertEqual(504, code, body)
        self.assertIn('cmp-nowhere did not answer', body['error']['message'])
