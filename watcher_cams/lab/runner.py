"""Run the real Watcher strategies on reports, without a cloud.

Builds Watcher's own compute model (ModelRoot with ComputeNode and Instance
elements) from agent reports, loads strategies through Watcher's strategy
loader (the entry points in setup.cfg), validates audit parameters with the
validator Watcher's API uses, and executes them as the decision engine
would; carries out their actions as Watcher's applier does, through an
agent client (``LocalAgent`` wraps an agent in this process). Used by
``watcher-cams-lab example`` and ``guests``, the benchmark and the tests.
"""

import json
import uuid as uuidlib

from watcher.applier.loading import default as action_loading
from watcher.common import exception
from watcher.common import utils
from watcher.decision_engine.loading import default as loading
from watcher.decision_engine.model import element
from watcher.decision_engine.model import model_root

from watcher_cams import rpcapi

_PROJECT = '9f5ee6b2-94f2-4d1c-a9c4-6a2b5b1e9c3d'


def compute_model(reports, memory_ratio=1.0, vcpu_ratio=4.0, only=None):
    """A Watcher ModelRoot with one node per report, instances as guests.

    ``only``: the instance UUIDs in the audit scope (default: every guest).
    """
    root = model_root.ModelRoot()
    for rep in reports:
        mem = rep['memory']
        node = element.ComputeNode(
            # Named by its host: an instance's uuid cannot be the same
            # (one was, and Watcher's model took the instance for the node).
            uuid=str(uuidlib.uuid5(uuidlib.NAMESPACE_URL,
                                   'compute-node:' + rep['host'])),
            hostname=rep['host'], status='enabled', state='up',
            memory=mem['total_mb'],
            memory_mb_reserved=mem.get('reserved_mb', 0),
            disk=1000, disk_gb_reserved=0,
            vcpus=max(1, len(rep.get('topology', {}).get('shared_cpus', [])
                             ) or 2),
            vcpu_reserved=0, memory_ratio=memory_ratio,
            vcpu_ratio=vcpu_ratio, disk_ratio=1.0)
        root.add_node(node)
        for g in rep['guests']:
            if only is not None and g['uuid'] not in only:
                continue
            inst = element.Instance(
                uuid=g['uuid'], name=g.get('name', g['uuid']),
                state='active', memory=g['max_mb'], disk=1,
                vcpus=g.get('vcpus', 1), metadata={}, project_id=_PROJECT,
                locked=False, host=rep['host'],
                hypervisor_hostname=rep['host'], flavor_extra_specs={})
            root.add_instance(inst)
            root.map_instance(inst, node)
    return root


def load_strategy(name, parameters=None):
    """A strategy from its entry point, with validated audit parameters."""
    strategy = loading.DefaultStrategyLoader().load(name)
    params = dict(parameters or {})
    # The check and default filling Watcher's API applies to audits.
    utils.StrictDefaultValidatingDraft4Validator(
        strategy.get_schema()).validate(params)
    strategy.input_parameters.update(params)
    return strategy


def prepare(name, model, agent, parameters=None):
    """Strategy ``name`` loaded and given its model and agent client."""
    strategy = load_strategy(name, parameters)
    # What BaseStrategy.compute_model caches after asking Nova's collector.
    strategy._compute_model = model
    strategy.agent = agent
    return strategy


def run(name, model, agent, parameters=None):
    """Execute strategy ``name``; returns (strategy, solution)."""
    strategy = prepare(name, model, agent, parameters)
    return strategy, strategy.execute()


class ReportAgent:
    """In-process stand-in for the agents of hosts whose reports we hold.

    Answers get_report from the given reports and keeps saved policy state,
    so a lab run without services can execute strategies end to end.
    """

    def __init__(self, reports):
        self.reports = {r['host']: r for r in reports}
        self.policy_state = {}

    def get_report(self, host, timeout=None):
        return self.reports[host]

    def save_policy_state(self, host, states, timeout=None):
        self.policy_state.setdefault(host, {}).update(states)


class LocalAgent:
    """The agent RPC client's interface over an AgentManager in-process.

    For the real-guest lab: the strategies and actions talk to it exactly
    as to ``rpcapi.AgentAPI``. Answers go through JSON as they would over
    RPC, and the manager's errors become ``rpcapi.AgentError`` as the RPC
    client raises them.
    """

    def __init__(self, manager, host):
        self.manager = manager
        self.host = host

    def _call(self, host, method, **kwargs):
        if host != self.host:
            raise rpcapi.AgentUnreachable(host, 'no agent for this host here')
        try:
            answer = getattr(self.manager, method)(**kwargs)
        except Exception as exc:
            raise rpcapi.AgentError(host, method, type(exc).__name__,
                                    str(exc)) from exc
        return json.loads(json.dumps(answer))

    def get_report(self, host, timeout=None):
        return self._call(host, 'get_report')

    def get_state(self, host):
        return self._call(host, 'get_state')

    def set_balloon(self, host, instance, target_mb, reason='',
                    change_id=None):
        return self._call(host, 'set_balloon', instance=instance,
                          target_mb=int(target_mb), reason=reason,
                          change_id=change_id)

    def set_balloons(self, host, targets, reason='', change_id=None):
        return self._call(host, 'set_balloons', targets=targets,
                          reason=reason, change_id=change_id)

    def revert_balloons(self, host, instances, change_id):
        return self._call(host, 'revert_balloons', instances=instances,
                          change_id=change_id)

    def set_affinity(self, host, instance, cpus, reason='', change_id=None):
        return self._call(host, 'set_affinity', instance=instance,
                          cpus=[int(c) for c in cpus], reason=reason,
                          change_id=change_id)

    def revert(self, host, instance, kind, change_id=None):
        return self._call(host, 'revert', instance=instance, kind=kind,
                          change_id=change_id)

    def save_policy_state(self, host, states, timeout=None):
        return self._call(host, 'save_policy_state', states=states)

    def plan(self, host, request, timeout=None):
        # The lab runs no background collection: collect now, as
        # get_report does, and plan from that collection.
        if host == self.host:
            self.manager.collect()
        return self._call(host, 'plan', request=request)


def guest_changes(action):
    """The guests an action (a solution's or Watcher's) changes.

    One dict per guest with ``instance``, ``reason`` and ``current_mb`` and
    ``target_mb`` or ``cpus``: a cams_host_balloon carries a host's
    targets, a cams_host_pin its pins, the other actions one guest's
    change.
    """
    params = action.get('input_parameters') or {}
    for key in ('targets', 'pins'):  # cams_host_balloon, cams_host_pin
        if key in params:
            return [dict(t, reason=t.get('reason') or params.get('reason',
                                                                 ''))
                    for t in params[key]]
    return [{'instance': params.get('resource_id'),
             'current_mb': params.get('current_mb'),
             'target_mb': params.get('target_mb'),
             'cpus': params.get('cpus'),
             'reason': params.get('reason', '')}]


def apply_actions(actions, agent):
    """Carry out a solution's actions as Watcher's applier does.

    Each action is loaded by its entry point, validated, checked
    (pre_condition) and executed in order; when one fails, the ones already
    done are reverted, newest first. Returns one (action, outcome) pair per
    action, outcome one of SUCCEEDED, SKIPPED, FAILED, REVERTED, CANCELLED.
    """
    loader = action_loading.DefaultActionLoader()
    done, outcomes = [], []
    for i, spec in enumerate(actions):
        action = loader.load(spec['action_type'])
        action.input_parameters = dict(spec['input_parameters'])
        action.agent = agent
        action.validate_parameters()
        try:
            action.pre_condition()
        except exception.ActionSkipped:
            outcomes.append((spec, 'SKIPPED'))
            continue
        if action.execute():
            done.append((len(outcomes), action))
            outcomes.append((spec, 'SUCCEEDED'))
            continue
        outcomes.append((spec, 'FAILED'))
        for index, earlier in reversed(done):
            earlier.revert()
            outcomes[index] = (outcomes[index][0], 'REVERTED')
        outcomes += [(rest, 'CANCELLED') for rest in actions[i + 1:]]
        break
    return outcomes
