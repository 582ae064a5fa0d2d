"""What every watcher-cams strategy shares: hosts in, actions out.

A strategy reads Watcher's compute model (nodes, instances, flavors), asks
each node's agent for its report, turns both into policy views, runs one
policy per host and adds the resulting actions with efficacy indicators.
Subclasses only say which policy runs and with which parameters.
"""

import abc
import dataclasses
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
from watcher_cams.policy import compact
from watcher_cams.policy import guards
from watcher_cams.policy import report
from watcher_cams import rpc_common
from watcher_cams import rpcapi

LOG = log.getLogger(__name__)

BALLOON_ACTION = 'cams_host_balloon'
PIN_ACTION = 'cams_pin_vcpus'


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

    Agents of earlier releases give no ``age_s``: they collected inside
    the call, so their reports are new.
    """
    age = raw.get('age_s') if isinstance(raw, dict) else None
    limit = cams_conf.CONF.watcher_cams_agent.report_max_age
    if type(age) in (int, float) and not age <= limit:
        return StaleReport('report of %s is %.0f s old (report_max_age %d '
                           's): its collection has stalled'
                           % (raw.get('host'), age, limit))
    return raw


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


class CamsStrategy(rpcapi.UsesAgent, base.BaseStrategy,
                   metaclass=abc.ABCMeta):
    """Base of the watcher-cams strategies."""

    GOAL = None
    NAME = None
    DISPLAY_NAME = None

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self.solution = CamsSolution(goal=self.goal, strategy=self)
        self.hosts = []
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

    @abc.abstractmethod
    def plan_host(self, host, node, params, cfg):
        """Run the policy on one HostView (of Watcher ``node``): a Plan."""

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
        params = self.policy_params()
        cfg = self.guard_config
        for host, node in self.collect_hosts(cfg):
            plan = self.plan_host(host, node, params, cfg)
            self.plans.append(plan)
            self.add_plan_actions(plan, node)
        self.save_policy_states()

    def save_policy_states(self):
        """Persist what the policy keeps per guest across cycles.

        The state lives with the agent, so it survives decision-engine
        restarts and follows the host's guests. It is saved at planning
        time: a policy's state records what it measured, which holds
        whether or not the plan is applied. All hosts at once, after
        planning (rpcapi.save_policy_states), not a round trip per host.
        """
        states = {p.host: p.policy_state for p in self.plans
                  if p.policy_state}
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
        audited = sum(1 for h in self.hosts for g in h.guests if g.has_data)
        return {'instances_changed': len(changed),
                'audited_instances': audited,
                'hosts_without_report': self.hosts_without_report}

    # Hosts: compute model + agent reports -> policy views.

    def collect_hosts(self, cfg):
        """Yield (HostView, node) for every usable host in the audit scope.

        The reports of all of them are asked for at once
        (rpcapi.get_reports): the audit waits one report_timeout at most,
        however many agents are down.
        """
        scope = self._nodes_in_scope()
        reports = {h: _stale_or(raw) for h, raw in rpcapi.get_reports(
            self.agent, sorted(scope)).items()}
        missing = {h: exc for h, exc in reports.items()
                   if isinstance(exc, Exception)}
        self.hosts_without_report = len(missing)
        if missing:
            LOG.warning('%s: %d of %d hosts left out of this audit, no '
                        'usable report: %s', self.NAME, len(missing),
                        len(reports), rpcapi.some_errors(missing))
        for hostname, raw in sorted(reports.items()):
            if isinstance(raw, Exception):
                continue
            node, instances = scope[hostname]
            host = self._host_view(node, instances, raw)
            if host is not None:
                self.hosts.append(host)
                yield host, node

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

    def _host_view(self, node, instances, raw):
        try:
            host = report.parse_host(compact.expand(raw))
        except report.ReportError as exc:
            LOG.error('%s: report of %s rejected, host left out: %s',
                      self.NAME, node.hostname, exc)
            return None
        if host.name != node.hostname:
            LOG.error('%s: agent asked for %s answered as %s; host left out',
                      self.NAME, node.hostname, host.name)
            return None
        guests = tuple(self._reconcile(g, instances.get(g.uuid))
                       for g in host.guests)
        for g in guests:
            if g.problem:
                LOG.info('%s: %s on %s left alone: %s', self.NAME, g.uuid,
                         host.name, g.problem)
        return dataclasses.replace(
            host, guests=guests,
            reserved_mb=max(host.reserved_mb, node.memory_mb_reserved or 0))

    @staticmethod
    def _reconcile(guest, instance):
        """Apply what the compute model knows about an instance."""
        if instance is None:
            return dataclasses.replace(
                guest, problem=guest.problem or 'not in the audit scope')
        if (instance.watcher_exclude
                or instance.state != element.InstanceState.ACTIVE.value):
            return dataclasses.replace(
                guest, problem=guest.problem or 'excluded or not active '
                '(%s)' % instance.state)
        changes = {}
        if instance.memory and instance.memory < guest.max_mb:
            changes['max_mb'] = instance.memory
        specs = instance.flavor_extra_specs or {}
        if specs.get('hw:cpu_policy') == 'dedicated':
            changes['dedicated_cpus'] = True
        return dataclasses.replace(guest, **changes) if changes else guest

    # Plans -> Watcher actions.

    def add_plan_actions(self, plan, node):
        """One cams_host_balloon per host (``node``), pins one per guest.

        A plan of one action per guest would not stay reviewable or
        appliable at 5,000 hosts; a host with more than MAX_BATCH moves
        gets one action per MAX_BATCH of them, in order.
        """
        moves = plan.ordered_moves()
        batch = rpc_common.MAX_BATCH
        for start in range(0, len(moves), batch):
            part = moves[start:start + batch]
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
        for pin in plan.pins:
            self.solution.add_action(
                action_type=PIN_ACTION, resource_id=pin.instance,
                input_parameters={'host': pin.host, 'cpus': list(pin.cpus),
                                  'llc': pin.llc,
                                  'reason': pin.reason[:255]})


class MemoryStrategy(CamsStrategy, metaclass=abc.ABCMeta):
    """A strategy for the memory_cache_efficiency goal."""

    GOAL = 'memory_cache_efficiency'

    def indicators(self):
        result = super().indicators()
        result.update(
            memory_moved_mb=sum(p.memory_moved_mb for p in self.plans),
            predicted_disk_reads_avoided=round(
                sum(p.predicted_reads_avoided_mb_s for p in self.plans), 3),
            ksm_memory_returned_mb=sum(p.ksm_returned_mb
                                       for p in self.plans))
        return result
