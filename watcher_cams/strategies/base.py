"""What every watcher-cams strategy shares: hosts in, actions out.

A strategy reads Watcher's compute model (nodes, instances, flavors),
asks each node's agent to plan its host with one policy
(:mod:`watcher_cams.policy.planning`; for an agent too old to plan, gets
its report and plans here with the same code) and adds the resulting
actions with efficacy indicators. Subclasses only say which policy runs
and with which parameters.
"""

import abc
import contextlib
import gc
import json
import logging

from oslo_log import log
from watcher.applier.actions import base as base_action
from watcher.common import exception
from watcher.decision_engine.model import element
from watcher.decision_engine.solution import default as default_solution
from watcher.decision_engine.strategy.strategies import base

from watcher_cams import conf as cams_conf
from watcher_cams.conf import guards as guards_conf
from watcher_cams.policy import guards
from watcher_cams.policy import planning
from watcher_cams.policy import report
from watcher_cams import rpc_common
from watcher_cams import rpcapi

LOG = log.getLogger(__name__)

BALLOON_ACTION = 'cams_host_balloon'
PIN_ACTION = 'cams_host_pin'


def _batches(items):
    """``items`` in consecutive lists of at most rpc_common.MAX_BATCH."""
    size = rpc_common.MAX_BATCH
    starts = range(0, len(items), size)
    return [items[start:start + size] for start in starts]


def _batch_reason(moves):
    """One line for a host action: how many guests, which way, how much."""
    shrinks = sum(1 for m in moves if m.delta_mb < 0)
    moved = sum(abs(m.delta_mb) for m in moves)
    return ('%d shrinks, %d grows, %d MiB moved'
            % (shrinks, len(moves) - shrinks, moved))


class InvalidAuditParameter(exception.Invalid):
    msg_fmt = 'Invalid audit parameter %(name)s: %(reason)s'


def check_params(builder, **values):
    """Build a policy parameter dataclass; bad values become clear errors."""
    try:
        return builder(**values)
    except (TypeError, ValueError) as exc:
        raise InvalidAuditParameter(name=', '.join(sorted(values)),
                                    reason=str(exc))


class CamsSolution(default_solution.DefaultSolution):
    """Watcher's DefaultSolution, with duplicate checks in O(1).

    DefaultSolution drops duplicate actions by scanning its list, which is
    quadratic: about 6 s for the 10,000 actions of a 500-node cloud.
    """

    def __init__(self, goal, strategy):
        super().__init__(goal, strategy)
        self._seen = set()

    def add_action(self, action_type, input_parameters=None,
                   resource_id=None):
        params = dict(input_parameters or {})
        if base_action.BaseAction.RESOURCE_ID in params:
            raise exception.ReservedWord(
                name=base_action.BaseAction.RESOURCE_ID)
        if resource_id is not None:
            params[base_action.BaseAction.RESOURCE_ID] = resource_id
        action = {'action_type': action_type, 'input_parameters': params}
        key = json.dumps(action, sort_keys=True)
        if key in self._seen:
            LOG.warning('Duplicate action %s dropped', key)
            return
        self._seen.add(key)
        self._actions.append(action)


class StaleReport(Exception):
    """An agent answered with a collection older than report_max_age."""


def _stale_or(raw):
    """``raw``, or StaleReport when the agent's collection has stalled.

    ``raw`` may be the agent's error already, which stays as it is.

    Agents of earlier releases give no ``age_s``: they collected inside
    the call, so their reports are new.
    """
    if isinstance(raw, Exception):  # the agent's error, passed on
        return raw
    age = raw.get('age_s') if isinstance(raw, dict) else None
    limit = cams_conf.CONF.watcher_cams_agent.report_max_age
    if type(age) in (int, float) and not age <= limit:
        return StaleReport('report of %s is %.0f s old (report_max_age %d '
                           's): its collection has stalled'
                           % (raw.get('host'), age, limit))
    return raw


def _instance_scope(instance):
    """planning.instance_scope of a Watcher model instance."""
    specs = instance.flavor_extra_specs or {}
    return planning.instance_scope(
        instance.memory or None,
        not instance.watcher_exclude
        and instance.state == element.InstanceState.ACTIVE.value,
        specs.get('hw:cpu_policy') == 'dedicated')


def _planned_answer(raw, host, instances):
    """PlannedHost of an agent's plan answer, or why it is unusable."""
    raw = _stale_or(raw)
    if isinstance(raw, Exception):
        return raw
    try:
        return planning.parse_answer(raw, host, instances)
    except planning.PlanError as exc:
        return planning.PlanError('plan of %s rejected: %s' % (host, exc))


@contextlib.contextmanager
def _collecting_new_objects_only():
    """While planning here, the cyclic collector skips what was alive before.

    Planning hundreds of hosts in the decision engine allocates hundreds of
    thousands of short-lived objects, and each time the collector's oldest
    generation came due it walked the engine's whole heap too (Watcher's
    compute model and the reports: 0.25 s of bench-plan's 2.0 s utility
    run on 500 hosts). gc.freeze moves the objects alive now to a
    generation no collection visits; gc.unfreeze gives them back. What
    planning leaves in cycles is collected as before.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _planned_report(raw, host, request):
    """PlannedHost of ``host``'s report, planned here, or why not."""
    raw = _stale_or(raw)
    if isinstance(raw, Exception):
        return raw
    try:
        view, plan = planning.plan_report(raw, request)
    except (planning.PlanError, report.ReportError) as exc:
        return planning.PlanError('report of %s rejected: %s' % (host, exc))
    if view.name != host:
        return planning.PlanError('agent asked for %s answered as %s'
                                  % (host, view.name))
    return planning.planned(view, plan)


class InvalidGuardConfig(exception.Invalid):
    msg_fmt = 'Invalid [watcher_cams_guards] configuration: %(reason)s'


def value_properties(what, defaults):
    """Schema of the utility-mode parameters shared by memory strategies.

    ``defaults`` is the policy's parameter dataclass instance.
    """
    return {
        'granule_mb': {'type': 'integer', 'minimum': 1,
                       'default': defaults.granule_mb,
                       'description': 'utility mode: unit of memory %s '
                                      '(MiB).' % what},
        'min_value': {'type': 'number', 'minimum': 0,
                      'default': defaults.min_value,
                      'description': 'utility mode: least disk reads saved '
                                     '(MiB/s per GiB) worth giving memory.'},
    }


def reserve_properties():
    """Schema of the host reserve every memory strategy takes."""
    return {
        'host_reserved_mb': {
            'type': 'integer', 'minimum': 0, 'default': 0,
            'description': 'MiB of each host never promised to its '
                           'guests, where more than Nova\'s '
                           'reserved_host_memory_mb and the agent\'s: '
                           'room kept for new servers, or a benchmark\'s '
                           'equal budget.'},
    }


class CamsStrategy(rpcapi.UsesAgent, base.BaseStrategy,
                   metaclass=abc.ABCMeta):
    """Base of the watcher-cams strategies."""

    GOAL = None
    NAME = None
    DISPLAY_NAME = None

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self.solution = CamsSolution(goal=self.goal, strategy=self)
        self.planned = []  # planning.PlannedHost of each host planned
        self.plans = []
        self.hosts_without_report = 0

    @classmethod
    def get_name(cls):
        return cls.NAME

    @classmethod
    def get_display_name(cls):
        return cls.DISPLAY_NAME

    @classmethod
    def get_translatable_display_name(cls):
        return cls.DISPLAY_NAME

    @classmethod
    def get_goal_name(cls):
        return cls.GOAL

    @classmethod
    def get_config_opts(cls):
        # No Watcher datasource: the agents' reports are the metrics path.
        return []

    @property
    def guard_config(self):
        try:
            return guards_conf.guard_config(cams_conf.CONF)
        except guards.GuardError as exc:
            raise InvalidGuardConfig(reason=str(exc))

    def param(self, name):
        """An audit parameter, with the schema default when absent."""
        if name in self.input_parameters:
            return self.input_parameters[name]
        return self.get_schema()['properties'][name].get('default')

    @abc.abstractmethod
    def policy_params(self):
        """The policy's parameter dataclass, from the audit parameters."""

    def host_params(self, node, params):
        """The parameters to plan Watcher ``node`` with (a PLANNERS one).

        ``params`` is :meth:`policy_params`; a strategy whose parameters
        depend on the node overrides this.
        """
        return params

    def pre_execute(self):
        # BaseStrategy._pre_execute, except that the model is rendered for
        # the debug log only when debug logging is on (it costs seconds on a
        # large cloud).
        LOG.info('Initializing %s', self.get_display_name())
        if not self.compute_model:
            raise exception.ClusterStateNotDefined()
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug(self.compute_model.to_string())

    def do_execute(self, audit=None):
        """Plan every host in scope, on its agent where it can.

        Every host's plan depends on that host alone, so each agent plans
        its own (API 1.5, :mod:`watcher_cams.policy.planning`), all at
        once; hosts whose agent is older, and in-process stand-ins
        without ``plan``, are planned here from their reports by the same
        code. Hosts without a usable plan are left alone, counted and
        logged once.
        """
        scope = self._nodes_in_scope()
        requests = self.plan_requests(scope)
        found = self._plan_on_agents(requests)
        found.update(self._plan_from_reports(
            [h for h in requests if h not in found], requests))
        self._take(found, scope)

    def plan_requests(self, scope=None):
        """{host: planning.request} of ``scope`` (:meth:`_nodes_in_scope`).

        Refuses bad audit parameters or guard options before any RPC.
        Without ``scope``, of the nodes in the audit's scope now.
        """
        if scope is None:
            scope = self._nodes_in_scope()
        params = self.policy_params()
        cfg = self.guard_config
        return {
            name: planning.request(
                self.host_params(node, params), cfg,
                {uuid: _instance_scope(i) for uuid, i in instances.items()},
                self.reserved_mb(node))
            for name, (node, instances) in scope.items()}

    def reserved_mb(self, node):
        """MiB of Watcher ``node``'s memory never promised to its guests."""
        return node.memory_mb_reserved

    def _plan_on_agents(self, requests):
        """{host: PlannedHost or its error}; older agents left out."""
        if not hasattr(self.agent, 'plan'):
            return {}
        found = {}
        for host, raw in rpcapi.plan_hosts(self.agent, requests).items():
            if isinstance(raw, rpcapi.AgentError) and \
                    raw.exc_type == 'UnsupportedVersion':
                continue
            found[host] = _planned_answer(
                raw, host, requests[host]['instances'])
        return found

    def _plan_from_reports(self, hosts, requests):
        """{host: PlannedHost or its error}, planned in this process.

        For agents older than API 1.5: their reports are asked for at
        once, and the policy states saved back all at once.
        """
        if not hosts:
            return {}
        found = {}
        reports = rpcapi.get_reports(self.agent, hosts)
        with _collecting_new_objects_only():
            for host, raw in reports.items():
                found[host] = _planned_report(raw, host, requests[host])
        self.save_policy_states(
            {h: p.plan.policy_state for h, p in found.items()
             if isinstance(p, planning.PlannedHost) and p.plan.policy_state})
        return found

    def _take(self, found, scope):
        """Actions of every host's PlannedHost; the others counted, logged."""
        missing = {h: exc for h, exc in found.items()
                   if isinstance(exc, Exception)}
        self.hosts_without_report = len(missing)
        if missing:
            LOG.warning('%s: %d of %d hosts left out of this audit, no '
                        'usable plan or report: %s', self.NAME, len(missing),
                        len(found), rpcapi.some_errors(missing))
        for host, done in sorted(found.items()):
            if host not in missing:
                self.planned.append(done)
                self.plans.append(done.plan)
                self.add_plan_actions(done.plan, scope[host][0])

    def save_policy_states(self, states):
        """Persist what the policy keeps per guest across cycles.

        The state lives with the agent, so it survives decision-engine
        restarts and follows the host's guests. It is saved at planning
        time: a policy's state records what it measured, which holds
        whether or not the plan is applied. All hosts at once, after
        planning (rpcapi.save_policy_states), not a round trip per host;
        an agent that plans saves its own.
        """
        failed = {h: exc for h, exc in rpcapi.save_policy_states(
            self.agent, states).items() if exc is not None}
        if failed:
            LOG.warning('%s: policy state of %d of %d hosts not saved; the '
                        'next cycle plans them without it: %s', self.NAME,
                        len(failed), len(states), rpcapi.some_errors(failed))

    def post_execute(self):
        self.solution.set_efficacy_indicators(**self.indicators())

    def indicators(self):
        changed = {m.instance for p in self.plans for m in p.moves}
        changed |= {c.instance for p in self.plans for c in p.pins}
        audited = sum(p.audited_instances for p in self.planned)
        return {'instances_changed': len(changed),
                'audited_instances': audited,
                'hosts_without_report': self.hosts_without_report}

    # Hosts: the compute model's nodes in scope.

    def _nodes_in_scope(self):
        """{hostname: (node, {uuid: instance})}: nodes up, with instances."""
        model = self.compute_model
        scope = {}
        for node in model.get_all_compute_nodes().values():
            if (node.status != element.ServiceState.ENABLED.value
                    or node.state != element.ServiceState.ONLINE.value):
                LOG.info('%s: node %s is %s/%s, skipped', self.NAME,
                         node.hostname, node.status, node.state)
                continue
            instances = {i.uuid: i for i in model.get_node_instances(node)}
            if instances:
                scope[node.hostname] = (node, instances)
        return scope

    # Plans -> Watcher actions.

    def add_plan_actions(self, plan, node):
        """One cams_host_balloon and one cams_host_pin per host (``node``).

        A plan of one action per guest would not stay reviewable or
        appliable at 5,000 hosts; a host with more than MAX_BATCH moves
        (or pins) gets one action per MAX_BATCH of them, in order.
        """
        moves = plan.ordered_moves()
        for part in _batches(moves):
            self.solution.add_action(
                action_type=BALLOON_ACTION, resource_id=node.uuid,
                input_parameters={
                    'host': plan.host, 'reason': _batch_reason(part),
                    'targets': [{'instance': m.instance,
                                 'target_mb': m.target_mb,
                                 'current_mb': m.current_mb,
                                 'reason': m.reason[
                                     :rpc_common.MAX_BATCH_REASON]}
                                for m in part]})
        for part in _batches(plan.pins):
            self.solution.add_action(
                action_type=PIN_ACTION, resource_id=node.uuid,
                input_parameters={
                    'host': plan.host,
                    'reason': '%d instances pinned to LLCs %s' % (
                        len(part), ', '.join(sorted({p.llc for p in part}))
                    )[:255],
                    'pins': [{'instance': p.instance, 'cpus': list(p.cpus),
                              'llc': p.llc, 'reason': p.reason[:255]}
                             for p in part]})


class MemoryStrategy(CamsStrategy, metaclass=abc.ABCMeta):
    """A strategy for the memory_cache_efficiency goal."""

    GOAL = 'memory_cache_efficiency'

    def reserved_mb(self, node):
        # Memory no guest is promised: utility hands out the rest.
        return max(node.memory_mb_reserved or 0,
                   self.param('host_reserved_mb'))

    def indicators(self):
        result = super().indicators()
        result.update(
            memory_moved_mb=sum(p.memory_moved_mb for p in self.plans),
            predicted_disk_reads_avoided=round(
                sum(p.predicted_reads_avoided_mb_s for p in self.plans), 3),
            ksm_memory_returned_mb=sum(p.ksm_returned_mb
                                       for p in self.plans))
        return result
