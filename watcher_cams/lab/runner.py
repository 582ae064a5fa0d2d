"""Run the real Watcher strategies on reports, without a cloud.

Builds Watcher's own compute model (ModelRoot with ComputeNode and Instance
elements) from agent reports, loads strategies through Watcher's strategy
loader (the entry points in setup.cfg), validates audit parameters with the
validator Watcher's API uses, and executes them as the decision engine
would. Used by ``watcher-cams-lab example``, the benchmark and the tests.
"""

from watcher.common import utils
from watcher.decision_engine.loading import default as loading
from watcher.decision_engine.model import element
from watcher.decision_engine.model import model_root

_PROJECT = '9f5ee6b2-94f2-4d1c-a9c4-6a2b5b1e9c3d'


def compute_model(reports, memory_ratio=1.0, vcpu_ratio=4.0):
    """A Watcher ModelRoot with one node per report, instances as guests."""
    root = model_root.ModelRoot()
    for i, rep in enumerate(reports):
        mem = rep['memory']
        node = element.ComputeNode(
            uuid='%08d-0000-4000-8000-000000000000' % i,
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

    def get_report(self, host):
        return self.reports[host]

    def save_policy_state(self, host, states):
        self.policy_state.setdefault(host, {}).update(states)
