"""The panel's pages with Horizon's test data and its APIs mocked."""

import datetime
import types
from unittest import mock

from django.urls import reverse
from novaclient import exceptions as nova_exceptions
from openstack_dashboard.api import keystone
from openstack_dashboard.api import nova
from openstack_dashboard.test import helpers as test

from watcher_cams_dashboard import api
from watcher_cams_dashboard import views

INDEX = reverse('horizon:admin:watcher_cams:index')
U1 = '11111111-1111-1111-1111-111111111111'
U2 = '22222222-2222-2222-2222-222222222222'


def catalog_entry(kind, name, url):
    return {'type': kind, 'name': name, 'endpoints_links': [],
            'endpoints': [{'region': 'RegionOne', 'interface': i,
                           'url': url}
                          for i in ('admin', 'internal', 'public')]}


# Horizon's test catalog has neither service.
CATALOG = [catalog_entry(api.REPORTS_SERVICE, 'watcher-cams',
                         'http://cams.example.com:9330'),
           catalog_entry(api.WATCHER_SERVICE, 'watcher',
                         'http://watcher.example.com:9322')]


class WithCatalog:
    def _setup_test_data(self):
        super()._setup_test_data()
        self.service_catalog.extend(CATALOG)


def host_url(host):
    return reverse('horizon:admin:watcher_cams:host', args=[host])


def overview(host='devstack001'):
    return {
        'version': 1, 'host': host, 'timestamp': 1000.0, 'enabled': True,
        'memory': {'ram_mb': 24000, 'reserved_mb': 512,
                   'available_mb': 9000, 'capacity_mb': 23488,
                   'guests_max_mb': 3072, 'guests_actual_mb': 2560,
                   'ksm_saved_mb': 120.5, 'ksm_promisable_mb': 60.2},
        'ksm': {'run': 1, 'pages_shared': 10, 'pages_sharing': 30851},
        'llc': [{'name': 'L3-0', 'cpus': [0, 1], 'instances': [U1]},
                {'name': 'L3-1', 'cpus': [2, 3], 'instances': []}],
        'instances': [
            {'uuid': U1, 'name': 'instance-00000001', 'max_mb': 2048,
             'actual_mb': 1536, 'floor_mb': 421, 'dedicated': False,
             'cpus': [0, 1], 'agent': 'ok', 'problem': None,
             'cache_mb': 900.1, 'active_file_mb': 610.0,
             'inactive_file_mb': 290.1, 'used_mb': 292.0,
             'disk_read_mb_s': 4.2, 'refault_s': 310.0, 'activate_s': 120.0,
             'psi_some_avg10': 0.0,
             'host_cache': {'hit_ratio': 0.25, 'double_caching': True},
             'host_read_mb_s': 3.9, 'host_read_req_s': 62.0,
             'host_cpu_s': 0.017, 'host_touched_mb': 812.0,
             'balloon': {'usable_mb': 1210, 'available_mb': 1500},
             'claims': 'counters went backwards: the guest rebooted'},
            {'uuid': U2, 'name': 'instance-00000002', 'max_mb': 1024,
             'actual_mb': 1024, 'floor_mb': None, 'dedicated': False,
             'cpus': [0, 1, 2, 3], 'agent': 'no-agent',
             'problem': 'the guest agent does not answer',
             'cache_mb': None, 'active_file_mb': None,
             'inactive_file_mb': None, 'used_mb': None,
             'disk_read_mb_s': None, 'refault_s': None, 'activate_s': None,
             'psi_some_avg10': None, 'host_cache': None,
             'host_read_mb_s': 0.5, 'host_read_req_s': 8.0,
             'balloon': {'usable_mb': None}}],
        'timeline': {
            U1: [{'t': 940.0, 'actual_mb': 2048, 'cache_mb': 800.0,
                  'disk_read_mb_s': 9.0, 'refault_s': 400.0},
                 {'t': 970.0, 'actual_mb': 1536, 'cache_mb': 880.0,
                  'disk_read_mb_s': 5.0, 'refault_s': 320.0},
                 {'t': 1000.0, 'actual_mb': 1536, 'cache_mb': 900.1,
                  'disk_read_mb_s': 4.2, 'refault_s': 310.0,
                  'host_read_mb_s': 3.9}],
            U2: [{'t': 970.0, 'actual_mb': 1024, 'cache_mb': None,
                  'disk_read_mb_s': None, 'refault_s': None,
                  'host_read_mb_s': 0.7},
                 {'t': 1000.0, 'actual_mb': 1024, 'cache_mb': None,
                  'disk_read_mb_s': None, 'refault_s': None,
                  'host_read_mb_s': 0.5}]}}


def action(uuid, instance, host, reason='', state='SUCCEEDED',
           kind='cams_balloon', plan_state='SUCCEEDED'):
    params = {'resource_id': instance, 'host': host, 'reason': reason}
    if kind == 'cams_balloon':
        params.update(current_mb=2048, target_mb=1536)
    else:
        params.update(cpus=[0, 1], llc='L3-0')
    return api.Action({'uuid': uuid, 'action_type': kind, 'state': state,
                       'input_parameters': params,
                       'action_plan_uuid': 'plan-' + uuid,
                       'created_at': '2026-11-24T10:00:00+00:00'},
                      {'state': plan_state, 'audit_uuid': 'audit-1',
                       'strategy_name': 'cache_aware_balloon'})


class PanelTestCase(WithCatalog, test.BaseAdminViewTests):
    pass


class TestIndex(PanelTestCase):

    @test.create_mocks({nova: ['service_list', 'server_get'],
                        api: ['overview', 'cams_actions']})
    def test_hosts_and_an_agent_that_does_not_answer(self):
        computes = [s for s in self.services.list()
                    if s.binary == 'nova-compute']
        self.mock_service_list.return_value = computes
        hosts = sorted(s.host for s in computes)
        self.assertGreater(len(hosts), 1)

        def answer(request, host):
            if host == hosts[-1]:
                raise api.ApiError(api.REPORTS_SERVICE,
                                   '504 watcher-cams-agent on %s did not '
                                   'answer' % host, 504)
            return overview(host)
        self.mock_overview.side_effect = answer
        self.mock_cams_actions.return_value = [
            action('a1', U1, hosts[0], 'utility: value 1.250 MiB/s per '
                   'GiB, gives 512 MiB')]
        self.mock_server_get.return_value = types.SimpleNamespace(
            name='web-1')

        res = self.client.get(INDEX)

        self.assertTemplateUsed(res, 'watcher_cams/index.html')
        rows = res.context['hosts_table'].data
        self.assertEqual(hosts, [r.host for r in rows])
        self.assertEqual((24000, 2, 1),
                         (rows[0].ram_mb, rows[0].instances,
                          rows[0].no_data))
        self.assertIn('did not answer', rows[-1].error)
        self.assertContains(res, host_url(hosts[0]))
        self.assertContains(res, 'did not answer')
        self.assertEqual(['a1'], [a.id for a in
                                  res.context['actions_table'].data])
        self.mock_service_list.assert_called_once_with(
            test.IsHttpRequest(), binary='nova-compute')
        # The instance by its name, as on the host page; the time as
        # Horizon shows times, not Watcher's ISO string.
        self.assertEqual('web-1', res.context['actions_table'].data[0]
                         .instance_name)
        self.assertContains(res, 'web-1')
        self.assertNotContains(res, U1)
        row = res.context['actions_table'].get_rows()[0]
        self.assertIsInstance(row.cells['created'].data, datetime.datetime)
        self.assertNotContains(res, '2026-11-24T10:00:00')
        self.mock_server_get.assert_called_once_with(test.IsHttpRequest(),
                                                     U1)

    @test.create_mocks({nova: ['service_list', 'server_get'],
                        api: ['overview', 'cams_actions']})
    def test_actions_come_a_page_at_a_time(self):
        self.mock_service_list.return_value = []
        ids = ['a%02d' % n for n in range(45)]
        self.mock_cams_actions.return_value = [
            action(i, U1 if n % 2 else U2, 'cmp-a')
            for n, i in enumerate(ids)]
        # U2 was deleted: it keeps its uuid.
        self.mock_server_get.side_effect = lambda request, uuid: (
            types.SimpleNamespace(name='web-1') if uuid == U1
            else self._raise(nova_exceptions.NotFound(404)))
        meta = 'actions_marker'

        pages = [self.client.get(INDEX)]
        for _ in range(2):
            last = pages[-1].context['actions_table'].data[-1].id
            pages.append(self.client.get('%s?%s=%s' % (INDEX, meta, last)))
        shown = [[a.id for a in p.context['actions_table'].data]
                 for p in pages]
        self.assertEqual([ids[:20], ids[20:40], ids[40:]], shown)
        self.assertContains(pages[0], '?%s=a19' % meta)
        self.assertNotContains(pages[0], 'actions_prev_marker')
        self.assertContains(pages[1], '?actions_prev_marker=a20')
        self.assertNotContains(pages[2], '?%s=' % meta)
        back = self.client.get('%s?actions_prev_marker=a40' % INDEX)
        self.assertEqual(ids[20:40], [a.id for a in
                                      back.context['actions_table'].data])
        # A marker that aged out of the newest actions: the first page.
        gone = self.client.get('%s?%s=zz' % (INDEX, meta))
        self.assertEqual(ids[:20], [a.id for a in
                                    gone.context['actions_table'].data])
        self.assertEqual({'web-1', U2}, {
            a.instance_name for a in pages[0].context['actions_table'].data})

    @staticmethod
    def _raise(exc):
        raise exc

    @test.create_mocks({nova: ['service_list'],
                        api: ['overview', 'cams_actions']})
    def test_watcher_down_still_shows_hosts(self):
        self.mock_service_list.return_value = [
            s for s in self.services.list() if s.binary == 'nova-compute']
        self.mock_overview.side_effect = lambda r, h: overview(h)
        self.mock_cams_actions.side_effect = api.ApiError(
            api.WATCHER_SERVICE, 'unreachable: connection refused')
        res = self.client.get(INDEX)
        self.assertEqual(200, res.status_code)
        self.assertTrue(res.context['hosts_table'].data)
        self.assertMessageCount(res, error=1)


class TestHost(PanelTestCase):

    def nova_servers(self):
        first, second = self.servers.list()[:2]
        first.id, first.name = U1, 'web-<1>'
        second.id, second.name = U2, 'db'
        return [first, second], False

    @test.create_mocks({nova: ['server_list'], keystone: ['tenant_list'],
                        api: ['overview', 'cams_actions']})
    def test_instances_caches_charts_and_actions(self):
        self.mock_overview.return_value = overview()
        servers, more = self.nova_servers()
        self.mock_server_list.return_value = servers, more
        self.mock_tenant_list.return_value = self.tenants.list(), False
        self.mock_cams_actions.return_value = [
            action('new', U1, 'devstack001', 'utility (host-measured): '
                   'value 1.250 MiB/s per GiB, gives 512 MiB'),
            action('old', U1, 'devstack001', 'cams: cache utilization '
                   '0.40 -> 0.55 (2 steps of 128 MiB)'),
            action('pin', U1, 'devstack001', 'affinity: shares 900 merged '
                   'pages', kind='cams_pin_vcpus'),
            action('other', U2, 'elsewhere', 'not this host')]

        res = self.client.get(host_url('devstack001'))

        self.assertTemplateUsed(res, 'watcher_cams/host.html')
        web, db = res.context['instances_table'].data
        self.assertEqual(('web-<1>', 2048, 1536, 421, 900.1, 0.25),
                         (web.name, web.max_mb, web.actual_mb, web.floor_mb,
                          web.cache_mb, web.host_hit_ratio))
        # The memory the host saw it touch; none for a guest not measured.
        self.assertEqual((812.0, None),
                         (web.host_touched_mb, db.host_touched_mb))
        self.assertContains(res, 'Memory touched (host-measured)')
        self.assertContains(res, '812 MiB')
        projects = {t.id: t.name for t in self.tenants.list()}
        self.assertEqual(projects[servers[0].tenant_id], web.project)
        # The newest balloon action's estimate, from Watcher's reason.
        self.assertEqual('1.250 MiB/s per GiB (host-measured)',
                         str(web.value))
        self.assertIsNone(db.value)
        self.assertEqual('no-agent: the guest agent does not answer',
                         db.agent_text)
        # A guest without an agent that the balloon's figures manage.
        self.assertEqual('missing: managed from host signals only '
                         '(balloon, disk reads)', views._agent_text(
                             {'agent': 'missing', 'host_only': True,
                              'problem': None}))
        self.assertEqual('ok: counters went backwards: the guest rebooted',
                         web.agent_text)
        self.assertEqual([('L3-0', 'web-<1>'), ('L3-1', '-')],
                         [(g.name, g.members)
                          for g in res.context['llc_table'].data])
        self.assertEqual(['new', 'old', 'pin'],
                         [a.id for a in res.context['actions_table'].data])
        # Which signal decided each move, in its own column.
        self.assertContains(res, 'Decided by')
        self.assertEqual(['host-measured', None, None],
                         [a.signal for a in
                          res.context['actions_table'].data])
        self.assertContains(res, 'web-&lt;1&gt;')
        self.assertNotContains(res, 'web-<1>')
        self.assertContains(res, '24000 MiB')
        self._check_host_measured(res, web, db)
        self.mock_server_list.assert_called_once_with(
            test.IsHttpRequest(),
            search_opts={'all_tenants': True, 'host': 'devstack001'})

    def _check_host_measured(self, res, web, db):
        """The charts, and what the host measures beside what guests say."""
        # Four charts; the balloon chart has a line per instance.
        charts = res.context['charts']
        self.assertEqual(4, len(charts))
        self.assertEqual(2, charts[0].count('<polyline'))
        # The instance without figures draws no cache line, but the host
        # measures its reads whatever its guest agent does.
        self.assertEqual(1, charts[1].count('<polyline'))
        self.assertEqual(2, charts[3].count('<polyline'))
        self.assertEqual((3.9, 1210, 0.5, None),
                         (web.host_read_mb_s, web.balloon_usable_mb,
                          db.host_read_mb_s, db.balloon_usable_mb))
        self.assertContains(res, '3.9 MiB/s')
        self.assertContains(res, '0.017 CPU s/s')

    @test.create_mocks({nova: ['server_list', 'server_get'],
                        keystone: ['tenant_list'],
                        api: ['overview', 'cams_actions']})
    def test_the_hosts_actions_a_page_at_a_time_by_name(self):
        self.mock_overview.return_value = overview()
        self.mock_server_list.return_value = self.nova_servers()
        self.mock_tenant_list.return_value = self.tenants.list(), False
        u3 = '33333333-3333-3333-3333-333333333333'
        size = views.ACTIONS_PAGE
        ours = [action('h%02d' % n, U1, 'devstack001')
                for n in range(size + 5)]
        # An instance that has left the host since: named through Nova.
        ours.insert(3, action('moved', u3, 'devstack001'))
        self.mock_cams_actions.return_value = ours + [
            action('x%02d' % n, U2, 'elsewhere') for n in range(30)]
        self.mock_server_get.return_value = types.SimpleNamespace(
            name='moved-away')

        first = self.client.get(host_url('devstack001'))
        rows = first.context['actions_table'].data
        self.assertEqual([a.id for a in ours[:size]], [a.id for a in rows])
        self.assertEqual('moved-away', rows[3].instance_name)
        self.assertEqual({'web-<1>'}, {a.instance_name for a in rows
                                       if a.instance == U1})
        self.assertContains(first, '?actions_marker=%s' % rows[-1].id)
        self.mock_server_get.assert_called_once_with(test.IsHttpRequest(),
                                                     u3)
        second = self.client.get('%s?actions_marker=%s' % (
            host_url('devstack001'), rows[-1].id))
        self.assertEqual([a.id for a in ours[size:]], [
            a.id for a in second.context['actions_table'].data])
        self.assertNotContains(second, '?actions_marker=')

    @test.create_mocks({nova: ['server_list'], keystone: ['tenant_list'],
                        api: ['overview', 'cams_actions']})
    def test_an_agent_that_does_not_answer_is_shown_as_such(self):
        self.mock_overview.side_effect = api.ApiError(
            api.REPORTS_SERVICE, '504 watcher-cams-agent on cmp-x did not '
            'answer: timed out', 504)
        self.mock_server_list.return_value = ([], False)
        self.mock_tenant_list.side_effect = Exception('keystone is down')
        self.mock_cams_actions.return_value = []
        res = self.client.get(host_url('cmp-x'))
        self.assertEqual(200, res.status_code)
        self.assertContains(res, 'cams-agent-error')
        self.assertContains(res, 'cmp-x did not answer: timed out')
        self.assertEqual([], res.context['instances_table'].data)


class TestAccess(WithCatalog, test.TestCase):

    @mock.patch.object(api, 'overview')
    def test_members_do_not_see_the_panel(self, overview_mock):
        res = self.client.get(INDEX)
        self.assertNotEqual(200, res.status_code)
        overview_mock.assert_not_called()
