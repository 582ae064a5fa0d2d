"""The plan request and answer between the decision engine and an agent."""

import dataclasses
import json

import testtools

from watcher_cams.lab import bench
from watcher_cams.policy import affinity
from watcher_cams.policy import guards
from watcher_cams.policy import host_cache
from watcher_cams.policy import planning
from watcher_cams.policy import utility


def scope_of(report, **changes):
    instances = {g['uuid']: planning.instance_scope(g['max_mb'], True,
                                                    False)
                 for g in report['guests']}
    instances.update(changes)
    return instances


def wire(value):
    return json.loads(json.dumps(value))


class TestPlanning(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.report = bench.host_report(5, 2, 16)
        self.host = self.report['host']

    def request(self, params, **changes):
        return wire(planning.request(params, guards.GuardConfig(),
                                     scope_of(self.report, **changes), 64))

    def test_an_answer_says_what_the_plan_says(self):
        for params in (utility.UtilityParams(), affinity.AffinityParams(
                cpu_allocation_ratio=1.0)):
            view, plan = planning.plan_report(self.report,
                                              self.request(params))
            self.assertTrue(plan.moves or plan.pins)
            done = planning.parse_answer(
                wire(planning.answer(planning.planned(view, plan))),
                self.host, scope_of(self.report))
            for field in ('moves', 'pins', 'predicted_reads_avoided_mb_s',
                          'ksm_returned_mb', 'sharing_total_pages',
                          'sharing_kept_pages', 'notes'):
                self.assertEqual(getattr(plan, field),
                                 getattr(done.plan, field), field)
            # The policy state stays with the agent that planned.
            self.assertEqual(planning.planned(view, dataclasses.replace(
                plan, policy_state={})), done)

    def test_the_request_scope_and_reserve_reach_the_host_view(self):
        first, second = (g['uuid'] for g in self.report['guests'][:2])
        request = self.request(
            utility.UtilityParams(),
            **{first: planning.instance_scope(1024, True, True),
               second: planning.instance_scope(None, False, False)})
        view, _ = planning.plan_report(self.report, request)
        self.assertEqual((1024, True), (view.guest(first).max_mb,
                                        view.guest(first).dedicated_cpus))
        self.assertIn('not active', view.guest(second).problem)
        self.assertGreaterEqual(view.reserved_mb, 64)
        del request['instances'][first]
        view, _ = planning.plan_report(self.report, request)
        self.assertIn('not in the audit scope', view.guest(first).problem)

    def test_bad_requests_and_answers_are_plan_errors(self):
        good = self.request(utility.UtilityParams())
        for bad in ({}, dict(good, planner='x'), dict(good, params=[]),
                    dict(good, params={'granule_mb': 'x', 'nope': 1}),
                    dict(good, guards={'max_step_mb': 1,
                                       'min_change_mb': 2}),
                    dict(good, instances={'u': 5}),
                    dict(good, reserved_mb=1.5)):
            self.assertRaises(planning.PlanError, planning.checked_request,
                              bad)
        scope = scope_of(self.report)
        uuid = next(iter(scope))
        for bad in ([], {'host': 'other'},
                    {'host': self.host, 'moves': [['nope', 1, 2, 'r']]},
                    {'host': self.host, 'moves': [[uuid, 1, 2]]},
                    {'host': self.host, 'moves': [[uuid, 1, -2, 'r']]},
                    {'host': self.host, 'pins': [[uuid, 'x', 'L3', 'r']]},
                    {'host': self.host, 'host_caches': [
                        [uuid, 'n', ['vda'], 60.0, 1.0, 1.0, 2.0]]}):
            self.assertRaises(planning.PlanError, planning.parse_answer,
                              bad, self.host, scope)

    def test_host_caches_cross_for_the_lfu_check(self):
        svc = host_cache.HostCacheService(('vda',), 60.0, 600.0, 500.0,
                                          1 / 6.0)
        done = planning.PlannedHost(planning.model.Plan(self.host), 3,
                                    (('u1', 'vm-1', svc),))
        back = planning.parse_answer(wire(planning.answer(done)),
                                     self.host, {})
        self.assertEqual(done, back)
        self.assertTrue(host_cache.lfu_candidate(back.host_caches[0][2],
                                                 0.5))

    def test_every_planner_takes_its_own_parameters(self):
        for name, (kind, _) in planning.PLANNERS.items():
            self.assertEqual(name, planning.planner_name(kind()))
        self.assertRaises(planning.PlanError, planning.planner_name,
                          guards.GuardConfig())
