"""A fake of the agent RPC boundary for unit tests.

The real client is tested over oslo.messaging in test_rpcapi and against
the real agent in the functional tests; here only its API is honoured.
"""

import json

from watcher_cams.policy import planning
from watcher_cams import rpcapi


class FakeAgent:
    def __init__(self, reports=(), down=(), state=None):
        self.reports = {r['host']: r for r in reports}
        self.down = set(down)
        self.calls = []
        self.saved = {}
        self.state = state or {}
        # The change id each change and revert named, in call order.
        self.change_ids = []
        # revert_balloons' answer per instance (default: reverted).
        self.reverts = {}

    def _check(self, host):
        if host in self.down:
            raise rpcapi.AgentUnreachable(host, 'timed out')

    def get_report(self, host, timeout=None):
        self.calls.append(('get_report', host))
        self._check(host)
        return self.reports[host]

    def save_policy_state(self, host, states, timeout=None):
        self.calls.append(('save_policy_state', host))
        self._check(host)
        self.saved.setdefault(host, {}).update(states)

    def get_state(self, host):
        self.calls.append(('get_state', host))
        self._check(host)
        return self.state

    def set_balloon(self, host, instance, target_mb, reason='',
                    change_id=None):
        self.calls.append(('set_balloon', host, instance, target_mb))
        self.change_ids.append(change_id)
        self._check(host)
        return {'previous_mb': 1, 'actual_mb': target_mb}

    def set_affinity(self, host, instance, cpus, reason='', change_id=None):
        self.calls.append(('set_affinity', host, instance, list(cpus)))
        self.change_ids.append(change_id)
        self._check(host)
        return {'previous': [], 'cpus': list(cpus)}

    def revert(self, host, instance, kind, change_id=None):
        self.calls.append(('revert', host, instance, kind))
        self.change_ids.append(change_id)
        self._check(host)
        return {'reverted': kind}

    def set_balloons(self, host, targets, reason='', change_id=None):
        self.calls.append(('set_balloons', host,
                           [(t['instance'], t['target_mb']) for t in targets]))
        self.change_ids.append(change_id)
        self._check(host)
        return {'changed': {t['instance']: {'previous_mb': 1,
                                            'actual_mb': t['target_mb']}
                            for t in targets}, 'gone': []}

    def revert_balloons(self, host, instances, change_id):
        self.calls.append(('revert_balloons', host, list(instances)))
        self.change_ids.append(change_id)
        self._check(host)
        return {uuid: self.reverts.get(uuid, {'actual_mb': 1})
                for uuid in instances}


class PlanningAgent(FakeAgent):
    """A FakeAgent of API 1.5: plans its host as the agent's manager does.

    ``older``: hosts whose agent predates 1.5 (UnsupportedVersion);
    ``answers``: {host: answer} given instead of the plan.
    """

    def __init__(self, reports=(), down=(), older=(), answers=None):
        super().__init__(reports, down)
        self.older = set(older)
        self.answers = answers or {}
        self.requests = {}

    def plan(self, host, request, timeout=None):
        self.calls.append(('plan', host))
        self._check(host)
        if host in self.older:
            raise rpcapi.AgentError(host, 'plan', 'UnsupportedVersion',
                                    'Endpoint does not support 1.5')
        request = json.loads(json.dumps(request))  # as over the wire
        self.requests[host] = request
        if host in self.answers:
            return self.answers[host]
        view, plan = planning.plan_report(self.reports[host], request)
        if plan.policy_state:
            self.saved.setdefault(host, {}).update(plan.policy_state)
        return json.loads(json.dumps(dict(planning.answer(
            planning.planned(view, plan)), age_s=0.0)))
