"""What the panel reads, with the signed-in user's token.

Two authenticated APIs and nothing else: watcher-cams-api (catalog type
``memory-optimization``) for the agents' overviews, and Watcher's API
(``infra-optim``) for action plans and actions. The web process never
reaches a database or the message bus. Every failure becomes
:class:`ApiError`, which names the service and says what went wrong, so a
page can show a host whose agent is missing or slow as such.
"""

import re

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from openstack_dashboard.api import base
import requests

REPORTS_SERVICE = 'memory-optimization'
WATCHER_SERVICE = 'infra-optim'
CAMS_ACTIONS = ('cams_balloon', 'cams_host_balloon', 'cams_pin_vcpus',
                'cams_host_pin')
PIN_ACTIONS = ('cams_pin_vcpus', 'cams_host_pin')
# How far back the panel looks: the newest this many actions and plans of
# Watcher (its API caps a page at [api] max_limit, 1000 by default).
ACTIONS_LIMIT = 500
# Seconds a page waits for one answer; the reports API itself waits up to
# its [watcher_cams_agent] report_timeout for an agent.
DEFAULT_TIMEOUT = 30
# What each strategy writes in an action's reason (watcher_cams/policy).
VALUE = re.compile(r'(?:value|measured up to) ([0-9.]+) MiB/s per GiB')
# Which signal decided a utility move (watcher_cams.policy.utility).
SIGNAL = re.compile(r'\((host-measured|guest-reported|probe)\)')
UTILIZATION = re.compile(r'cache utilization ([0-9.]+) -> ([0-9.]+)')
MARGIN = re.compile(r'Committed_AS ([0-9]+) MiB \+ margin ([0-9]+) MiB')
KSM = re.compile(r'entitled ([0-9]+) MiB \+ ([0-9]+) MiB of ([0-9]+) MiB '
                 r'safe KSM savings')


class ApiError(Exception):
    """``service`` did not give what was asked: ``message`` says why."""

    def __init__(self, service, message, status=None):
        self.service, self.status = service, status
        super().__init__('%s: %s' % (service, message))


def _verify():
    if getattr(settings, 'OPENSTACK_SSL_NO_VERIFY', False):
        return False
    return getattr(settings, 'OPENSTACK_SSL_CACERT', None) or True


def _get(request, service, path, params=None):
    timeout = getattr(settings, 'WATCHER_CAMS_TIMEOUT', DEFAULT_TIMEOUT)
    try:
        url = base.url_for(request, service).rstrip('/') + path
    except Exception as exc:  # ServiceCatalogException and kin
        raise ApiError(service, _('not in the service catalog (%s)') % exc)
    try:
        resp = requests.get(url, params=params, timeout=timeout,
                            verify=_verify(),
                            headers={'X-Auth-Token': request.user.token.id,
                                     'Accept': 'application/json'})
    except requests.Timeout:
        raise ApiError(service, _('no answer within %d s') % timeout)
    except requests.RequestException as exc:
        raise ApiError(service, _('unreachable: %s') % exc)
    try:
        body = resp.json()
    except ValueError:
        body = None
    if resp.status_code != 200:
        raise ApiError(service, _error_message(resp, body), resp.status_code)
    if not isinstance(body, dict):
        raise ApiError(service, _('answered something that is not a JSON '
                                  'object'))
    return body


def _error_message(resp, body):
    """The message of watcher-cams-api's or Watcher's error body."""
    if isinstance(body, dict):
        error = body.get('error')
        if isinstance(error, dict) and error.get('message'):
            return '%d %s' % (resp.status_code, error['message'])
        if body.get('error_message'):  # Watcher (wsme)
            return '%d %s' % (resp.status_code, body['error_message'])
    return '%d %s' % (resp.status_code, resp.reason)


def overview(request, host, since=None):
    """The agent's overview of ``host`` (doc/source/reports-api.rst)."""
    params = {'since': since} if since is not None else None
    return _get(request, REPORTS_SERVICE,
                '/v1/hosts/%s/overview' % host, params)


def value_estimate(reason):
    """The estimate a strategy sized a guest by, from an action's reason.

    Utility mode: the disk reads a GiB saves; paper mode: the cache
    utilizations it equalizes; the margin controller: commitment plus its
    learned margin; the KSM strategy: the guest's share of the savings.
    """
    reason = reason or ''
    found = VALUE.search(reason)
    if found:
        decided = signal(reason)
        if decided:
            return _('%(v)s MiB/s per GiB (%(s)s)') % {
                'v': found.group(1), 's': decided}
        return _('%s MiB/s per GiB') % found.group(1)
    found = UTILIZATION.search(reason)
    if found:
        return _('cache utilization %(a)s to %(b)s') % {
            'a': found.group(1), 'b': found.group(2)}
    found = MARGIN.search(reason)
    if found:
        return _('committed %(c)s MiB + margin %(m)s MiB') % {
            'c': found.group(1), 'm': found.group(2)}
    found = KSM.search(reason)
    if found:
        return _('%(b)s MiB of %(p)s MiB KSM savings') % {
            'b': found.group(2), 'p': found.group(3)}
    return None


def signal(reason):
    """Which signal decided a utility move, from its reason, or None.

    ``host-measured``: the disk reads QEMU measured at sizes the guest
    held; ``guest-reported``: the guest's own counters; ``probe``: a
    bounded step to measure what neither could tell.
    """
    found = SIGNAL.search(reason or '')
    return found.group(1) if found else None


class Action:
    """A cams_* action of Watcher with its plan, for the tables.

    ``target``: for a cams_host_balloon or cams_host_pin, the one guest's
    change this row shows (the action carries a host's targets or pins);
    None for the other actions, whose parameters are one guest's change.
    """

    def __init__(self, data, plan, target=None):
        params = data.get('input_parameters') or {}
        change = target or params
        self.id = data['uuid'] if target is None else '%s_%s' % (
            data['uuid'], target.get('instance'))
        self.action_type = data.get('action_type')
        self.instance = (params.get('resource_id') if target is None
                         else target.get('instance'))
        self.host = params.get('host')
        self.state = data.get('state')
        self.created_at = data.get('created_at')
        self.reason = change.get('reason') or params.get('reason', '')
        self.status_message = data.get('status_message') or ''
        if 'target_mb' in change:
            self.change = '%s MiB -> %s MiB' % (change.get('current_mb', '?'),
                                                change.get('target_mb'))
        else:
            self.change = 'CPUs %s' % ','.join(
                str(c) for c in change.get('cpus') or ())
        self.plan = data.get('action_plan_uuid')
        self.plan_state = (plan or {}).get('state')
        self.audit = (plan or {}).get('audit_uuid')
        self.strategy = (plan or {}).get('strategy_name')
        self.value = value_estimate(self.reason)
        self.signal = signal(self.reason)

    @property
    def resizes(self):
        """Whether this row is a balloon change (not a pinning)."""
        return self.action_type not in PIN_ACTIONS


def _rows(data, plan):
    """The table rows of one action: one per guest it changes."""
    params = data.get('input_parameters') or {}
    changes = params.get('targets') or params.get('pins')
    if changes:
        return [Action(data, plan, c) for c in changes]
    return [Action(data, plan)]


def cams_actions(request, limit=ACTIONS_LIMIT):
    """The newest cams_* actions, newest first, one row per guest."""
    order = {'sort_key': 'created_at', 'sort_dir': 'desc'}
    actions = _get(request, WATCHER_SERVICE, '/v1/actions/detail',
                   dict(order, limit=limit)).get('actions') or []
    plans = _get(request, WATCHER_SERVICE, '/v1/action_plans/detail',
                 dict(order, limit=limit)).get('action_plans') or []
    by_uuid = {p.get('uuid'): p for p in plans}
    return [row for a in actions if a.get('action_type') in CAMS_ACTIONS
            for row in _rows(a, by_uuid.get(a.get('action_plan_uuid')))]
