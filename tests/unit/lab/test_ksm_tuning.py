"""KSM scans fast inside the context and is left as it was after."""

import os

import fixtures
import testtools

from watcher_cams.lab import ksm_tuning


class TestFastKsm(testtools.TestCase):

    def settings(self, **values):
        directory = self.useFixture(fixtures.TempDir()).path
        for name, value in values.items():
            with open(os.path.join(directory, name), 'w') as f:
                f.write(value + '\n')
        return directory

    def read(self, directory):
        return {name: ksm_tuning.setting(name, directory=directory)
                for name in ('pages_to_scan', 'sleep_millisecs', 'run')}

    def test_fast_inside_restored_after(self):
        before = {'pages_to_scan': '100', 'sleep_millisecs': '20',
                  'run': '1'}
        directory = self.settings(**before)
        with ksm_tuning.fast(directory):
            self.assertEqual(dict(ksm_tuning.FAST), self.read(directory))
        self.assertEqual(before, self.read(directory))

    def test_ksm_that_was_off_unmerges_before_it_stops(self):
        directory = self.settings(pages_to_scan='100', sleep_millisecs='20',
                                  run='0')
        written = []
        real = ksm_tuning.setting

        def spy(name, value=None, directory=ksm_tuning.KSM):
            if value is not None:
                written.append((name, value))
            return real(name, value, directory)
        self.useFixture(fixtures.MonkeyPatch(
            'watcher_cams.lab.ksm_tuning.setting', spy))
        with self.assertRaises(RuntimeError):
            with ksm_tuning.fast(directory):
                raise RuntimeError('the experiment failed')
        # Unmerged (2) before stopped (0), even after a failure.
        runs = [value for name, value in written if name == 'run']
        self.assertEqual(['1', '2', '0'], runs)
        self.assertEqual('0', real('run', directory=directory))
