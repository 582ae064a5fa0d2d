"""Client side of the watcher-cams-agent RPC API.

The strategies (metrics) and the actions (changes) reach the agent on each
compute node through oslo.messaging: topic ``[watcher_cams_agent] topic``,
server = the compute host name. Watcher datasources are not pluggable and
know none of these metrics, so this RPC is the metrics path too.

The exchange and the API version history are in
:mod:`watcher_cams.rpc_common`.
"""

from concurrent import futures
import os
import threading
import time

from oslo_config import cfg
from oslo_log import log
import oslo_messaging as messaging

from watcher_cams import changes
from watcher_cams import conf as cams_conf
from watcher_cams.policy import compact
from watcher_cams import rpc_common

LOG = log.getLogger(__name__)
CONF = cams_conf.CONF


REMOTE_SUFFIX = '_Remote'
# Arguments an agent older than their API version does not take.
NEWER_ARGUMENTS = ('change_id', 'report_version')
# Seconds an RPC call needs at least to be worth making.
MIN_CALL_S = 0.5
# Hosts (or guests) named in one log line of errors; the rest counted.
ERRORS_LOGGED = 5


class AgentUnreachable(Exception):
    """The agent of a host did not answer in time."""

    def __init__(self, host, detail=''):
        self.host = host
        super().__init__('watcher-cams-agent on %s did not answer: %s'
                         % (host, detail))


class AgentError(Exception):
    """The agent answered with an error (refused or failed the request)."""

    def __init__(self, host, method, exc_type, detail):
        self.host, self.method, self.exc_type = host, method, exc_type
        super().__init__('watcher-cams-agent on %s failed %s: %s: %s'
                         % (host, method, exc_type, detail))


def some_errors(errors):
    """{host or guest: error} for one log line: the first few, counted."""
    first = sorted(errors)[:ERRORS_LOGGED]
    more = len(errors) - len(first)
    return '; '.join(str(errors[h]) for h in first) + (
        ' (and %d more)' % more if more else '')


_SHARED = {}
_SHARED_LOCK = threading.Lock()


def shared_agent():
    """The process's one AgentAPI client, made on first use.

    A client holds an AMQP transport (its connections and threads) for
    as long as it lives: one per strategy or action object leaked them
    audit after audit. Per process id, so a forked worker makes its own.
    """
    pid = os.getpid()
    with _SHARED_LOCK:
        if pid not in _SHARED:
            _SHARED.clear()
            _SHARED[pid] = AgentAPI()
        return _SHARED[pid]


def get_reports(agent, hosts, conf=None):
    """{host: its report, or the AgentUnreachable/AgentError raised}.

    ``agent``: an AgentAPI, or a stand-in with its get_report. See
    :func:`each_host`: a dead or slow agent costs the audit one
    ``report_timeout`` at most, however many there are.
    """
    return each_host(hosts, agent.get_report, conf)


def plan_hosts(agent, requests, conf=None):
    """{host: its agent's plan answer, or the error} for {host: request}.

    Asked as :func:`get_reports` asks: all hosts at once, one
    ``report_timeout`` at most for the audit.
    """
    def plan(host, timeout):
        return agent.plan(host, requests[host], timeout=timeout)

    return each_host(sorted(requests), plan, conf)


def save_policy_states(agent, states, conf=None):
    """{host: None, or the error} for {host: {uuid: {key: state}}}.

    Saved as :func:`get_reports` asks: all hosts at once, not one round
    trip after the other.
    """
    def save(host, timeout):
        agent.save_policy_state(host, states[host], timeout=timeout)

    return each_host(sorted(states), save, conf)


def each_host(hosts, call, conf=None):
    """{host: call(host, timeout=seconds left), or the agent's error}.

    ``report_concurrency`` calls at a time, all within one
    ``report_timeout``; a host whose turn comes after that deadline is
    AgentUnreachable unasked.
    """
    opts = (conf or CONF).watcher_cams_agent
    deadline = time.monotonic() + opts.report_timeout

    def one(host):
        left = deadline - time.monotonic()
        if left < MIN_CALL_S:
            return AgentUnreachable(host, "the audit's report_timeout "
                                    'passed before it was asked')
        try:
            return call(host, timeout=left)
        except (AgentUnreachable, AgentError) as exc:
            return exc

    if not hosts:
        return {}
    workers = min(opts.report_concurrency, len(hosts),
                  _connection_pool_size(conf or CONF))
    with futures.ThreadPoolExecutor(max_workers=workers,
                                    thread_name_prefix='cams-agent') as pool:
        return dict(zip(hosts, pool.map(one, hosts)))


def _connection_pool_size(conf):
    """oslo.messaging's connections per transport (none registered: any).

    A call in flight holds one; beyond the pool, every call past it opens
    a connection of its own and logs a warning.
    """
    try:
        return conf.rpc_conn_pool_size
    except cfg.NoSuchOptError:
        return float('inf')


class UsesAgent:
    """Mixin: an ``agent`` client (the shared one); tests may set another.

    Strategies and actions are built by Watcher's loaders, which take no
    client, so the client cannot be a constructor argument.
    """

    _agent = None

    @property
    def agent(self):
        if self._agent is None:
            self._agent = shared_agent()
        return self._agent

    @agent.setter
    def agent(self, client):
        self._agent = client


class AgentAPI:
    VERSION = rpc_common.VERSION

    def __init__(self, conf=None, transport=None):
        self._conf = conf or CONF
        self._transport = transport or messaging.get_rpc_transport(self._conf)
        target = messaging.Target(exchange=rpc_common.EXCHANGE,
                                  topic=self._conf.watcher_cams_agent.topic,
                                  version=self.VERSION)
        self._client = messaging.get_rpc_client(self._transport, target)
        # (host, version) found older: warned once, not every audit.
        self._older = set()

    def _call(self, host, method, timeout, **kwargs):
        # A call without a change id asks 1.0, which every agent serves.
        if kwargs.get('change_id', 0) is None:
            del kwargs['change_id']
        if 'change_id' not in kwargs:
            return self._send(host, method, timeout, '1.0', kwargs)
        return self._send_or_older(host, method, timeout, ('1.1', kwargs),
                                   'without change id')

    def _send_or_older(self, host, method, timeout, newer, older_means):
        """Ask API ``newer`` = (version, kwargs); an older agent, 1.0.

        An agent not upgraded yet refuses the newer call before doing
        anything: the same call without the newer arguments follows
        (``older_means`` says what that costs, in the log).
        """
        version, kwargs = newer
        try:
            return self._send(host, method, timeout, version, kwargs)
        except AgentError as exc:
            if exc.exc_type != 'UnsupportedVersion':
                raise
        self._warn_older(host, version, method, older_means)
        arguments = {k: v for k, v in kwargs.items()
                     if k not in NEWER_ARGUMENTS}
        return self._send(host, method, timeout, '1.0', arguments)

    def _warn_older(self, host, version, method, older_means):
        if (host, version) not in self._older:
            self._older.add((host, version))
            LOG.warning('watcher-cams-agent on %s is older than API %s: %s '
                        '%s (said once per host)', host, version, method,
                        older_means)

    def _send(self, host, method, timeout, version, kwargs):
        cctxt = self._client.prepare(server=host, timeout=timeout,
                                     version=version)
        try:
            return cctxt.call({}, method, **kwargs)
        except messaging.MessagingTimeout as exc:
            raise AgentUnreachable(host, str(exc)) from exc
        except messaging.RemoteError as exc:
            raise AgentError(host, method, exc.exc_type, exc.value) from exc
        except messaging.UnsupportedVersion as exc:
            # It answered: an agent older than this client's request.
            raise AgentError(host, method, 'UnsupportedVersion',
                             str(exc).split('\n')[0]) from exc
        except messaging.MessagingException as exc:
            raise AgentUnreachable(host, str(exc)) from exc
        except cfg.Error:
            raise  # the client's own configuration, not the agent's fault
        except Exception as exc:
            # The server's own exception, re-raised by oslo.messaging: as
            # itself for builtins, renamed with '_Remote' for modules the
            # client may import.
            name = type(exc).__name__.removesuffix(REMOTE_SUFFIX)
            raise AgentError(host, method, name,
                             str(exc).split('\n')[0]) from exc

    def get_report(self, host, timeout=None, report_version=None):
        """The agent's newest report, compact (policy.compact) if it can.

        Version 2 from an agent of API 1.3 or later, version 1 from an
        older one: ``policy.compact.expand`` takes either.
        ``report_version=1`` asks for the whole version-1 report (with the
        host facts for operators) from any agent.
        """
        timeout = timeout or self._conf.watcher_cams_agent.report_timeout
        if report_version == 1:
            return self._send(host, 'get_report', timeout, '1.0', {})
        return self._send_or_older(
            host, 'get_report', timeout,
            ('1.3', {'report_version': compact.VERSION}),
            'answers report version 1')

    def get_overview(self, host, since=None):
        """The operators' view: see watcher_cams.agent.overview.

        ``since`` (seconds, the agent's clock) leaves out older timeline
        points. An agent older than 1.2 answers AgentError
        ``UnsupportedVersion``.
        """
        return self._send(host, 'get_overview',
                          self._conf.watcher_cams_agent.report_timeout, '1.2',
                          {'since': since})

    def set_balloon(self, host, instance, target_mb, reason='',
                    change_id=None):
        """Resize a guest's balloon; returns {previous_mb, actual_mb}."""
        return self._call(host, 'set_balloon',
                          self._conf.watcher_cams_agent.action_timeout,
                          instance=instance, target_mb=int(target_mb),
                          reason=reason, change_id=change_id)

    def set_balloons(self, host, targets, reason='', change_id=None):
        """Resize several guests of ``host`` in order, in one call.

        ``targets``: [{'instance', 'target_mb', 'reason'}], shrinks first.
        Answers {'changed': {uuid: {previous_mb, actual_mb}}, 'gone':
        [uuid]}.
        """
        return self._batch(
            host, 'set_balloons', len(targets),
            {'targets': targets, 'reason': reason, 'change_id': change_id},
            lambda: self._set_each(host, targets, reason, change_id))

    def _set_each(self, host, targets, reason, change_id):
        changed, gone = {}, []
        for target in targets:
            try:
                changed[target['instance']] = self.set_balloon(
                    host, target['instance'], target['target_mb'],
                    target.get('reason') or reason, change_id)
            except AgentError as exc:
                if exc.exc_type != 'UnknownInstance':
                    raise
                gone.append(target['instance'])
        return {'changed': changed, 'gone': gone}

    def revert_balloons(self, host, instances, change_id):
        """Undo change ``change_id`` of each guest: {uuid: answer}.

        Last listed first, in one call.
        """
        return self._batch(
            host, 'revert_balloons', len(instances),
            {'instances': instances, 'change_id': change_id},
            lambda: {uuid: self.revert(host, uuid, changes.BALLOON,
                                       change_id)
                     for uuid in reversed(instances)})

    def _batch(self, host, method, count, kwargs, each):
        """API 1.4 ``method`` for ``count`` guests; older agents: ``each()``.

        The call may take ``action_timeout`` per guest: the agent waits
        for each balloon in turn. An agent older than 1.4 gets one call per
        guest instead, with the same change id.
        """
        timeout = self._conf.watcher_cams_agent.action_timeout * max(1,
                                                                     count)
        try:
            return self._send(host, method, timeout, '1.4', kwargs)
        except AgentError as exc:
            if exc.exc_type != 'UnsupportedVersion':
                raise
        self._warn_older(host, '1.4', method, 'one call per guest')
        return each()

    def set_affinity(self, host, instance, cpus, reason='', change_id=None):
        """Pin all vCPUs and the emulator of a guest to ``cpus``."""
        return self._call(host, 'set_affinity',
                          self._conf.watcher_cams_agent.action_timeout,
                          instance=instance, cpus=[int(c) for c in cpus],
                          reason=reason, change_id=change_id)

    def revert(self, host, instance, kind, change_id=None):
        """Restore what the agent recorded before the last change.

        With ``change_id``: before that change, if it is the newest; the
        answer is ``{'not_applied': change_id}`` if it was never recorded.
        """
        if kind not in changes.KINDS:
            raise ValueError('kind must be one of %s' % (changes.KINDS,))
        return self._call(host, 'revert',
                          self._conf.watcher_cams_agent.action_timeout,
                          instance=instance, kind=kind, change_id=change_id)

    def get_state(self, host):
        """The agent's persisted targets and originals per instance."""
        return self._call(host, 'get_state',
                          self._conf.watcher_cams_agent.report_timeout)

    def plan(self, host, request, timeout=None):
        """The agent's plan of its host (policy.planning.request/answer).

        An agent older than 1.5 answers AgentError ``UnsupportedVersion``:
        the caller plans that host from its report instead.
        """
        return self._send(host, 'plan', timeout
                          or self._conf.watcher_cams_agent.report_timeout,
                          '1.5', {'request': request})

    def save_policy_state(self, host, states, timeout=None):
        """Persist per-instance policy state: {uuid: {key: state}}."""
        return self._call(host, 'save_policy_state', timeout
                          or self._conf.watcher_cams_agent.report_timeout,
                          states=states)
