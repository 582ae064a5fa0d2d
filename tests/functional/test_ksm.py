"""Real KSM: pairwise sharing between two guests that cache the same file."""

import os
import time

from tests.functional import base
from tests.functional import env
from watcher_cams.agent.collectors import domains
from watcher_cams.agent.collectors import sharing
from watcher_cams.lab import guests as lab_guests
from watcher_cams.lab import ksm_tuning


class TestKsmSharing(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.enterContext(ksm_tuning.fast())

    def test_identical_guests_share_pages_pairwise(self):
        # Both guests' disks are overlays of one image: reading the data
        # file fills their page caches with the same bytes.
        for dom in (self.lab.a, self.lab.b):
            code, _ = lab_guests.guest_exec(dom, 'cat /mnt/data >/dev/null')
            self.assertEqual(0, code)
        data_pages = (os.path.getsize(self.lab.image.data)
                      - 32 * 1024 * 1024) // 4096
        manager = self.manager(sharing_interval=0)
        a, b = self.lab.uuids()

        def shared_pages():
            report = manager.get_report()
            pairs = {(p['a'], p['b']): p['pages'] for p in report['sharing']}
            return pairs.get(tuple(sorted((a, b))), 0), report

        deadline = time.monotonic() + 120
        pages, report = shared_pages()
        while pages < data_pages // 2 and time.monotonic() < deadline:
            time.sleep(2)
            pages, report = shared_pages()
        self.assertGreater(pages, data_pages // 2,
                           'KSM merged %d pages of %d' % (pages, data_pages))
        # Per-process counters are read before the matrix within a report,
        # and KSM keeps merging meanwhile: compare with the next report.
        _, report = shared_pages()
        # Host counters and per-process counters agree that merging happened.
        self.assertGreater(report['ksm']['pages_sharing'], 0)
        for uuid in (a, b):
            guest = env.guest(report, uuid)
            self.assertGreaterEqual(guest['ksm_merging_pages'], pages * 0.9)
            self.assertEqual(env.GUEST_MB * 256, guest['ram_pages'])
        self.assertGreater(report['accounting']['ksm_saved_mb'],
                           pages * 4096 / 2 ** 20 * 0.9)
        self.assertGreater(report['accounting']['ksm_promisable_mb'], 0)
        self.assertGreater(report['collection']['sharing_ms'], 0)

    def test_sharing_matrix_is_symmetric_and_within_ram(self):
        pids = {u: domains.qemu_pid(
            self.lab.conn.lookupByUUIDString(u).name())
            for u in self.lab.uuids()}
        frames = sharing.guest_ksm_frames(pids)
        for uuid, (ram_pages, ksm) in frames.items():
            self.assertEqual(env.GUEST_MB * 256, ram_pages)
            self.assertLessEqual(len(ksm), ram_pages)
        ab = sharing.pairwise(frames)
        ba = sharing.pairwise(dict(reversed(list(frames.items()))))
        self.assertEqual(ab, ba)
