"""``watcher-cams-lab cloud``: the lab's experiment through Nova and Watcher.

A short version of the real-guest experiment on cmp-a: two Nova servers
with 768 MiB flavors and a 2 GB ephemeral disk, sized to 448 MiB each by an
actuator plan, read by the lab's readers through the guest agent
(hot/cold: 90% of reads in the first fifth, 410 MiB, more than a 448 MiB
guest caches; uniform over 2 GiB, whose cache barely pays). ``static``,
then ``cams-paper`` as a continuous audit (an audit template scoped to the
two servers, auto-trigger, 30 s): Watcher's applier moves memory from the
uniform reader to the hot/cold one, never more than the two had, and the
lab prints the same table as on bare libvirt.
"""

import json
import os
import tempfile

import testtools

from tests.cloud import base
from watcher_cams.lab import cloud
from watcher_cams.lab import real_guests as rg

START_MB = 448
SLACK_MB = 8
EXP = rg.Experiment(
    guests=(rg.GuestSpec('hotcold', 'hotcold', 768, START_MB),
            rg.GuestSpec('random', 'uniform', 768, START_MB)),
    # Five audits: paper mode's first move, a step of 128 MiB, came 38 to
    # 68 s in (four CI runs).
    data_mb=2048, duration_s=120, cycle_s=30, measure_from_s=60,
    strategies=('static', 'cams-paper'))


class TestLabOnTheCloud(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        self.lines = []
        self.lab = cloud.CloudLab(EXP, base.api(), base.NODE,
                                  base.libvirt_uri(), out=self.lines.append)
        self.addCleanup(self.lab.close)

    def test_static_then_paper_mode_as_a_continuous_audit(self):
        out = tempfile.mkdtemp(prefix='cams-cloud-lab-')
        rows, _ = rg.run(EXP, self.lab, out, self.lines.append,
                         stream=open(os.devnull, 'w'), scenario='cloud',
                         where='Nova (%s)' % base.NODE)
        text = '\n'.join(self.lines)
        self.assertIn('== cloud: 2 guests, 896 MiB', text)
        with open(os.path.join(out, 'results.json')) as f:
            results = json.load(f)
        self.assertEqual(['static', 'cams-paper'],
                         [r['strategy'] for r in results['rows']])
        for label, series in results['series'].items():
            for point in series:
                # Never more than the two had together.
                self.assertLessEqual(sum(point['size_mb'].values()),
                                     2 * START_MB + SLACK_MB,
                                     (label, point['t']))
        final = {r['strategy']: {n: g['final_mb']
                                 for n, g in r['guests'].items()}
                 for r in rows}
        for name, size in final['static'].items():
            self.assertLessEqual(abs(size - START_MB), SLACK_MB, final)
        # Paper mode moved memory to the hot/cold guest, through Watcher.
        self.assertGreaterEqual(final['cams-paper']['hotcold'],
                                START_MB + 64, final)
        self.assertLessEqual(final['cams-paper']['random'],
                             START_MB - 64, final)
        actions = results['actions']
        self.assertTrue(actions)
        self.assertEqual({('cams-paper', 'cams_host_balloon', 'SUCCEEDED')},
                         {(a['strategy'], a['action'], a['outcome'])
                          for a in actions})
        # Its servers are gone.
        self.assertFalse([s for s in self.lab.cloud.servers_on(base.NODE)
                          if s['name'].startswith(cloud.PREFIX)])
