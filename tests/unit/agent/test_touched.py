"""The touched-memory collector on a fake /proc tree."""

import os

import fixtures
import testtools

from watcher_cams.agent.collectors import touched
from watcher_cams.policy import host_io

MAPS = ('00001000-00003000 rw-p 00000000 00:00 0 [heap]\n'
        '7f0000000000-7f0040000000 rwxp 00000000 00:00 0 \n'
        '7f1000000000-7f1040000000 rw-p 00000000 00:00 0 \n')


def smaps(ram_referenced_kb, tcg_referenced_kb=900000):
    """An smaps whose TCG buffer and guest RAM say what they touched."""
    return ('00001000-00003000 rw-p 00000000 00:00 0 [heap]\n'
            'Size:                  8 kB\nReferenced:            8 kB\n'
            '7f0000000000-7f0040000000 rwxp 00000000 00:00 0 \n'
            'Size:            1048576 kB\n'
            'Referenced:      %d kB\n'
            '7f1000000000-7f1040000000 rw-p 00000000 00:00 0 \n'
            'Size:            1048576 kB\nRss:             600000 kB\n'
            'Referenced:      %d kB\nAnonymous:       600000 kB\n'
            % (tcg_referenced_kb, ram_referenced_kb))


class TestTouched(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.proc = os.path.join(self.root, 'proc', '7')
        os.makedirs(self.proc)
        self.write('maps', MAPS)
        self.write('clear_refs', '')
        self.set_referenced(0)

    def write(self, name, text):
        with open(os.path.join(self.proc, name), 'w') as f:
            f.write(text)

    def set_referenced(self, mb):
        self.write('smaps', smaps(mb * 1024))

    def cleared(self):
        with open(os.path.join(self.proc, 'clear_refs')) as f:
            return f.read()

    def test_the_guest_ram_mapping_alone_counts(self):
        self.set_referenced(300)
        self.assertEqual(300.0, touched.ram_referenced_mb(7, self.root))

    def test_a_window_reports_its_half_its_end_and_its_least_size(self):
        mem = touched.TouchedMemory(600, self.root)
        self.assertIsNone(mem.update('a', 7, 1024, 0.0))
        self.assertEqual('1', self.cleared())
        self.write('clear_refs', '')
        self.set_referenced(200)
        self.assertIsNone(mem.update('a', 7, 768, 300.0))
        self.set_referenced(350)
        self.assertEqual(host_io.Touched(350.0, 200.0, 610.0, 610.0, 768),
                         mem.update('a', 7, 1024, 610.0))
        self.assertEqual('1', self.cleared())
        # The next window starts at the size the guest has now.
        self.set_referenced(100)
        mem.update('a', 7, 1024, 910.0)
        self.assertEqual(host_io.Touched(100.0, 100.0, 600.0, 1210.0, 1024),
                         mem.update('a', 7, 1024, 1210.0))

    def test_a_new_qemu_process_starts_again(self):
        mem = touched.TouchedMemory(600, self.root)
        mem.update('a', 7, 1024, 0.0)
        mem.update('a', 7, 1024, 300.0)
        mem.update('a', 7, 1024, 600.0)
        os.makedirs(os.path.join(self.root, 'proc', '8'))
        os.rename(os.path.join(self.root, 'proc', '7'),
                  os.path.join(self.root, 'proc', '9'))
        self.proc = os.path.join(self.root, 'proc', '8')
        self.write('maps', MAPS)
        self.write('clear_refs', '')
        self.set_referenced(50)
        self.assertIsNone(mem.update('a', 8, 1024, 650.0))

    def test_a_vanished_process_is_one_log_line_and_no_figure(self):
        logger = self.useFixture(fixtures.FakeLogger())
        mem = touched.TouchedMemory(600, self.root)
        mem.update('a', 7, 1024, 0.0)
        os.remove(os.path.join(self.proc, 'smaps'))
        self.assertIsNone(mem.update('a', 7, 1024, 300.0))
        # Failing again (the clear is refused) is not logged again.
        os.remove(os.path.join(self.proc, 'clear_refs'))
        os.makedirs(os.path.join(self.proc, 'clear_refs'))
        self.assertIsNone(mem.update('a', 7, 1024, 330.0))
        self.assertEqual(1, logger.output.count('touched memory not'))
        # It starts anew once it works.
        os.rmdir(os.path.join(self.proc, 'clear_refs'))
        self.write('clear_refs', '')
        self.set_referenced(10)
        self.assertIsNone(mem.update('a', 7, 1024, 360.0))
        self.assertIsNone(mem.update('a', 7, 1024, 660.0))
        self.assertIsNotNone(mem.update('a', 7, 1024, 960.0))
        self.assertEqual(1, logger.output.count('touched memory not'))

    def test_no_window_no_measurement(self):
        mem = touched.TouchedMemory(0, self.root)
        self.assertIsNone(mem.update('a', 7, 1024, 0.0))
        self.assertEqual('', self.cleared())

    def test_forgotten_guests(self):
        mem = touched.TouchedMemory(600, self.root)
        mem.update('a', 7, 1024, 0.0)
        mem.keep_only({'b': None})
        self.write('clear_refs', '')
        self.assertIsNone(mem.update('a', 7, 1024, 700.0))
        self.assertEqual('1', self.cleared())
