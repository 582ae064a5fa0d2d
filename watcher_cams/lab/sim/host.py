"""Simulated guests on one host, seen through the agent's report format.

A :class:`SimGuest` has a balloon size, memory its processes commit, a page
cache (:class:`~watcher_cams.lab.sim.cache.LinuxCache`, or any object with
``access``/``resize``) and a workload. A :class:`SimHost` runs its guests'
accesses in steps of simulated time, optionally through a host page cache
under the guests (double caching), and reports them in exactly the dict the
compute-node agent returns (:mod:`watcher_cams.policy.report`), so policies
see the simulator the way they see real guests.

Memory is MiB; a block is ``block_kb`` KiB; guest counters keep the units the
guest kernel reports (meminfo and pgpgin KiB, refaults and activations in
4 KiB pages).
"""

import dataclasses
import math
from typing import Optional

from watcher_cams.lab.sim import cache as cache_mod
from watcher_cams.policy import host_io
from watcher_cams.policy import model
from watcher_cams.policy import report as report_format

PAGE_KB = model.PAGE_KB
KB = 1024
# CPU time a guest runs (what the host measures of it, host_io.cpu_s): an
# idle kernel's ticks, and the work of an application that reads its data
# (the system calls, the copies, using what it read: 100 MiB/s per CPU),
# from its cache or from disk alike.
IDLE_CPU_S = 0.003
CPU_S_PER_MB = 0.01


@dataclasses.dataclass
class Traffic:
    """Bytes one guest read, and what reached the disk, in KiB."""

    app_kb: int = 0
    guest_miss_kb: int = 0
    disk_kb: int = 0

    def add(self, other):
        self.app_kb += other.app_kb
        self.guest_miss_kb += other.guest_miss_kb
        self.disk_kb += other.disk_kb

    @property
    def io_reduction(self):
        return 1.0 - self.disk_kb / self.app_kb if self.app_kb else 0.0


# What a guest's counters claim (SimGuest.claims): what its kernel counts,
# or forged by its tenant: every read a refault within an active list of
# FORGED_ACTIVE_SHARE of its cache, every refault activated, PSI 100 (the
# most a cache's next MiB could seem worth). Its reads stay what it read:
# a claim of more than the host read for it is not believed at all
# (policy.claims), so a forger keeps within it.
HONEST, FORGED = 'honest', 'forged'
# The agent's touched window (its touched_window option, seconds).
TOUCH_WINDOW_S = 600.0
CLAIMS = (HONEST, FORGED)
FORGED_ACTIVE_SHARE = 0.125


class SimGuest:
    """One guest: balloon size, committed memory, page cache, workload."""

    def __init__(self, uuid, name, max_mb, size_mb, workload, block_kb,
                 base_mb=None, shared_mb=0, cache=None, agent=True,
                 claims=HONEST):
        self.uuid = uuid
        # False: no guest agent; the report carries the balloon's figures.
        self.agent = agent
        self.claims = claims
        self.name = name
        self.max_mb = int(max_mb)
        self.size_mb = int(size_mb)
        self.base_mb = base_mb
        self.shared_mb = shared_mb
        self.workload = workload
        self.block_kb = block_kb
        self.committed_mb = workload.phases[0].committed_mb
        self.used_mb = workload.phases[0].anon_mb
        self.cache = cache if cache is not None else cache_mod.LinuxCache(
            0, block_gib=block_kb / (KB * KB))
        self.traffic = Traffic()
        self.pgpgin_kb = 0
        # What QEMU read for the guest's disk (its block statistics): the
        # guest cache's misses, whatever the guest reports.
        self.disk_read_kb = 0
        self.disk_read_req = 0
        self.cpu_ns = 0
        self.psi_some = 0.0
        self.activated_pages_seen = 0
        self.touched = TouchedBits(int(size_mb))
        # Free memory above the low watermark (KiB): see reclaim().
        self.free_slack_kb = 0
        self.policy_state = {}
        self.resize(self.size_mb)

    @property
    def pages_per_block(self):
        return self.block_kb // PAGE_KB

    @property
    def cache_blocks(self):
        """Blocks the cache may hold at the current size and commitment."""
        return max(0, (self.size_mb - self.used_mb) * KB
                   // self.block_kb)

    def resize(self, size_mb):
        """Balloon to ``size_mb``; a smaller cache evicts at once."""
        self.size_mb = int(min(size_mb, self.max_mb))
        self.touched.resized(self.size_mb)
        self.cache.resize(self.cache_blocks)

    def set_memory(self, phase):
        """Committed and used memory of the processes in ``phase``."""
        self.committed_mb = phase.committed_mb
        if phase.anon_mb != self.used_mb:
            self.used_mb = phase.anon_mb
            self.cache.resize(self.cache_blocks)

    def watermark_gap_kb(self):
        """Gap between the kernel's low and high free-memory watermarks.

        About max(min_free_kbytes / 4, 0.1% of memory), with min_free_kbytes
        = 4 * sqrt(lowmem KiB) (mm/page_alloc.c).
        """
        size_kb = self.size_mb * KB
        return max(int(math.sqrt(size_kb)), size_kb // 1000, 1)

    def reclaim(self, miss_kb):
        """Free memory after ``miss_kb`` of reads into a full cache.

        Every miss takes free pages; when free memory falls below the low
        watermark kswapd reclaims cache until the high one. So a guest whose
        full cache churns shows a Cached figure that moves by up to the
        watermark gap between samples, while an idle one shows a constant
        figure: the signal the Balloon Controller reads as "the cache
        changes".
        """
        if miss_kb and len(self.cache) >= self.cache.capacity:
            self.free_slack_kb = (self.free_slack_kb - miss_kb) \
                % self.watermark_gap_kb()

    def vmstat(self):
        pages = self.pages_per_block
        refaults, activations = (self.cache.refaults * pages,
                                 self.cache.activations * pages)
        if self.claims == FORGED:
            refaults = activations = self.pgpgin_kb // PAGE_KB
        return {'pgpgin': self.pgpgin_kb, 'pgmajfault': 0,
                'workingset_refault_file': refaults,
                'workingset_activate_file': activations,
                'pgactivate': getattr(self.cache, 'promotions', 0) * pages}

    def sample(self, now):
        c = self.cache
        cached = len(c) * self.block_kb
        active = len(getattr(c, 'active', ())) * self.block_kb
        psi = self.psi_some
        if self.claims == FORGED:
            active, psi = int(cached * FORGED_ACTIVE_SHARE), 100.0
        inactive = cached - active
        slack = min(self.free_slack_kb, inactive)
        return report_format.sample(
            now, self.size_mb * KB, self.used_mb * KB, cached - slack,
            active, inactive - slack, self.committed_mb * KB, self.vmstat(),
            psi)

    def balloon(self):
        """What its balloon driver reports (libvirt's memoryStats, KiB)."""
        s = self.sample(0.0)['meminfo']
        return {'actual': self.size_mb * KB, 'available': s['MemTotal'],
                'usable': s['MemAvailable'], 'disk_caches': s['Cached'],
                'major_fault': 0}

    def io_sample(self, now):
        """QEMU's counters of the guest (host_io.io_sample), one disk."""
        return host_io.io_sample(
            now, 1, self.size_mb, [{'dev': 'vda', 'rd_req': self.disk_read_req,
                                    'rd_bytes': self.disk_read_kb * KB}], {},
            self.cpu_ns, touched=self.touched.last)

    def touched_mb(self, blocks):
        """Guest RAM ``blocks`` distinct blocks read touched (MiB).

        Its processes' memory and the cache pages those reads used: no
        more than its cache holds.
        """
        cache_mb = min(blocks, self.cache.capacity) * self.block_kb / KB
        return min(self.size_mb, self.used_mb + cache_mb)


class TouchedBits:
    """What the agent's touched collector measures of one guest.

    The blocks read since its window (host_io.TouchedWindow) began;
    ``last``: the last whole window as host_io.io_sample takes it
    (agent.collectors.touched.TouchedMemory.update).
    """

    def __init__(self, size_mb):
        self.blocks = set()
        self.window = host_io.TouchedWindow(0.0, size_mb)
        self.last = None

    def resized(self, size_mb):
        self.window.saw_size(size_mb)

    def advance(self, guest, now):
        """Halve or end the window as the agent's collection would."""
        ended = self.window.advance(now, TOUCH_WINDOW_S, lambda: (
            guest.touched_mb(len(self.blocks))))
        if ended is not None:
            self.last = ended
            self.blocks = set()
            self.window = host_io.TouchedWindow(now, guest.size_mb)


class KsmModel:
    """Merged pages from content identical across guests.

    Guests with ``shared_mb`` > 0 hold that much content identical to one
    another; ksmd merges it over ``ramp_s`` seconds after start. Saved memory
    is what the kernel's ``pages_sharing`` reports: every copy but one.
    """

    def __init__(self, ramp_s=300.0):
        self.ramp_s = ramp_s

    def saved_mb(self, guests, now):
        shared = sorted(g.shared_mb for g in guests if g.shared_mb > 0)
        if len(shared) < 2:
            return 0.0
        # The smallest common content is in every guest; a guest's extra
        # shared content is identical to at least the largest one's.
        saved = sum(shared[:-1])
        return saved * min(1.0, now / self.ramp_s if self.ramp_s else 1.0)


class SimHost:
    """A host: RAM, guests, optional KSM and an optional host page cache."""

    def __init__(self, name, ram_mb, guests, reserved_mb=512,
                 host_cache_mb=0, block_kb=4096, ksm=None, disk_mb_s=200.0,
                 rate_window_s=0.0):
        self.name = name
        self.ram_mb = ram_mb
        self.reserved_mb = reserved_mb
        self.guests = list(guests)
        self.block_kb = block_kb
        self.ksm = ksm
        self.disk_mb_s = disk_mb_s
        self.host_cache = None
        if host_cache_mb:
            self.host_cache = cache_mod.LinuxCache(
                host_cache_mb * KB // block_kb,
                block_gib=block_kb / (KB * KB))
        self.now = 0.0
        self.overcommit_mb = 0.0
        # As the agent does: rates over the newest sample at least this old.
        self.history = report_format.SampleHistory(rate_window_s)
        self.io_history = report_format.SampleHistory(rate_window_s)

    def ksm_saved_mb(self):
        return self.ksm.saved_mb(self.guests, self.now) if self.ksm else 0.0

    def step(self, dt, measure=True):
        """Run every guest's accesses for ``dt`` seconds."""
        per_guest = []
        for g in self.guests:
            g.set_memory(g.workload.phase_at(self.now))
            per_guest.append(g.workload.blocks(self.now, dt))
        traffic = [Traffic() for _ in self.guests]
        if self.host_cache is None:
            for g, blocks, t in zip(self.guests, per_guest, traffic):
                g.touched.blocks.update(blocks)
                access = g.cache.access
                misses = sum(1 for b in blocks if not access(b))
                t.app_kb = len(blocks) * g.block_kb
                t.guest_miss_kb = t.disk_kb = misses * g.block_kb
        else:
            self._step_through_host(per_guest, traffic)
        for g, t in zip(self.guests, traffic):
            g.pgpgin_kb += t.guest_miss_kb
            g.disk_read_kb += t.guest_miss_kb
            g.disk_read_req += t.guest_miss_kb // g.block_kb
            g.cpu_ns += int(1e9 * (IDLE_CPU_S * dt
                                   + CPU_S_PER_MB * t.app_kb / KB))
            g.reclaim(t.guest_miss_kb)
            if measure:
                g.traffic.add(t)
        self._update_psi(dt)
        self.now += dt
        total = sum(g.size_mb for g in self.guests)
        limit = self.ram_mb - self.reserved_mb + self.ksm_saved_mb()
        self.overcommit_mb = max(self.overcommit_mb, total - limit)
        return traffic

    def _step_through_host(self, per_guest, traffic):
        # Interleave the guests' accesses evenly over the step: the host
        # cache sees them in time order.
        events = sorted((i / len(blocks), gi, b)
                        for gi, blocks in enumerate(per_guest)
                        for i, b in enumerate(blocks))
        host = self.host_cache
        for g, blocks in zip(self.guests, per_guest):
            g.touched.blocks.update(blocks)
        for _, gi, b in events:
            g, t = self.guests[gi], traffic[gi]
            t.app_kb += g.block_kb
            if g.cache.access(b):
                continue
            t.guest_miss_kb += g.block_kb
            if not host.access((gi, b)):
                t.disk_kb += g.block_kb

    def _update_psi(self, dt):
        # Memory pressure stall: time spent re-reading pages the guest had
        # in its working set (activated refaults) at the disk's speed.
        for g in self.guests:
            pages = g.cache.activations * g.pages_per_block
            new, g.activated_pages_seen = (pages - g.activated_pages_seen,
                                           pages)
            stalled_s = new * PAGE_KB / KB / self.disk_mb_s
            g.psi_some = 100.0 * min(1.0, stalled_s / dt) if dt else 0.0

    def _sample(self, g):
        """The guest's sample as the agent reports it (see SimGuest.agent)."""
        if g.agent:
            return g.sample(self.now)
        return report_format.balloon_sample(self.now, g.balloon(),
                                            g.disk_read_kb * KB)

    def collect(self):
        """The agent's background collection: samples kept for rates."""
        for g in self.guests:
            self.history.add(g.uuid, self._sample(g))
            self.io_history.add(g.uuid, g.io_sample(self.now))

    def report(self):
        """The compute-node agent's report of this host now.

        Like the agent, each call records the samples it reports.
        """
        saved_pages = int(self.ksm_saved_mb() * 256)
        guests = []
        for g in self.guests:
            g.touched.advance(g, self.now)
            sample, io = self._sample(g), g.io_sample(self.now)
            window = host_io.window(io, self.io_history.add(g.uuid, io))
            guests.append(report_format.guest_entry(
                g.uuid, g.name, g.max_mb, g.size_mb, sample=sample,
                previous=self.history.add(g.uuid, sample),
                base_mb=g.base_mb, policy_state=g.policy_state,
                host_io=window and window.as_dict(),
                agent='ok' if g.agent else report_format.MISSING_AGENT))
        return report_format.host_report(
            self.name, self.now, self.ram_mb, self.reserved_mb, guests,
            ksm=report_format.ksm_counters(
                pages_shared=saved_pages // 2 if saved_pages else 0,
                pages_sharing=saved_pages))

    def guest(self, uuid) -> Optional[SimGuest]:
        for g in self.guests:
            if g.uuid == uuid:
                return g
        return None
