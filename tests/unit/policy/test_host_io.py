"""Host-measured reads and balloon counters over a window."""

import testtools

from watcher_cams.policy import host_io
from watcher_cams.policy import report

MB = 1 << 20


def disk(dev, req, mb):
    return {'dev': dev, 'cache': 'none', 'rd_req': req, 'rd_bytes': mb * MB}


def sample(t, disks, actual_mb=1024, pid=7, cpu_ns=None, touched=None,
           **balloon):
    return host_io.io_sample(t, pid, actual_mb, disks, balloon, cpu_ns,
                             touched)


class TestHostIo(testtools.TestCase):

    def test_rates_per_disk_and_summed(self):
        before = sample(100, [disk('vda', 10, 1), disk('vdb', 0, 0)],
                        major_fault=5, swap_in=0, rss=9)
        after = sample(130, [disk('vda', 40, 4), disk('vdb', 300, 60)],
                       actual_mb=768, major_fault=65, swap_in=0, rss=1)
        io = host_io.window(after, before)
        self.assertEqual(30, io.window_s)
        self.assertEqual((1024, 768, True),
                         (io.start_mb, io.end_mb, io.resized))
        self.assertAlmostEqual((3 + 60) / 30, io.read_mb_s)
        self.assertAlmostEqual((30 + 300) / 30, io.read_req_s)
        self.assertEqual([('vda', 0.1, 1.0), ('vdb', 2.0, 10.0)],
                         [(d.dev, d.read_mb_s, d.read_req_s)
                          for d in io.disks])
        # Counters only; rss is a level and is not made a rate.
        self.assertEqual((('major_fault', 2.0), ('swap_in', 0.0)),
                         io.balloon_s)

    def test_no_window_across_restarts_disk_changes_or_backwards(self):
        before = sample(0, [disk('vda', 10, 10)])
        for after in (sample(30, [disk('vda', 20, 20)], pid=8),
                      sample(30, [disk('vdb', 20, 20)]),
                      sample(30, [disk('vda', 5, 20)]),
                      sample(30, [disk('vda', 20, 5)]),
                      sample(0, [disk('vda', 20, 20)])):
            self.assertIsNone(host_io.window(after, before), after)
        self.assertIsNone(host_io.window(before, None))

    def test_cpu_time_per_second_when_both_ends_have_it(self):
        before = sample(100, [disk('vda', 0, 0)], cpu_ns=5 * 10 ** 9)
        after = sample(130, [disk('vda', 0, 0)], cpu_ns=8 * 10 ** 9)
        self.assertAlmostEqual(0.1, host_io.window(after, before).cpu_s)
        for one, other in ((after, sample(100, [disk('vda', 0, 0)])),
                           (sample(130, [disk('vda', 0, 0)]), before),
                           (sample(130, [disk('vda', 0, 0)], cpu_ns=1),
                            before)):
            self.assertIsNone(host_io.window(one, other).cpu_s)

    def test_a_disk_without_statistics_is_left_out(self):
        s = sample(0, [disk('vda', 1, 1), {'dev': 'vdb', 'cache': 'none'}])
        self.assertEqual(['vda'], list(s['reads']))

    def test_report_round_trip_and_bad_parts_dropped(self):
        io = host_io.window(sample(30, [disk('vda', 40, 4)], major_fault=9,
                                   cpu_ns=9 * 10 ** 8),
                            sample(0, [disk('vda', 10, 1)], major_fault=0,
                                   cpu_ns=0))
        self.assertAlmostEqual(0.03, io.cpu_s)
        entry = report.guest_entry('u', 'g', 1024, 1024,
                                   host_io=io.as_dict(), agent='missing',
                                   error='no agent')
        view = report.parse_guest(entry)
        self.assertEqual(io.as_dict(), view.host_io.as_dict())
        self.assertFalse(view.has_data)  # no agent, still measured
        for bad in ({'window_s': 0}, dict(io.as_dict(), read_mb_s=-1.0),
                    dict(io.as_dict(), read_mb_s=float('nan')),
                    dict(io.as_dict(), disks=[{'dev': ''}]),
                    dict(io.as_dict(), balloon_s={'major_fault': 'x'}),
                    dict(io.as_dict(), cpu_s=-0.1),
                    dict(io.as_dict(), cpu_s=1e6)):
            entry['host_io'] = bad
            self.assertIsNone(report.parse_guest(entry).host_io, bad)

    def test_touched_memory_round_trip_and_bad_figures_dropped(self):
        touched = host_io.Touched(mb=812.0, half_mb=790.0, window_s=600.0,
                                  ended_at=1600.0, least_mb=1024)
        io = host_io.window(
            sample(30, [disk('vda', 40, 4)], touched=touched),
            sample(0, [disk('vda', 10, 1)]))
        self.assertEqual(1000.0, io.touched.started_at)
        entry = report.guest_entry('u', 'g', 1024, 1024,
                                   host_io=io.as_dict())
        self.assertEqual(touched, report.parse_guest(entry).host_io.touched)
        for bad in (dict(mb=-1.0), dict(half_mb=900.0), dict(window_s=0.0),
                    dict(least_mb='x'), dict(ended_at=None)):
            entry['host_io'] = dict(io.as_dict(), touched=dict(
                io.as_dict()['touched'], **bad))
            self.assertIsNone(report.parse_guest(entry).host_io, bad)
