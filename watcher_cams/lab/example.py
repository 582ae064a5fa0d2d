"""The CAMS paper's example host, as agent reports, with a feedback model.

One host, two guests of equal size (papers.md, section 1): VM1 reads 256 KiB
files with a hot/cold (80/20) pattern at a light rate, VM2 reads uniformly
over a huge range at ``rate_ratio`` times VM1's rate. Each guest's counters
come from an analytic hit-ratio curve of its workload at its current cache
size, so applying a plan and taking the next report closes the loop of audit
cycles. This is a small stand-in for the simulator of the lab; it produces
exactly the report format of the agent (:mod:`watcher_cams.policy.report`).
"""

import dataclasses

from watcher_cams.policy import model
from watcher_cams.policy import report as report_format

PAGE_KB = model.PAGE_KB
MB = 1024  # KiB per MiB
# How long the guests ran before the example begins (s).
RAN_BEFORE_S = 3600


@dataclasses.dataclass
class Workload:
    """Reads over ``range_mb`` MiB; ``hot_share`` of them in ``hot_mb``."""

    range_mb: float
    hot_mb: float
    hot_share: float
    reads_mb_s: float
    active_share: float

    def hit_ratio(self, cache_mb):
        c = max(0.0, cache_mb)
        hot = self.hot_share * min(c, self.hot_mb) / self.hot_mb
        cold_mb = self.range_mb - self.hot_mb
        cold = (1 - self.hot_share) * (
            min(max(0.0, c - self.hot_mb), cold_mb) / cold_mb
            if cold_mb > 0 else 0.0)
        return hot + cold


def hot_cold(range_mb, reads_mb_s):
    return Workload(range_mb, 0.2 * range_mb, 0.8, reads_mb_s, 0.7)


def uniform(range_mb, reads_mb_s):
    return Workload(range_mb, range_mb, 1.0, reads_mb_s, 0.02)


@dataclasses.dataclass
class Guest:
    uuid: str
    name: str
    max_mb: int
    actual_mb: int
    used_mb: int
    workload: Workload
    counters: dict = dataclasses.field(default_factory=dict)


def sample_dict(timestamp, size_mb, used_mb, active_mb, counters):
    """One guest sample in the report format, page cache filling the rest."""
    cache = size_mb - used_mb
    return report_format.sample(timestamp, size_mb * MB, used_mb * MB,
                                cache * MB, active_mb * MB,
                                (cache - active_mb) * MB, used_mb * MB,
                                counters)


class PaperExample:
    """Host of ``host_mb`` with VM1 (hot/cold) and VM2 (uniform random)."""

    VM1 = '11111111-1111-4111-8111-111111111111'
    VM2 = '22222222-2222-4222-8222-222222222222'

    def __init__(self, host='cmp-a', host_mb=8192, range_gb=80,
                 rate_ratio=8, vm1_reads_mb_s=4.0, interval_s=60.0):
        self.host = host
        self.host_mb = host_mb
        self.interval_s = interval_s
        self.now = 1_000_000.0
        # Both start with an equal share; like the paper's VMs, either may
        # grow to most of the host (flavor memory above the share).
        each = (host_mb - 512) // 2
        most = host_mb - 1024
        self.guests = [
            Guest(self.VM1, 'vm1-hotcold', most, each, 384,
                  hot_cold(range_gb * 1024, vm1_reads_mb_s)),
            Guest(self.VM2, 'vm2-random', most, each, 384,
                  uniform(1024 * 1024, vm1_reads_mb_s * rate_ratio)),
        ]
        self.previous = {}
        for g in self.guests:
            g.counters = dict.fromkeys(
                ('pgpgin', 'pgmajfault', 'workingset_refault_file',
                 'workingset_activate_file'), 0)
            # They ran before the example begins: since booting they read
            # what their caches hold and more (utility grows a guest no
            # further than the data it read: cache_window.read_room_mb).
            w = g.workload
            g.counters['pgpgin'] = int(w.reads_mb_s * RAN_BEFORE_S * (
                1 - w.hit_ratio(self._cache_mb(g))) * MB)
        self._advance()
        self._advance()

    def _cache_mb(self, g):
        return max(0, g.actual_mb - g.used_mb)

    def _advance(self):
        """Run the workloads for one interval at the current sizes."""
        self.previous = {g.uuid: self._sample(g) for g in self.guests}
        self.now += self.interval_s
        for g in self.guests:
            w, cache = g.workload, self._cache_mb(g)
            active = w.active_share * cache
            hit = w.hit_ratio(cache)
            miss_mb = w.reads_mb_s * (1 - hit) * self.interval_s
            near = w.reads_mb_s * (w.hit_ratio(cache + active) - hit)
            far = w.reads_mb_s * (w.hit_ratio(cache + active + cache) - hit)
            pages = MB / PAGE_KB
            g.counters['pgpgin'] += int(miss_mb * MB)
            g.counters['workingset_activate_file'] += int(
                near * self.interval_s * pages)
            g.counters['workingset_refault_file'] += int(
                far * self.interval_s * pages)

    def _sample(self, g):
        cache = self._cache_mb(g)
        return sample_dict(self.now, g.actual_mb, g.used_mb,
                           g.workload.active_share * cache, g.counters)

    def report(self):
        """The agent's report for this host now."""
        return report_format.host_report(
            self.host, self.now, self.host_mb, 512,
            [report_format.guest_entry(
                g.uuid, g.name, g.max_mb, g.actual_mb,
                sample=self._sample(g), previous=self.previous[g.uuid])
             for g in self.guests])

    def apply(self, targets):
        """Set balloon targets ({uuid: MiB}) and run one more interval."""
        for g in self.guests:
            if g.uuid in targets:
                g.actual_mb = int(targets[g.uuid])
        self._advance()

    def sizes(self):
        return {g.uuid: g.actual_mb for g in self.guests}

    def disk_read_mb_s(self):
        return {g.uuid: g.workload.reads_mb_s
                * (1 - g.workload.hit_ratio(self._cache_mb(g)))
                for g in self.guests}
