"""The WSGI application of watcher-cams-api.

One resource, read only::

    GET /                           versions (no token needed)
    GET /v1/hosts/{host}/overview   the host's overview from its agent
        [?since=SECONDS]            (timeline points newer than that only)

Everything under /v1 needs a Keystone token (keystonemiddleware
auth_token) and passes the policy rule ``watcher_cams:overview:get``
(admin by default): the overview shows every tenant's instances on a node.
The answer is the agent's (:mod:`watcher_cams.agent.overview`), fetched
over oslo.messaging; the web tier of a dashboard talks to this API and
never to the message bus. Errors are JSON, ``{"error": {"code", "title",
"message"}}``: 400 for a bad host name or ``since``, 403 when the policy
refuses, 404 for other paths, 502 when the agent answered with an error
(or is older than RPC API 1.2), 504 when it did not answer in time.
"""

import json
import math
import re

from keystonemiddleware import auth_token
from oslo_context import context
from oslo_log import log
from oslo_policy import policy as oslo_policy
import webob
import webob.dec

from watcher_cams.api import policies
from watcher_cams import rpcapi

LOG = log.getLogger(__name__)
# A host name as Nova and the agent's RPC server name use it.
HOST = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$')
TITLES = {400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found',
          405: 'Method Not Allowed', 502: 'Bad Gateway',
          504: 'Gateway Timeout'}


def _json(body, status=200):
    return webob.Response(json.dumps(body), status=status,
                          content_type='application/json', charset='utf-8')


def _error(code, message):
    return _json({'error': {'code': code, 'title': TITLES[code],
                            'message': message}}, code)


def versions(request):
    return _json({'versions': [{
        'id': 'v1', 'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': request.host_url + '/v1/'}]}]})


class OverviewApi:
    """/v1: authenticated requests (auth_token in front) reach this."""

    def __init__(self, agent, enforcer):
        self.agent = agent
        self.enforcer = enforcer

    @webob.dec.wsgify
    def __call__(self, request):
        parts = request.path_info.strip('/').split('/')
        if len(parts) != 4 or parts[:2] != ['v1', 'hosts'] \
                or parts[3] != 'overview':
            return _error(404, 'no such resource: %s' % request.path_info)
        if request.method not in ('GET', 'HEAD'):
            return _error(405, 'only GET is served')
        ctxt = context.RequestContext.from_environ(request.environ)
        try:
            self.enforcer.authorize(policies.OVERVIEW_GET,
                                    {'project_id': ctxt.project_id},
                                    ctxt, do_raise=True)
        except oslo_policy.PolicyNotAuthorized:
            LOG.info('Overview of %s refused to user %s (roles %s)',
                     parts[2][:64], ctxt.user_id, ctxt.roles)
            return _error(403, 'policy does not allow %s'
                          % policies.OVERVIEW_GET)
        return self.overview(parts[2], request.GET.get('since'))

    def overview(self, host, since):
        if not HOST.match(host):
            return _error(400, 'not a host name: %r' % host[:64])
        if since is not None:
            try:
                since = float(since)
            except ValueError:
                since = math.nan
            if not math.isfinite(since):
                return _error(400, 'since must be a time in seconds')
        try:
            return _json(self.agent.get_overview(host, since))
        except rpcapi.AgentUnreachable as exc:
            LOG.warning('%s', exc)
            return _error(504, str(exc))
        except rpcapi.AgentError as exc:
            LOG.warning('%s', exc)
            if exc.exc_type == 'UnsupportedVersion':
                return _error(502, 'watcher-cams-agent on %s is older than '
                                   'RPC API 1.2 (no overview): upgrade it'
                              % host)
            return _error(502, str(exc))


class Root:
    """``/`` to the versions document; the rest through ``authenticated``."""

    def __init__(self, authenticated):
        self.authenticated = authenticated

    @webob.dec.wsgify
    def __call__(self, request):
        if request.path_info in ('', '/'):
            return versions(request)
        return request.get_response(self.authenticated)


def build(conf, agent=None):
    """The application: Keystone auth_token, then policy, then the agent."""
    api = OverviewApi(agent or rpcapi.AgentAPI(conf),
                      policies.get_enforcer(conf))
    return Root(auth_token.AuthProtocol(api, {'oslo_config_config': conf}))
