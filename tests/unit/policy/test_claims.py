"""A guest's claims against what the host measured for it."""

import testtools

from tests.unit import factory
from watcher_cams.policy import claims
from watcher_cams.policy import guards
from watcher_cams.policy import host_io
from watcher_cams.policy import report
from watcher_cams.policy import utility

CFG = guards.GuardConfig()
KB = 1024
WINDOW_S = 60.0


def entry(n, actual_mb, max_mb=4096, used_mb=256, active_mb=None,
          pgpgin_mb_s=0.0, refault_s=0.0, activate_s=0.0, psi=0.0,
          host_read_mb_s=0.0):
    """A report's guest entry: two samples WINDOW_S apart and host_io."""
    cache_mb = actual_mb - used_mb
    active_mb = cache_mb if active_mb is None else active_mb

    def sample(t, seconds):
        vmstat = {'pgpgin': int(pgpgin_mb_s * seconds * KB),
                  'pgmajfault': 0,
                  'workingset_refault_file': int(refault_s * seconds),
                  'workingset_activate_file': int(activate_s * seconds)}
        return report.sample(t, actual_mb * KB, used_mb * KB, cache_mb * KB,
                             active_mb * KB, (cache_mb - active_mb) * KB,
                             used_mb * KB, vmstat, psi)
    io = host_io.HostIo(window_s=WINDOW_S, start_mb=actual_mb,
                        end_mb=actual_mb, read_mb_s=host_read_mb_s,
                        read_req_s=host_read_mb_s * 16)
    return report.guest_entry(
        factory.uid(n), 'g%d' % n, max_mb, actual_mb,
        sample=sample(1000.0 + WINDOW_S, WINDOW_S),
        previous=sample(1000.0, 0), host_io=io.as_dict())


def plan(*entries, ram_mb=4608):
    view = report.parse_host(report.host_report(
        'cmp-a', 1060.0, ram_mb, 0, list(entries)))
    moves = {m.instance: m.delta_mb for m in utility.plan(view, CFG).moves}
    return view, moves


class TestDisagreement(testtools.TestCase):

    def view(self, **kw):
        return report.parse_guest(entry(1, 2048, **kw))

    def test_honest_counters_within_the_tolerance_are_believed(self):
        for claimed, measured in ((0.0, 0.0), (10.0, 10.0), (12.0, 10.0),
                                  (1.0, 0.0), (5.0, 20.0)):
            guest = self.view(pgpgin_mb_s=claimed, host_read_mb_s=measured)
            self.assertIsNone(guest.problem, (claimed, measured))
            self.assertTrue(guest.has_data)

    def test_reads_or_refaults_beyond_the_host_reads_are_not(self):
        for kw in (dict(pgpgin_mb_s=200.0, host_read_mb_s=0.5),
                   dict(pgpgin_mb_s=14.0, host_read_mb_s=10.0),
                   # 50,000 refaults/s are 195 MiB/s read back in.
                   dict(pgpgin_mb_s=0.5, refault_s=50000,
                        host_read_mb_s=0.5)):
            guest = self.view(**kw)
            self.assertFalse(guest.has_data, kw)
            self.assertIsNone(guest.previous)
            self.assertTrue(guest.problem.startswith(claims.DISAGREE), kw)
            # Still measured: the host's figures stay.
            self.assertEqual(kw['host_read_mb_s'], guest.host_io.read_mb_s)

    def test_nothing_to_compare_is_no_disagreement(self):
        data = entry(1, 2048, pgpgin_mb_s=200.0)
        data['host_io'] = None
        self.assertIsNone(report.parse_guest(data).problem)


class TestGamingTheAllocator(testtools.TestCase):
    """A guest that claims huge reads, refaults and PSI 100 gains nothing.

    Its neighbour's working set is all cached and reads nothing; the host
    has no free memory, so the liar could only grow by shrinking it.
    """

    def liar(self, host_read_mb_s):
        return entry(1, 2048, active_mb=1700, pgpgin_mb_s=200.0,
                     refault_s=40000, activate_s=40000, psi=100.0,
                     host_read_mb_s=host_read_mb_s)

    def neighbour(self):
        return entry(2, 2560, active_mb=300, host_read_mb_s=0.0)

    def test_believed_the_claims_would_move_memory(self):
        # The premise: were the host to measure what the liar claims, the
        # allocator would give it the neighbour's memory.
        _, moves = plan(self.liar(host_read_mb_s=200.0), self.neighbour())
        self.assertGreater(moves.get(factory.uid(1), 0), 0)

    def test_the_liar_gains_nothing_and_the_neighbour_keeps_all(self):
        view, moves = plan(self.liar(host_read_mb_s=0.5), self.neighbour())
        self.assertEqual({}, moves)
        liar, neighbour = view.guests
        self.assertTrue(liar.problem.startswith(claims.DISAGREE))
        self.assertIsNone(neighbour.problem)


class TestPhysicalBounds(testtools.TestCase):

    def committed(self, committed_kb, rss_kb=None, max_mb=2048):
        data = entry(1, 1024, max_mb=max_mb)
        for key in ('sample', 'previous'):
            data[key]['meminfo']['Committed_AS'] = committed_kb
        if rss_kb is not None:
            data['balloon'] = {'rss': rss_kb, 'actual': 1024 * KB}
        return report.parse_guest(data)

    def test_committed_as_is_bounded_by_size_and_host_rss(self):
        huge = 1 << 61
        self.assertEqual(2048 * KB,
                         self.committed(huge).sample.committed_as_kb)
        guest = self.committed(huge, rss_kb=600 * KB)
        self.assertEqual(600 * KB, guest.sample.committed_as_kb)
        self.assertEqual(600 * KB, guest.previous.committed_as_kb)
        # The floor follows what the guest can really hold, not its max.
        self.assertEqual(600 + CFG.floor_margin_mb,
                         guards.floor_mb(guest, CFG))
        # Honest overcommit within the bounds is kept as it is.
        self.assertEqual(500 * KB, self.committed(
            500 * KB, rss_kb=600 * KB).sample.committed_as_kb)


class TestBackwards(testtools.TestCase):

    def test_counters_going_backwards_are_flagged_not_frozen_silently(self):
        data = entry(1, 2048, pgpgin_mb_s=5.0, host_read_mb_s=5.0)
        data['previous']['vmstat']['pgpgin'] = (
            data['sample']['vmstat']['pgpgin'] + 1)
        guest = report.parse_guest(data)
        self.assertTrue(claims.went_backwards(guest).startswith(
            claims.BACKWARDS))
        # Its samples stay: a reboot does not make what it uses untrue.
        self.assertTrue(guest.has_data)
        self.assertIsNone(claims.went_backwards(report.parse_guest(
            entry(1, 2048, pgpgin_mb_s=5.0, host_read_mb_s=5.0))))
