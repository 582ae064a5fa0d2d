"""The Horizon panel in a real browser against the all-in-one cloud.

Horizon (tools/aio: uwsgi on port 8080, the panel enabled from its
enabled/ file) and headless Chromium (Debian's, driven by Playwright): an
admin signs in, a margin_balloon audit has resized two servers on cmp-a,
and the panel must show what the cloud says: the servers by name with the
balloon sizes libvirt reports, the audit's cams_host_balloon action (a row
per server) with its plan and state, the charts, and a host without an
agent as such. A screenshot of each page goes to .cache/aio/screenshots/.
"""

import os
import re

from playwright import sync_api
import testtools
from testtools import content

from tests.cloud import base
from tests.cloud import test_reports_api as reports

SERVERS = ('cams-dash-1', 'cams-dash-2')
CHROMIUM = os.environ.get('CAMS_CHROMIUM', '/usr/bin/chromium')
SHOTS = os.path.join(base.aio.AIO, 'screenshots')
ISO_TIME = r'\d{4}-\d\d-\d\dT\d\d:'


class TestDashboardPanel(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        self.servers = base.boot_for(self, SERVERS)
        os.makedirs(SHOTS, exist_ok=True)
        playwright = sync_api.sync_playwright().start()
        self.addCleanup(playwright.stop)
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        self.addCleanup(browser.close)
        self.page = browser.new_page(viewport={'width': 1600,
                                               'height': 1200})
        self.page.set_default_timeout(90000)
        self.addOnException(self._attach_page)

    def _attach_page(self, exc_info):
        path = os.path.join(SHOTS, 'failure.png')
        try:
            self.page.screenshot(path=path, full_page=True)
            self.addDetail('page', content.text_content(
                self.page.inner_text('body')[:5000]))
        except Exception:  # noqa: B902 (a closed page: nothing to show)
            return
        self.addDetail('screenshot', content.text_content(path))

    def shoot(self, name):
        path = os.path.join(SHOTS, name)
        self.page.screenshot(path=path, full_page=True)
        self.assertGreater(os.path.getsize(path), 10000)
        return path

    def sign_in(self):
        self.page.goto(base.aio.HORIZON + '/auth/login/')
        self.page.fill('#id_username', 'admin')
        self.page.fill('#id_password', base.aio.PASSWORD)
        self.page.click('button[type=submit]')
        self.page.wait_for_url(re.compile(r'.*/(project|admin|identity)/.*'))

    def margin_audit(self):
        """A margin_balloon audit of the test's servers, applied: its plan.

        Its template leaves other servers on the node alone: the panel
        lists them, but they are not the test's to resize.
        """
        template = base.scoped_template(
            self, 'cams-dashboard-margin', 'memory_cache_efficiency',
            'margin_balloon', self.servers.values())
        audit = base.oneshot_audit('-a', template)
        [plan] = base.openstack('optimize', 'actionplan', 'list', '--audit',
                                audit)
        self.assertEqual('SUCCEEDED', base.wait_for(
            'plan', lambda: base.finished('actionplan', plan['UUID'])))
        actions = base.plan_actions(plan['UUID'])
        self.assertEqual({('cams_host_balloon', 'SUCCEEDED')},
                         {(a['type'], a['state']) for a in actions})
        return plan['UUID']

    def wait_for_timelines(self):
        """Until the agent's timeline has two rates for each server."""
        url = [e['URL'] for e in base.openstack('endpoint', 'list')
               if e['Service Type'] == 'memory-optimization'
               and e['Interface'] == 'public'][0].rstrip('/')
        token = reports.token()

        def enough():
            code, body = reports.get('%s/v1/hosts/%s/overview'
                                     % (url, base.NODE), token)
            self.assertEqual(200, code, body)
            lines = [body['timeline'].get(s, [])
                     for s in self.servers.values()]
            return all(sum(p['disk_read_mb_s'] is not None for p in line)
                       >= 2 for line in lines)
        base.wait_for('two timeline points per server', enough,
                      timeout=180, every=10)

    def rows(self, table):
        """The cells of a Horizon table's body rows, as text."""
        return [[c.strip() for c in row.locator('td').all_inner_texts()]
                for row in self.page.locator(
                    'table#%s tbody tr:not(.empty)' % table).all()]

    def check_index(self, plan):
        """The index: both compute hosts, and the audit's actions."""
        self.page.goto(base.aio.HORIZON + '/admin/watcher_cams/')
        hosts = {r[0]: r for r in self.rows('hosts')}
        self.assertEqual({n for n, _, _ in base.aio.COMPUTES}, set(hosts))
        self.assertIn('answers', hosts[base.NODE][-1])
        # The audit's actions are the newest: on the first page, each
        # instance by name, times as Horizon shows them (not ISO).
        actions = [r for r in self.rows('actions') if plan[:8] in r[6]]
        self.assertEqual(set(self.servers), {r[3] for r in actions})
        for row in actions:
            self.assertNotRegex(row[0], ISO_TIME)
        self.shoot('dashboard-index.png')

    def test_panel_shows_what_the_cloud_says(self):
        plan = self.margin_audit()
        sizes = {name: base.actual_mb(server_id)
                 for name, server_id in self.servers.items()}
        self.wait_for_timelines()
        self.sign_in()

        self.check_index(plan)

        # The host: the servers by name, with libvirt's balloon sizes.
        self.page.click('a[href$="/hosts/%s/"]' % base.NODE)
        self.page.wait_for_selector('table#instances')
        instances = {r[0]: r for r in self.rows('instances')}
        for name, size in sizes.items():
            self.assertIn(name, instances)
            row = instances[name]
            self.assertEqual(['512 MiB', '%d MiB' % size],
                             row[2:4], row)
            self.assertLess(size, 512)
            # The floor the agent keeps, and the figures from the guest.
            floor = int(row[4].split()[0])
            self.assertLessEqual(floor, size)
            self.assertTrue(row[-1].startswith('ok'), row)
            # What QEMU read for it, measured on the host.
            self.assertRegex(row[9], r'^\d[\d.e+-]* MiB/s$', row)
            # The margin controller's estimate, from the action's reason.
            self.assertRegex(row[-2], r'^committed \d+ MiB \+ margin '
                             r'\d+ MiB$')
        actions = [r for r in self.rows('actions')
                   if plan[:8] in r[6]]
        self.assertEqual(set(sizes), {r[3] for r in actions})
        for row in actions:
            self.assertNotRegex(row[0], ISO_TIME)
            self.assertEqual('cams_host_balloon', row[1])
            self.assertEqual('SUCCEEDED', row[5])
            self.assertIn('%s (SUCCEEDED)' % plan[:8], row[6])
            self.assertEqual('margin_balloon', row[7])
            # Which signal decided it: only utility moves say.
            self.assertEqual('-', row[8])
            self.assertIn('-> %d MiB' % sizes[row[3]], row[4])
        # Balloon sizes, page caches, reads as the guests say and as the
        # host measured them.
        self.assertEqual(4, self.page.locator('svg.cams-chart').count())
        self.assertGreaterEqual(len(self.rows('llc')), 2)
        path = self.shoot('dashboard-%s.png' % base.NODE)
        self.addDetail('screenshot', content.text_content(path))

        # A host without an agent: the page says so, with the reason.
        self.page.goto(base.aio.HORIZON
                       + '/admin/watcher_cams/hosts/cmp-nowhere/')
        alert = self.page.locator('.cams-agent-error').inner_text()
        self.assertIn('cmp-nowhere did not answer', alert)
        self.shoot('dashboard-no-agent.png')
