import copy
import gc
from unittest import mock

import jsonschema

from watcher.common import exception
from watcher.common import utils
from watcher.decision_engine.strategy.selection import default as selection
from watcher.decision_engine.strategy import strategies
from watcher.tests.unit import base

from tests.unit.glue import fakes
from watcher_cams.lab import bench
from watcher_cams.lab import example
from watcher_cams.lab import runner
from watcher_cams.strategies import base as cams_base


class StrategyTestCase(base.TestCase):
    goal = 'memory_cache_efficiency'

    def setUp(self):
        super().setUp()
        self.example = example.PaperExample()
        self.reports = [self.example.report()]
        p_model = mock.patch.object(strategies.BaseStrategy, 'compute_model',
                                    new_callable=mock.PropertyMock)
        self.m_model = p_model.start()
        self.addCleanup(p_model.stop)
        p_scope = mock.patch.object(strategies.BaseStrategy, 'audit_scope',
                                    new_callable=mock.PropertyMock)
        p_scope.start().return_value = mock.Mock()
        self.addCleanup(p_scope.stop)

    def strategy(self, name, params=None, reports=None, agent=None):
        reports = self.reports if reports is None else reports
        self.m_model.return_value = runner.compute_model(reports)
        selector = selection.DefaultStrategySelector(
            goal_name=self.goal, strategy_name=name)
        s = selector.select()
        params = dict(params or {})
        utils.StrictDefaultValidatingDraft4Validator(
            s.get_schema()).validate(params)
        s.input_parameters.update(params)
        s.agent = agent or fakes.FakeAgent(reports)
        return s

    def targets(self, solution):
        return {c['instance']: c['target_mb'] for a in solution.actions
                if a['action_type'] != 'nop'
                for c in runner.guest_changes(a)}


class TestCacheAwareBalloon(StrategyTestCase):
    def test_both_modes_move_memory_to_vm1(self):
        for mode in ('paper', 'utility'):
            solution = self.strategy('cache_aware_balloon',
                                     {'mode': mode}).execute()
            t = self.targets(solution)
            self.assertGreater(t[self.example.VM1], 3840, mode)
            self.assertLess(t[self.example.VM2], 3840, mode)
            kinds = [a['action_type'] for a in solution.actions]
            self.assertEqual(['cams_host_balloon'], kinds)
            # The shrink comes first, so the agent never over-commits.
            first = solution.actions[0]['input_parameters']['targets'][0]
            self.assertLess(first['target_mb'], first['current_mb'])
            names = {i['name']: i['value']
                     for i in solution.efficacy_indicators}
            self.assertEqual(2, names['instances_changed'])
            self.assertGreater(names['memory_moved_mb'], 0)

    def test_utility_measurements_saved_with_the_agent(self):
        agent = fakes.FakeAgent(self.reports)
        self.strategy('cache_aware_balloon', {'mode': 'utility'},
                      agent=agent).execute()
        saved = agent.saved['cmp-a']
        self.assertEqual({self.example.VM1, self.example.VM2}, set(saved))
        [seen] = saved[self.example.VM1]['utility']['seen']
        self.assertEqual(3840, seen[0])
        # Paper mode keeps nothing.
        agent = fakes.FakeAgent(self.reports)
        self.strategy('cache_aware_balloon', {'mode': 'paper'},
                      agent=agent).execute()
        self.assertEqual({}, agent.saved)

    def test_double_caching_counted_and_recommended(self):
        report = copy.deepcopy(self.reports[0])
        served = {self.example.VM1: 0.9, self.example.VM2: 0.05}
        for guest in report['guests']:
            guest['host_cache'] = {
                'disks': ['vda'], 'window_s': 30.0, 'guest_read_mb': 300.0,
                'storage_read_mb': 300.0 * (1 - served[guest['uuid']]),
                'hit_ratio': served[guest['uuid']], 'double_caching': True}
        indicators = {}
        for recommend in (False, True):
            solution = self.strategy(
                'cache_aware_balloon', {'mode': 'paper',
                                        'recommend_lfu': recommend},
                reports=[report]).execute()
            indicators[recommend] = {i['name']: i['value']
                                     for i in solution.efficacy_indicators}
            nops = [a['input_parameters']['message']
                    for a in solution.actions if a['action_type'] == 'nop']
            # Memory still moves either way: one action for the host.
            self.assertEqual(2, len(self.targets(solution)))
            self.assertEqual(1, len(solution.actions) - len(nops))
        self.assertEqual(1, indicators[False]['lfu_candidates'])
        self.assertEqual(1, indicators[True]['lfu_candidates'])
        [message] = nops
        self.assertIn(self.example.VM2, message)
        self.assertIn('10.0 MiB/s', message)
        self.assertIn('served 5%', message)
        # A higher bar makes the other instance a candidate too.
        solution = self.strategy('cache_aware_balloon',
                                 {'lfu_hit_ratio': 0.95},
                                 reports=[report]).execute()
        self.assertEqual(2, {i['name']: i['value'] for i in
                             solution.efficacy_indicators}['lfu_candidates'])

    def test_selector_finds_the_default_for_the_goal(self):
        s = selection.DefaultStrategySelector(goal_name=self.goal).select()
        self.assertIsInstance(s, cams_base.MemoryStrategy)

    def test_bad_parameters_rejected_clearly(self):
        validator = utils.StrictDefaultValidatingDraft4Validator(
            self.strategy('cache_aware_balloon').get_schema())
        for bad in ({'mode': 'magic'}, {'pages_per_step': 0},
                    {'tolerance': 2}):
            self.assertRaises(jsonschema.ValidationError,
                              validator.validate, dict(bad))
        self.assertRaises(exception.AuditParameterNotAllowed,
                          validator.validate, {'unknown': 1})
        # Values the schema cannot express are caught by the policy.
        s = self.strategy('cache_aware_balloon')
        s.input_parameters.update({'mode': 'paper', 'tolerance': 1.0})
        exc = self.assertRaises(cams_base.InvalidAuditParameter, s.execute)
        self.assertIn('tolerance', str(exc))

    def test_unreachable_agent_leaves_host_out(self):
        agent = fakes.FakeAgent(self.reports, down={'cmp-a'})
        with self.assertLogs('watcher_cams.strategies.base') as logs:
            solution = self.strategy('cache_aware_balloon',
                                     agent=agent).execute()
        self.assertEqual([], solution.actions)
        # Once per audit, with a count; and in the efficacy indicators.
        missing = [r for r in logs.output if 'left out of this audit' in r]
        self.assertEqual(1, len(missing), logs.output)
        self.assertIn('1 of 1 hosts', missing[0])
        names = {i['name']: i['value'] for i in solution.efficacy_indicators}
        self.assertEqual(1, names['hosts_without_report'])

    def test_a_stalled_agent_leaves_its_host_out(self):
        # An agent whose collection loop hangs answers its last report for
        # ever: past report_max_age the host counts as not answering.
        stale = dict(self.reports[0], age_s=301.0)
        with self.assertLogs('watcher_cams.strategies.base') as logs:
            solution = self.strategy('cache_aware_balloon',
                                     agent=fakes.FakeAgent([stale])).execute()
        self.assertEqual([], solution.actions)
        self.assertIn('301 s old', ''.join(logs.output))
        names = {i['name']: i['value'] for i in solution.efficacy_indicators}
        self.assertEqual(1, names['hosts_without_report'])
        fresh = dict(self.reports[0], age_s=299.0)
        self.assertNotEqual([], self.strategy(
            'cache_aware_balloon',
            agent=fakes.FakeAgent([fresh])).execute().actions)

    def test_planning_here_skips_the_heap_alive_before(self):
        # The collector walks only what planning allocates (gc.freeze):
        # the decision engine's heap is given back after, also when a
        # host's planning fails.
        frozen = []

        def planned(raw, host, request):
            frozen.append(gc.get_freeze_count())
            raise RuntimeError('planning failed')

        s = self.strategy('cache_aware_balloon')
        with mock.patch.object(cams_base, '_planned_report', planned):
            self.assertRaises(RuntimeError, s.execute)
        self.assertEqual(1, len(frozen))
        self.assertGreater(frozen[0], 1000)
        self.assertEqual(0, gc.get_freeze_count())

    def test_malformed_report_leaves_host_out(self):
        bad = copy.deepcopy(self.reports[0])
        bad['memory']['total_mb'] = 'plenty'
        agent = fakes.FakeAgent([bad])
        solution = self.strategy('cache_aware_balloon', agent=agent,
                                 reports=self.reports).execute()
        self.assertEqual([], solution.actions)

    def test_bad_guest_data_leaves_only_that_guest_alone(self):
        rep = copy.deepcopy(self.reports[0])
        third = copy.deepcopy(rep['guests'][0])
        third['uuid'] = '33333333-3333-4333-8333-333333333333'
        third['agent'] = 'unavailable'
        rep['guests'].append(third)
        rep['memory']['total_mb'] += third['actual_mb']
        solution = self.strategy('cache_aware_balloon',
                                 reports=[rep]).execute()
        t = self.targets(solution)
        self.assertNotIn(third['uuid'], t)
        self.assertIn(self.example.VM1, t)

    def test_instances_outside_scope_are_counted_not_moved(self):
        rep = self.reports[0]
        model = runner.compute_model([rep])
        inst = model.get_instance_by_uuid(self.example.VM2)
        inst.watcher_exclude = True
        s = self.strategy('cache_aware_balloon')
        self.m_model.return_value = model
        self.assertEqual({}, self.targets(s.execute()))

    def test_dedicated_instance_flag_from_flavor(self):
        rep = self.reports[0]
        model = runner.compute_model([rep])
        inst = model.get_instance_by_uuid(self.example.VM1)
        inst.flavor_extra_specs = {'hw:cpu_policy': 'dedicated'}
        agent = fakes.PlanningAgent([rep])
        s = self.strategy('cache_aware_balloon', agent=agent)
        self.m_model.return_value = model
        s.execute()
        scope = agent.requests['cmp-a']['instances']
        self.assertTrue(scope[self.example.VM1]['dedicated'])
        self.assertFalse(scope[self.example.VM2]['dedicated'])


class TestMarginBalloon(StrategyTestCase):
    def test_state_saved_with_the_agent_and_used_next_cycle(self):
        agent = fakes.FakeAgent(self.reports)
        self.strategy('margin_balloon', agent=agent).execute()
        saved = agent.saved['cmp-a']
        self.assertEqual({self.example.VM1, self.example.VM2}, set(saved))
        rep = copy.deepcopy(self.reports[0])
        for g in rep['guests']:
            g['policy_state'] = saved[g['uuid']]
        agent2 = fakes.FakeAgent([rep])
        self.strategy('margin_balloon', agent=agent2,
                      reports=[rep]).execute()
        self.assertTrue(agent2.saved['cmp-a'][self.example.VM1]['margin']
                        ['seen'])

    def test_unsaved_state_does_not_fail_the_audit(self):
        agent = fakes.FakeAgent(self.reports)
        agent.save_policy_state = mock.Mock(
            side_effect=cams_base.rpcapi.AgentUnreachable('cmp-a'))
        with self.assertLogs('watcher_cams.strategies.base') as logs:
            solution = self.strategy('margin_balloon', agent=agent).execute()
        self.assertTrue(solution.actions)
        self.assertTrue(any('policy state of 1 of 1 hosts not saved' in line
                            for line in logs.output), logs.output)
        # Saved after planning, with what is left of the report timeout.
        agent.save_policy_state.assert_called_once_with(
            'cmp-a', mock.ANY, timeout=mock.ANY)


class TestKsmBalloon(StrategyTestCase):
    def test_hands_out_ksm_savings(self):
        rep = copy.deepcopy(self.reports[0])
        rep['ksm']['pages_sharing'] = 1024 * 256  # 1 GiB saved
        for g in rep['guests']:
            g['base_mb'] = g['actual_mb']
        solution = self.strategy('ksm_balloon', reports=[rep]).execute()
        t = self.targets(solution)
        self.assertEqual({self.example.VM1: 3840 + 256,
                          self.example.VM2: 3840 + 256}, t)
        names = {i['name']: i['value'] for i in solution.efficacy_indicators}
        self.assertEqual(512, names['ksm_memory_returned_mb'])


class TestSharingAwarePinning(StrategyTestCase):
    goal = 'cpu_cache_affinity'

    def test_pins_sharing_pairs_onto_one_llc(self):
        rep = copy.deepcopy(self.reports[0])
        rep['topology'] = {'llc': [{'name': 'L3-0', 'cpus': [0, 1]},
                                   {'name': 'L3-1', 'cpus': [2, 3]}],
                           'shared_cpus': [0, 1, 2, 3]}
        extra = []
        for n, g in enumerate(rep['guests']):
            g['cpus'] = [[0, 1, 2, 3]]
            twin = copy.deepcopy(g)
            twin['uuid'] = '%d%s' % (n + 5, g['uuid'][1:])
            extra.append(twin)
        rep['guests'] += extra
        rep['sharing'] = [
            {'a': rep['guests'][0]['uuid'], 'b': extra[0]['uuid'],
             'pages': 90000},
            {'a': rep['guests'][1]['uuid'], 'b': extra[1]['uuid'],
             'pages': 80000}]
        solution = self.strategy('sharing_aware_pinning',
                                 {'cpu_allocation_ratio': 1.0},
                                 reports=[rep]).execute()
        # One action for the host, carrying every guest's pin.
        self.assertEqual(['cams_host_pin'],
                         [a['action_type'] for a in solution.actions])
        llc = {p['instance']: p['llc'] for a in solution.actions
               for p in a['input_parameters']['pins']}
        self.assertEqual(llc[rep['guests'][0]['uuid']], llc[extra[0]['uuid']])
        self.assertNotEqual(llc[rep['guests'][0]['uuid']],
                            llc[rep['guests'][1]['uuid']])
        names = {i['name']: i['value'] for i in solution.efficacy_indicators}
        self.assertEqual(100.0, names['sharing_kept_in_llc'])

    def test_bad_ratio_rejected(self):
        s = self.strategy('sharing_aware_pinning')
        s.input_parameters.update({'cpu_allocation_ratio': -1})
        self.assertRaises(exception.Invalid, s.execute)


class TestPlanOnAgents(StrategyTestCase):
    """Agents of API 1.5 plan their own hosts; the plans are the same."""

    RUNS = (('memory_cache_efficiency', 'cache_aware_balloon',
             {'mode': 'paper'}),
            ('memory_cache_efficiency', 'cache_aware_balloon',
             {'mode': 'utility'}),
            ('memory_cache_efficiency', 'margin_balloon', {}),
            ('memory_cache_efficiency', 'ksm_balloon', {'mode': 'utility'}),
            ('cpu_cache_affinity', 'sharing_aware_pinning', {}))

    def setUp(self):
        super().setUp()
        self.reports = [bench.host_report(3, i, 12) for i in range(3)]

    def run_with(self, goal, name, params, agent):
        self.goal = goal
        solution = self.strategy(name, params, agent=agent).execute()
        return solution.actions, {i['name']: i['value']
                                  for i in solution.efficacy_indicators}

    def test_same_actions_and_indicators_as_planned_here(self):
        for goal, name, params in self.RUNS:
            here = fakes.FakeAgent(self.reports)
            there = fakes.PlanningAgent(self.reports)
            expected = self.run_with(goal, name, params, here)
            self.assertTrue(expected[0], name)
            self.assertEqual(expected,
                             self.run_with(goal, name, params, there), name)
            # No report crossed, no second round trip for policy state.
            self.assertEqual({'plan'}, {c[0] for c in there.calls}, name)
            self.assertEqual(here.saved, there.saved, name)

    def test_hosts_of_older_agents_are_planned_from_their_reports(self):
        agent = fakes.PlanningAgent(self.reports, older={'cmp-0001'})
        actions, names = self.run_with(*self.RUNS[1], agent)
        self.assertEqual(['cmp-0000', 'cmp-0001', 'cmp-0002'], sorted(
            {a['input_parameters']['host'] for a in actions}))
        self.assertEqual([('get_report', 'cmp-0001')],
                         [c for c in agent.calls if c[0] == 'get_report'])
        self.assertEqual(0, names['hosts_without_report'])

    def test_an_unusable_plan_leaves_its_host_out(self):
        for bad in ({'host': 'cmp-0001', 'moves': [
                ['not-in-scope', 1024, 2048, 'x']]},
                {'host': 'cmp-0001', 'age_s': 301.0},
                {'host': 'cmp-0009'}, {'host': 'cmp-0001', 'moves': 'x'}):
            agent = fakes.PlanningAgent(self.reports,
                                        answers={'cmp-0001': bad})
            with self.assertLogs('watcher_cams.strategies.base') as logs:
                actions, names = self.run_with(*self.RUNS[1], agent)
            self.assertNotIn('cmp-0001', {a['input_parameters']['host']
                                          for a in actions}, bad)
            self.assertEqual(1, names['hosts_without_report'], bad)
            self.assertEqual(1, len([line for line in logs.output
                                     if 'left out' in line]), bad)

    def test_requests_carry_the_models_view_of_each_instance(self):
        model = runner.compute_model(self.reports)
        first = self.reports[0]['guests']
        model.get_instance_by_uuid(first[0]['uuid']).watcher_exclude = True
        model.get_instance_by_uuid(first[1]['uuid']).memory = 1024
        agent = fakes.PlanningAgent(self.reports)
        s = self.strategy('cache_aware_balloon', agent=agent)
        self.m_model.return_value = model
        actions = s.execute().actions
        scope = agent.requests['cmp-0000']['instances']
        self.assertFalse(scope[first[0]['uuid']]['active'])
        self.assertEqual(1024, scope[first[1]['uuid']]['memory_mb'])
        moved = {c['instance'] for a in actions
                 for c in runner.guest_changes(a)}
        self.assertNotIn(first[0]['uuid'], moved)

    def test_the_audits_host_reserve_goes_with_each_request(self):
        # What Nova reserves, or the audit's host_reserved_mb if more, for
        # every memory strategy; the pinning strategy keeps Nova's.
        node = runner.compute_model(self.reports).get_node_by_name('cmp-0000')
        for goal, name, params in self.RUNS:
            self.goal = goal
            memory = goal == 'memory_cache_efficiency'
            for reserve_mb in (None, 1, 40000):
                if reserve_mb is not None and not memory:
                    continue
                agent = fakes.PlanningAgent(self.reports)
                given = dict(params) if reserve_mb is None else dict(
                    params, host_reserved_mb=reserve_mb)
                self.run_with(goal, name, given, agent)
                self.assertEqual(
                    max(node.memory_mb_reserved, reserve_mb or 0),
                    agent.requests['cmp-0000']['reserved_mb'], name)
