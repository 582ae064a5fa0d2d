"""The project's tempest plugin, run by tempest against the cloud.

``tools/aio/aio.py tempest`` makes a workspace, writes tempest.conf from
the cloud and runs every test of watcher_cams_tempest_plugin. Each of them
must pass: a skipped test (a missing option, the plugin not loaded) fails
this test as well.
"""

import os
import re
import subprocess
import sys

import testtools

from tests.cloud import base

API_TESTS = 4
SCENARIO_TESTS = 2


class TestTempestPlugin(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()

    def test_every_plugin_test_passes(self):
        out = subprocess.run(
            [sys.executable, os.path.join(base.TOP, 'tools', 'aio',
                                          'aio.py'), 'tempest'],
            capture_output=True, text=True, timeout=2400)
        report = out.stdout[-6000:] + out.stderr[-3000:]
        print(report)
        self.assertEqual(0, out.returncode, report)
        totals = dict((key, int(n)) for key, n in re.findall(
            r'^ - (Passed|Skipped|Failed): (\d+)$', out.stdout, re.M))
        self.assertEqual({'Passed': API_TESTS + SCENARIO_TESTS,
                          'Skipped': 0, 'Failed': 0}, totals, report)
