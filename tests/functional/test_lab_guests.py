"""The real-guest lab end to end: booted guests, readers, audit cycles.

A short run of ``watcher-cams-lab guests`` (static, then utility) on two
small guests: the readers do all their reads through the guest agent, the
agent reports them, the real strategy plans, the real actions resize the
balloons, and the figures in results.json add up. The lab's own target
(the hot/cold guest reads >= 2x less) needs the full run and is printed by
the lab itself.
"""

import io
import json
import os
import subprocess
import tempfile

import testtools

from tests.functional import env
from watcher_cams.lab import real_guests as rg

DATA_MB = 1024
SLACK_MB = 8


class TestRealGuestLab(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.image_dir = os.environ.get(
            'CAMS_GUEST_DIR', os.path.join(env.TOP, '.cache', 'guest'))
        subprocess.run([os.path.join(env.TOP, 'tools', 'guest-image.sh'),
                        '--lab-data', str(DATA_MB), self.image_dir],
                       check=True, stdout=subprocess.DEVNULL)
        self.exp = rg.Experiment(
            guests=(rg.GuestSpec('hotcold', 'hotcold', 768, 384),
                    rg.GuestSpec('random', 'uniform', 768, 384)),
            data_mb=DATA_MB, reads_per_s=100, duration_s=180, cycle_s=15,
            measure_from_s=90, strategies=('static', 'utility'),
            domain_type=env.DOMAIN_TYPE)

    def test_static_then_utility(self):
        out = tempfile.mkdtemp(prefix='cams-ft-lab-')
        lines = []
        rows, checks = rg.run(self.exp, self.image_dir, out, lines.append,
                              stream=io.StringIO(), uri=env.URI)
        with open(os.path.join(out, 'results.json')) as f:
            results = json.load(f)
        self.assertEqual(['static', 'utility'],
                         [r['strategy'] for r in results['rows']])
        for name in ('guests-disk-reads.png', 'guests-lab-memory.png',
                     'guests-lab-disk.png'):
            self.assertTrue(os.path.getsize(os.path.join(out, name)) > 0)
        self.assertIn('utility: hotcold reads', checks[0][0])

        block = self.exp.block_kib * 1024
        for row in rows:
            for name, g in row['guests'].items():
                # Every read the reader made was counted, and what reached
                # the disk is at most that plus filesystem metadata.
                self.assertEqual(self.exp.reads * block, g['app_read_bytes'],
                                 (row['strategy'], name))
                self.assertGreater(g['disk_read_bytes'], 0)
                self.assertLessEqual(g['disk_read_bytes'],
                                     g['app_read_bytes'] + 16 * rg.MB)

        static, utility = (results['series'][s] for s in ('static',
                                                          'utility'))
        for point in static:
            for g in self.exp.guests:
                self.assertLessEqual(
                    abs(point['size_mb'][g.name] - g.boot_mb), SLACK_MB)
        for point in utility:
            self.assertLessEqual(sum(point['size_mb'].values()),
                                 self.exp.budget_mb + SLACK_MB)
            self.assertIsNotNone(point['counters']['hotcold'])

        done = [a for a in results['actions'] if a['outcome'] == 'SUCCEEDED']
        self.assertTrue(done, results['actions'])
        # The last change of each guest took effect.
        final = utility[-1]['size_mb']
        for name in {a['guest'] for a in done}:
            last = [a for a in done if a['guest'] == name][-1]
            self.assertLessEqual(abs(final[name] - last['to_mb']), SLACK_MB)
        # Memory went where re-reads are: from the random reader to the
        # hot/cold one.
        self.assertGreater(final['hotcold'], final['random'])
