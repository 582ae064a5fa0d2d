"""watcher-cams-api's application: routes, policy, errors, auth in front.

The agent is a stand-in here (its RPC client is tested in
tests/unit/glue/test_rpcapi.py, and the whole path over RabbitMQ in
tests/functional/test_rpc.py); the policy engine and keystonemiddleware
are the real ones. Requests carry the headers auth_token sets for a
validated token; the cloud tests send real tokens.
"""

import json

import fixtures
from keystonemiddleware import auth_token
from oslo_config import cfg
import testtools
import webob

from watcher_cams.api import app
from watcher_cams.api import policies
from watcher_cams import rpcapi

OVERVIEW = {'version': 1, 'host': 'cmp-a', 'instances': [],
            'timeline': {}}


class FakeAgent:
    def __init__(self, answer=None):
        self.answer = answer
        self.calls = []

    def get_overview(self, host, since=None):
        self.calls.append((host, since))
        if isinstance(self.answer, Exception):
            raise self.answer
        return dict(OVERVIEW, host=host)


def request(path, roles='admin', method='GET'):
    req = webob.Request.blank(path, method=method)
    if roles is not None:
        req.headers.update({'X-Roles': roles, 'X-User-Id': 'u1',
                            'X-Project-Id': 'p1',
                            'X-Identity-Status': 'Confirmed'})
    return req


class TestOverviewApi(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        self.conf([], project='watcher-cams')
        self.agent = FakeAgent()
        self.api = app.OverviewApi(self.agent,
                                   policies.get_enforcer(self.conf))

    def call(self, path, **kwargs):
        resp = request(path, **kwargs).get_response(self.api)
        return resp.status_int, json.loads(resp.body)

    def assertError(self, code, text, answer):
        self.assertEqual(code, answer[0])
        self.assertEqual(code, answer[1]['error']['code'])
        self.assertIn(text, answer[1]['error']['message'])

    def test_admin_gets_the_agents_overview(self):
        self.assertEqual((200, dict(OVERVIEW, host='cmp-a')),
                         self.call('/v1/hosts/cmp-a/overview'))
        self.call('/v1/hosts/cmp-b.example.org/overview?since=12.5')
        self.assertEqual([('cmp-a', None), ('cmp-b.example.org', 12.5)],
                         self.agent.calls)

    def test_only_admins_by_default(self):
        self.assertError(403, policies.OVERVIEW_GET,
                         self.call('/v1/hosts/cmp-a/overview',
                                   roles='member,reader'))
        self.assertEqual([], self.agent.calls)

    def test_an_operator_policy_file_is_followed(self):
        path = self.useFixture(fixtures.TempDir()).path
        with open(path + '/policy.yaml', 'w') as f:
            f.write('"%s": "role:reader"\n' % policies.OVERVIEW_GET)
        self.conf.set_override('policy_file', path + '/policy.yaml',
                               'oslo_policy')
        api = app.OverviewApi(self.agent, policies.get_enforcer(self.conf))
        resp = request('/v1/hosts/cmp-a/overview',
                       roles='reader').get_response(api)
        self.assertEqual(200, resp.status_int)

    def test_bad_requests(self):
        for path in ('/v1/hosts/-x/overview', '/v1/hosts/a%20b/overview',
                     '/v1/hosts/%s/overview' % ('h' * 300),
                     '/v1/hosts/cmp-a/overview?since=soon',
                     '/v1/hosts/cmp-a/overview?since=nan',
                     '/v1/hosts/cmp-a/overview?since=inf'):
            self.assertEqual(400, self.call(path)[0], path)
        self.assertError(404, 'no such resource', self.call('/v1/hosts'))
        self.assertError(404, 'no such resource',
                         self.call('/v2/hosts/cmp-a/overview'))
        self.assertError(405, 'GET', self.call('/v1/hosts/cmp-a/overview',
                                               method='DELETE'))
        self.assertEqual([], self.agent.calls)

    def test_agent_failures_are_told_apart(self):
        self.agent.answer = rpcapi.AgentUnreachable('cmp-a', 'timed out')
        self.assertError(504, 'did not answer',
                         self.call('/v1/hosts/cmp-a/overview'))
        self.agent.answer = rpcapi.AgentError('cmp-a', 'get_overview',
                                              'UnsupportedVersion', '1.2')
        self.assertError(502, 'older than RPC API 1.2',
                         self.call('/v1/hosts/cmp-a/overview'))
        self.agent.answer = rpcapi.AgentError('cmp-a', 'get_overview',
                                              'OSError', 'libvirt is down')
        self.assertError(502, 'libvirt is down',
                         self.call('/v1/hosts/cmp-a/overview'))


class TestBuiltApplication(testtools.TestCase):
    """The whole pipeline, keystonemiddleware's auth_token first."""

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        self.conf([], project='watcher-cams')
        self.agent = FakeAgent()
        # Where a client gets a token; no Keystone is asked to reject.
        for group, opts in auth_token.list_opts():
            self.conf.register_opts(opts, group=group)
        self.conf.set_override('www_authenticate_uri',
                               'http://keystone.test/identity',
                               'keystone_authtoken')
        self.app = app.build(self.conf, self.agent)

    def test_versions_need_no_token(self):
        resp = webob.Request.blank('/').get_response(self.app)
        self.assertEqual(200, resp.status_int)
        self.assertEqual('v1', resp.json['versions'][0]['id'])

    def test_no_token_no_overview(self):
        resp = request('/v1/hosts/cmp-a/overview').get_response(self.app)
        self.assertEqual(401, resp.status_int)
        self.assertIn('keystone.test', resp.headers['WWW-Authenticate'])
        self.assertEqual([], self.agent.calls)
