"""The panel's API layer: URLs, the token, errors turned into messages."""

from unittest import mock

from openstack_dashboard.test import helpers as test
import requests

from tests.dashboard import test_panel
from watcher_cams_dashboard import api
from watcher_cams_dashboard import charts


def response(status=200, body=None, text=None, reason='OK'):
    resp = mock.Mock(status_code=status, reason=reason)
    if text is not None:
        resp.json.side_effect = ValueError(text)
    else:
        resp.json.return_value = body
    return resp


class TestApi(test_panel.WithCatalog, test.APITestCase):

    @mock.patch.object(requests, 'get')
    def test_overview_with_the_users_token(self, get):
        get.return_value = response(body={'host': 'cmp-a'})
        self.assertEqual({'host': 'cmp-a'},
                         api.overview(self.request, 'cmp-a', since=12.5))
        (url,), kwargs = get.call_args
        self.assertEqual(
            'http://cams.example.com:9330/v1/hosts/cmp-a/overview', url)
        self.assertEqual({'since': 12.5}, kwargs['params'])
        self.assertEqual(self.token.id, kwargs['headers']['X-Auth-Token'])
        self.assertTrue(kwargs['timeout'])

    @mock.patch.object(requests, 'get')
    def test_failures_name_the_service_and_why(self, get):
        cases = [
            (response(504, {'error': {'code': 504, 'message': 'agent on '
                                      'cmp-a did not answer'}}),
             '504 agent on cmp-a did not answer'),
            (response(403, {'error_message': 'policy says no'}),
             '403 policy says no'),
            (response(500, text='<html>', reason='Server Error'),
             '500 Server Error'),
            (response(200, text='<html>'), 'not a JSON object'),
            (response(200, ['a', 'list']), 'not a JSON object'),
            (requests.Timeout('slow'), 'no answer within'),
            (requests.ConnectionError('refused'), 'unreachable: refused')]
        for answer, text in cases:
            get.side_effect = [answer]
            with self.assertRaises(api.ApiError) as caught:
                api.overview(self.request, 'cmp-a')
            self.assertIn(text, str(caught.exception))
            self.assertIn(api.REPORTS_SERVICE, str(caught.exception))

    def test_a_service_missing_from_the_catalog(self):
        self.request.user.service_catalog = [
            s for s in self.request.user.service_catalog
            if s['type'] != api.REPORTS_SERVICE]
        with self.assertRaises(api.ApiError) as caught:
            api.overview(self.request, 'cmp-a')
        self.assertIn('not in the service catalog', str(caught.exception))

    @mock.patch.object(requests, 'get')
    def test_cams_actions_with_their_plans(self, get):
        actions = {'actions': [
            {'uuid': 'a1', 'action_type': 'cams_balloon',
             'state': 'FAILED', 'action_plan_uuid': 'p1',
             'status_message': 'below its floor',
             'input_parameters': {'resource_id': 'u1', 'host': 'cmp-a',
                                  'current_mb': 1024, 'target_mb': 512,
                                  'reason': 'utility: value 0.125 MiB/s '
                                            'per GiB, gives 512 MiB'}},
            {'uuid': 'a2', 'action_type': 'migrate', 'state': 'SUCCEEDED',
             'action_plan_uuid': 'p1', 'input_parameters': {}},
            {'uuid': 'a3', 'action_type': 'cams_pin_vcpus',
             'state': 'PENDING', 'action_plan_uuid': 'p9',
             'input_parameters': {'resource_id': 'u2', 'cpus': [2, 3]}},
            {'uuid': 'a4', 'action_type': 'cams_host_balloon',
             'state': 'SUCCEEDED', 'action_plan_uuid': 'p1',
             'input_parameters': {
                 'resource_id': 'node-1', 'host': 'cmp-b',
                 'reason': '1 shrinks, 1 grows, 512 MiB moved',
                 'targets': [
                     {'instance': 'u3', 'current_mb': 1024,
                      'target_mb': 768, 'reason': 'utility: value 0.010 '
                                                  'MiB/s per GiB'},
                     {'instance': 'u4', 'current_mb': 1024,
                      'target_mb': 1280}]}},
            {'uuid': 'a5', 'action_type': 'cams_host_pin',
             'state': 'SUCCEEDED', 'action_plan_uuid': 'p9',
             'input_parameters': {
                 'resource_id': 'node-1', 'host': 'cmp-b',
                 'reason': '2 instances pinned to LLCs L3-1',
                 'pins': [{'instance': 'u5', 'cpus': [4, 5], 'llc': 'L3-1',
                           'reason': 'shares 900 pages with u6'},
                          {'instance': 'u6', 'cpus': [4, 5],
                           'llc': 'L3-1'}]}}]}
        plans = {'action_plans': [{'uuid': 'p1', 'state': 'SUCCEEDED',
                                   'audit_uuid': 'au1',
                                   'strategy_name': 'cache_aware_balloon'}]}
        get.side_effect = [response(body=actions), response(body=plans)]
        balloon, pin, shrink, grow, pin5, pin6 = api.cams_actions(
            self.request)
        # A host's pins: a row per guest too, none of them a resize.
        self.assertEqual(
            [('a5_u5', 'u5', 'CPUs 4,5', 'shares 900 pages with u6', False),
             ('a5_u6', 'u6', 'CPUs 4,5', '2 instances pinned to LLCs L3-1',
              False)],
            [(r.id, r.instance, r.change, r.reason, r.resizes)
             for r in (pin5, pin6)])
        self.assertFalse(pin.resizes)
        self.assertTrue(balloon.resizes)
        # A host's action: a row per guest, with that guest's reason.
        self.assertEqual(
            [('a4_u3', 'u3', 'cmp-b', '1024 MiB -> 768 MiB',
              '0.010 MiB/s per GiB', 'SUCCEEDED'),
             ('a4_u4', 'u4', 'cmp-b', '1024 MiB -> 1280 MiB', 'None',
              'SUCCEEDED')],
            [(r.id, r.instance, r.host, r.change, str(r.value), r.state)
             for r in (shrink, grow)])
        self.assertEqual('1 shrinks, 1 grows, 512 MiB moved', grow.reason)
        self.assertEqual(
            ('cams_balloon', 'u1', 'cmp-a', '1024 MiB -> 512 MiB', 'FAILED',
             'SUCCEEDED', 'au1', 'below its floor', '0.125 MiB/s per GiB'),
            (balloon.action_type, balloon.instance, balloon.host,
             balloon.change, balloon.state, balloon.plan_state,
             balloon.audit, balloon.status_message, str(balloon.value)))
        self.assertEqual(('CPUs 2,3', None), (pin.change, pin.plan_state))
        urls = [c.args[0] for c in get.call_args_list]
        self.assertTrue(urls[0].endswith('/v1/actions/detail'))
        self.assertTrue(urls[1].endswith('/v1/action_plans/detail'))
        self.assertEqual('created_at', get.call_args.kwargs['params'][
            'sort_key'])

    def test_value_estimates(self):
        self.assertEqual('cache utilization 0.40 to 0.55', str(
            api.value_estimate('cams: cache utilization 0.40 -> 0.55 (2 '
                               'steps)')))
        self.assertEqual('committed 19 MiB + margin 100 MiB', str(
            api.value_estimate('margin: Committed_AS 19 MiB + margin 100 '
                               'MiB (up)')))
        self.assertEqual('64 MiB of 128 MiB KSM savings', str(
            api.value_estimate('ksm (paper): entitled 512 MiB + 64 MiB of '
                               '128 MiB safe KSM savings')))
        self.assertIsNone(api.value_estimate('margin: whatever'))
        self.assertIsNone(api.value_estimate(None))

    def test_which_signal_decided_a_utility_move(self):
        cases = [
            ('utility (host-measured): value 0.500 MiB/s per GiB, gets 64 '
             'MiB', '0.500 MiB/s per GiB (host-measured)', 'host-measured'),
            ('utility (probe): measured up to 6.208 MiB/s per GiB, the '
             'donor 2.002', '6.208 MiB/s per GiB (probe)', 'probe'),
            ('utility (guest-reported), a tie broken by cams: cache '
             'utilization 0.22 -> 0.48 (predicted)',
             'cache utilization 0.22 to 0.48', 'guest-reported'),
            # Written before moves said which signal decided them.
            ('utility: value 0.125 MiB/s per GiB, gives 512 MiB',
             '0.125 MiB/s per GiB', None),
            ('ksm (paper): entitled 512 MiB + 64 MiB of 128 MiB safe KSM '
             'savings', '64 MiB of 128 MiB KSM savings', None)]
        for reason, value, decided in cases:
            self.assertEqual(value, str(api.value_estimate(reason)))
            self.assertEqual(decided, api.signal(reason))


class TestCharts(test.TestCase):

    def test_points_gaps_and_escaping(self):
        svg = charts.line_chart('Balloon <size>', 'MiB', {
            '<script>': [(0, 100.0), (10, None), (20, 50.0)],
            'empty': [(0, None)]})
        self.assertEqual(1, svg.count('<polyline'))
        self.assertNotIn('<script>', svg)
        self.assertIn('&lt;script&gt;', svg)
        self.assertIn('Balloon &lt;size&gt;', svg)
        # Two points: the first at the left edge and the top, the second
        # at the right edge and half height.
        points = svg.split('points="')[1].split('"')[0].split()
        self.assertEqual(2, len(points))
        (x0, y0), (x1, y1) = [map(float, p.split(',')) for p in points]
        self.assertLess(x0, x1)
        self.assertLess(y0, y1)
        self.assertEqual('', charts.line_chart('t', 'u', {'a': [(0, 1.0)]}))
        # Two instances sampled once, at the same time: no time to show.
        self.assertEqual('', charts.line_chart('t', 'u', {'a': [(5, 1.0)],
                                                          'b': [(5, 2.0)]}))
