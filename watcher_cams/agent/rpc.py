"""Server side of the agent RPC API (client: watcher_cams.rpcapi).

The exchange and the version history are in :mod:`watcher_cams.rpc_common`.
Arguments are checked here before
the manager sees them; refusals are expected exceptions (one log line, no
traceback) and reach the client as rpcapi.AgentError with the exception's
class name.
"""

import functools

from oslo_log import log
import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher

from watcher_cams.agent import controllers
from watcher_cams import changes
from watcher_cams.policy import compact
from watcher_cams import rpc_common

LOG = log.getLogger(__name__)
EXPECTED = (controllers.Refused, controllers.ChangeFailed,
            controllers.UnknownInstance, controllers.NoCollection)


def _logged(method):
    """Log a refused or failed request once, then let the client see it."""
    @functools.wraps(method)
    @messaging.expected_exceptions(*EXPECTED)
    def wrapper(self, ctxt, **kwargs):
        try:
            return method(self, ctxt, **kwargs)
        except EXPECTED as exc:
            LOG.warning('%s(%s) not done: %s', method.__name__,
                        kwargs.get('instance', ''), exc)
            raise
    return wrapper


def _instance(value):
    if not isinstance(value, str) or not 0 < len(value) <= 64:
        raise controllers.Refused('instance must be a uuid string')
    return value


def _change_id(value):
    if value is not None and (not isinstance(value, str)
                              or not 0 < len(value) <= 64):
        raise controllers.Refused('change_id must be a short string')
    return value


def _targets(value):
    """set_balloons' targets, checked: [{instance, target_mb, reason}]."""
    if not isinstance(value, list) or not 0 < len(value) <= \
            rpc_common.MAX_BATCH:
        raise controllers.Refused('targets must be a list of 1 to %d '
                                  'changes' % rpc_common.MAX_BATCH)
    checked = []
    for target in value:
        if not isinstance(target, dict) or \
                type(target.get('target_mb')) is not int:
            raise controllers.Refused('each target needs an integer '
                                      'target_mb')
        checked.append({'instance': _instance(target.get('instance')),
                        'target_mb': target['target_mb'],
                        'reason': str(target.get('reason') or '')[
                            :rpc_common.MAX_BATCH_REASON]})
    _unique([t['instance'] for t in checked])
    return checked


def _unique(instances):
    if len(set(instances)) != len(instances):
        raise controllers.Refused('an instance is listed twice')
    return instances


class AgentEndpoint:
    target = messaging.Target(version=rpc_common.VERSION)

    def __init__(self, manager):
        self.manager = manager

    @_logged
    def get_report(self, ctxt, report_version=1):
        report = self.manager.last_report()
        if report_version == compact.VERSION:
            return compact.compact(report)
        if report_version != 1:
            raise controllers.Refused('report_version must be 1 or %d'
                                      % compact.VERSION)
        return report

    @_logged
    def get_overview(self, ctxt, since=None):
        if since is not None and (type(since) not in (int, float)
                                  or since != since):
            raise controllers.Refused('since must be a time in seconds')
        return self.manager.get_overview(since)

    @_logged
    def set_balloon(self, ctxt, instance, target_mb, reason='',
                    change_id=None):
        if type(target_mb) is not int:
            raise controllers.Refused('target_mb must be an integer')
        return self.manager.set_balloon(_instance(instance), target_mb,
                                        str(reason)[:255],
                                        _change_id(change_id))

    @_logged
    def set_balloons(self, ctxt, targets, reason='', change_id=None):
        return self.manager.set_balloons(_targets(targets),
                                         str(reason)[:255],
                                         _change_id(change_id))

    @_logged
    def revert_balloons(self, ctxt, instances, change_id):
        if change_id is None or not isinstance(instances, list) or not \
                0 < len(instances) <= rpc_common.MAX_BATCH:
            raise controllers.Refused('revert_balloons needs a change_id '
                                      'and 1 to %d instances'
                                      % rpc_common.MAX_BATCH)
        return self.manager.revert_balloons(
            _unique([_instance(i) for i in instances]),
            _change_id(change_id))

    @_logged
    def set_affinity(self, ctxt, instance, cpus, reason='', change_id=None):
        return self.manager.set_affinity(_instance(instance), cpus,
                                         str(reason)[:255],
                                         _change_id(change_id))

    @_logged
    def revert(self, ctxt, instance, kind, change_id=None):
        if kind not in changes.KINDS:
            raise controllers.Refused('kind must be one of %s'
                                      % (changes.KINDS,))
        return self.manager.revert(_instance(instance), kind,
                                   _change_id(change_id))

    @_logged
    def get_state(self, ctxt):
        return self.manager.get_state()

    @_logged
    def plan(self, ctxt, request):
        return self.manager.plan(request)

    @_logged
    def save_policy_state(self, ctxt, states):
        return self.manager.save_policy_state(states)


def get_server(conf, manager, transport=None):
    """An oslo.messaging RPC server for ``manager`` (not started)."""
    transport = transport or messaging.get_rpc_transport(conf)
    target = messaging.Target(exchange=rpc_common.EXCHANGE,
                              topic=conf.watcher_cams_agent.topic,
                              server=conf.watcher_cams_compute.host)
    return messaging.get_rpc_server(
        transport, target, [AgentEndpoint(manager)], executor='threading',
        access_policy=dispatcher.DefaultRPCAccessPolicy)
