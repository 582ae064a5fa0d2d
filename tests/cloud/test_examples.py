"""The example audits of etc/watcher-cams/audits, run on the cloud.

Each script creates its audit template and continuous audit with the
openstack CLI, as an operator would run it. The scope (the scripts' SCOPE)
excludes every compute node, so the audits plan on an empty model and
change nothing the other tests rely on.
"""

import os
import subprocess

import testtools

from tests.cloud import base

EXAMPLES = os.path.join(base.TOP, 'etc', 'watcher-cams', 'audits')
RUNS = {
    'cache_aware_balloon': ('memory_cache_efficiency',
                            {'mode': 'paper', 'max_steps': 2}),
    'margin_balloon': ('memory_cache_efficiency', {'up_mb': 30}),
    'ksm_balloon': ('memory_cache_efficiency', {'mode': 'utility'}),
    'sharing_aware_pinning': ('cpu_cache_affinity', {'exact_limit': 4}),
}


class TestExampleAudits(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        self.scope = base.scope_file(self, None, ())

    def _run(self, strategy, parameters):
        template = 'cams-example-%s' % strategy
        env = dict(base.aio.admin_env(), TEMPLATE=template,
                   INTERVAL='3600', SCOPE=self.scope,
                   PATH=base.aio.BIN + os.pathsep + os.environ['PATH'])
        args = ['%s=%s' % kv for kv in parameters.items()]
        out = subprocess.run(
            [os.path.join(EXAMPLES, strategy + '.sh')] + args, env=env,
            capture_output=True, text=True, timeout=120)
        self.addCleanup(self._remove, template)
        self.assertEqual(0, out.returncode, out.stdout + out.stderr)
        return template

    def _audits(self, name):
        return [a for a in base.openstack('optimize', 'audit', 'list') or []
                if a['Name'] == name]

    def _remove(self, template):
        for a in self._audits(template):
            if a['State'] in ('ONGOING', 'PENDING'):
                base.openstack_quiet('optimize', 'audit', 'update',
                                     a['UUID'], 'replace', 'state=CANCELLED')
            base.openstack_quiet('optimize', 'audit', 'delete', a['UUID'])
        base.openstack_quiet('optimize', 'audittemplate', 'delete', template)

    def test_each_example_creates_its_continuous_audit(self):
        for strategy, (goal, parameters) in RUNS.items():
            template = self._run(strategy, parameters)
            shown = base.openstack('optimize', 'audittemplate', 'show',
                                   template)
            self.assertEqual((goal, strategy),
                             (shown['Goal'], shown['Strategy']))
            # The audit is named after its template (AUDIT's default).
            [audit] = self._audits(template)
            detail = base.openstack('optimize', 'audit', 'show',
                                    audit['UUID'])
            self.assertEqual('CONTINUOUS', detail['Audit Type'])
            self.assertEqual(3600, int(detail['Interval']))
            self.assertTrue(detail['Auto Trigger'])
            got = detail['Parameters']
            for name, value in parameters.items():
                self.assertEqual(value, got[name], strategy)
            # The first run happens at once; on an empty scope it plans
            # nothing and the audit waits for its next interval.
            base.wait_for('%s audit ran' % strategy, lambda: base.openstack(
                'optimize', 'audit', 'show', audit['UUID'])['State']
                in ('ONGOING', 'SUCCEEDED'), timeout=120)
