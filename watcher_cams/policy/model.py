"""Views of hosts and guests that every policy reads, and the plans they emit.

Plain dataclasses only: the simulator, the strategies and the tests build
them directly, and the agent's reports are turned into them by
:mod:`watcher_cams.policy.report`. Memory sizes are MiB (ints) unless a name
says otherwise; kernel counters keep the units the kernel reports.
"""

import dataclasses
import enum
import functools
from typing import Mapping, Optional

PAGE_KB = 4
KB_PER_MB = 1024
MB_PER_PAGE = PAGE_KB / KB_PER_MB


@dataclasses.dataclass(frozen=True)
class GuestSample:
    """One reading of a guest's own counters (meminfo, vmstat, PSI).

    ``timestamp`` is seconds on the agent's clock. meminfo values are KiB,
    ``pgpgin`` is KiB, the other vmstat counters are pages, PSI averages are
    percent and ``psi_some_total_us`` microseconds.
    """

    timestamp: float
    mem_total_kb: int
    mem_available_kb: int
    cached_kb: int
    active_file_kb: int
    inactive_file_kb: int
    committed_as_kb: int
    pgpgin_kb: int = 0
    pgmajfault: int = 0
    workingset_refault_file: int = 0
    workingset_activate_file: int = 0
    # Pages moved to an active list (file and anon; 0 where not reported):
    # mostly pages hit again while on the inactive list.
    pgactivate: int = 0
    psi_some_avg10: Optional[float] = None
    psi_full_avg10: Optional[float] = None
    psi_some_total_us: Optional[int] = None

    @property
    def read_mb(self) -> float:
        """What the guest read from its disks since it booted (pgpgin)."""
        return self.pgpgin_kb / KB_PER_MB

    @property
    def refault_mb(self) -> float:
        """What it read again since it booted, evicted between (refaults)."""
        return self.workingset_refault_file * MB_PER_PAGE

    @property
    def file_lru_mb(self) -> float:
        """Page-cache pages on the file LRU lists (Cached plus Buffers)."""
        return (self.active_file_kb + self.inactive_file_kb) / KB_PER_MB

    @property
    def active_file_mb(self) -> float:
        return self.active_file_kb / KB_PER_MB

    @property
    def inactive_file_mb(self) -> float:
        return self.inactive_file_kb / KB_PER_MB

    @property
    def committed_mb(self) -> float:
        return self.committed_as_kb / KB_PER_MB

    @property
    def used_mb(self) -> float:
        """Memory the guest cannot give back without swapping."""
        return max(0, self.mem_total_kb - self.mem_available_kb) / KB_PER_MB


@dataclasses.dataclass(frozen=True)
class GuestRates:
    """Per-second rates between two samples of one guest."""

    interval_s: float
    pgpgin_kb_s: float
    majfault_s: float
    refault_s: float
    activate_s: float
    pgactivate_s: float = 0.0

    @property
    def disk_read_mb_s(self) -> float:
        return self.pgpgin_kb_s / KB_PER_MB


@dataclasses.dataclass(frozen=True)
class GuestView:
    """What the policies know about one instance on one host."""

    uuid: str
    name: str
    max_mb: int
    actual_mb: int
    sample: Optional[GuestSample] = None
    previous: Optional[GuestSample] = None
    base_mb: Optional[int] = None
    vcpus: int = 1
    dedicated_cpus: bool = False
    cpus: tuple = ()
    ram_pages: int = 0
    policy_state: Mapping = dataclasses.field(default_factory=dict)
    problem: Optional[str] = None
    # Reads through host-cached disks (policy.host_cache.HostCacheService);
    # measured on the host, so present whatever the guest agent says.
    host_cache: Optional[object] = None
    # Host-measured reads and balloon counters over the rate window
    # (policy.host_io.HostIo); present without a guest agent too.
    host_io: Optional[object] = None
    # No guest agent: ``sample`` was built from the balloon's statistics
    # and QEMU's reads (report.balloon_sample); the guest's own counters
    # (refaults, activations, Committed_AS, PSI) are unknown, not zero.
    host_only: bool = False

    @property
    def has_data(self) -> bool:
        """True when the guest answered and its counters passed checks."""
        return self.sample is not None and self.problem is None

    @property
    def has_guest_counters(self) -> bool:
        """True when :attr:`has_data` comes from the guest's own counters.

        The policies that read refaults or Committed_AS need them; only
        the utility mode manages :attr:`host_only` guests.
        """
        return self.has_data and not self.host_only

    @property
    def entitled_mb(self) -> int:
        """Size the guest is entitled to without any KSM bonus."""
        if self.base_mb is None:
            return self.max_mb
        return min(self.base_mb, self.max_mb)


@dataclasses.dataclass(frozen=True)
class KsmStats:
    """Host-wide counters from /sys/kernel/mm/ksm."""

    pages_shared: int = 0
    pages_sharing: int = 0
    pages_unshared: int = 0
    pages_volatile: int = 0
    page_size: int = 4096
    run: int = 1

    @property
    def saved_mb(self) -> float:
        # pages_sharing counts the extra mappings of merged pages: the memory
        # that would be needed again if every merged page were unshared.
        return self.pages_sharing * self.page_size / (1024 * 1024)


@dataclasses.dataclass(frozen=True)
class LlcDomain:
    """A last-level cache and the host CPUs behind it."""

    name: str
    cpus: tuple
    socket: int = 0


@dataclasses.dataclass(frozen=True)
class HostView:
    """One compute node with its guests, KSM state and cache topology."""

    name: str
    ram_mb: int
    reserved_mb: int = 0
    guests: tuple = ()
    ksm: Optional[KsmStats] = None
    llc_domains: tuple = ()
    shared_cpus: tuple = ()
    # Merged pages shared by each pair of guests, keyed by a sorted uuid pair.
    sharing: Mapping = dataclasses.field(default_factory=dict)

    def guest(self, uuid):
        return self._by_uuid[uuid]

    @functools.cached_property
    def _by_uuid(self):
        # Policies look guests up by uuid tens of times a plan. (The first
        # of a uuid listed twice, as a scan of the list found.)
        return {g.uuid: g for g in reversed(self.guests)}


def pair_key(a, b):
    """Key of the sharing map for guests ``a`` and ``b`` (order-free)."""
    return (a, b) if a <= b else (b, a)


class MoveKind(str, enum.Enum):
    SHRINK = 'shrink'
    GROW = 'grow'


@dataclasses.dataclass(frozen=True)
class BalloonMove:
    """Set one guest's balloon so that it has ``target_mb``."""

    host: str
    instance: str
    current_mb: int
    target_mb: int
    reason: str

    @property
    def delta_mb(self) -> int:
        return self.target_mb - self.current_mb

    @property
    def kind(self) -> MoveKind:
        return MoveKind.GROW if self.delta_mb > 0 else MoveKind.SHRINK


@dataclasses.dataclass(frozen=True)
class AffinityChange:
    """Pin every vCPU (and the emulator) of a guest to ``cpus``."""

    host: str
    instance: str
    cpus: tuple
    llc: str
    reason: str


@dataclasses.dataclass
class Plan:
    """What a policy wants done on one host, with its predicted effect."""

    host: str
    moves: list = dataclasses.field(default_factory=list)
    pins: list = dataclasses.field(default_factory=list)
    # Predicted disk reads avoided, MiB/s, by the model of the policy.
    predicted_reads_avoided_mb_s: float = 0.0
    ksm_returned_mb: int = 0
    # Merged pages between guests, and those kept inside one LLC.
    sharing_total_pages: int = 0
    sharing_kept_pages: int = 0
    notes: list = dataclasses.field(default_factory=list)
    # State a policy keeps per guest across audit cycles (margin controller).
    policy_state: dict = dataclasses.field(default_factory=dict)

    @property
    def memory_moved_mb(self) -> int:
        return sum(abs(m.delta_mb) for m in self.moves)

    @property
    def sharing_in_llc(self) -> Optional[float]:
        if not self.sharing_total_pages:
            return None
        return self.sharing_kept_pages / self.sharing_total_pages

    def ordered_moves(self):
        """Shrinks before grows, so applying in order never over-commits."""
        return sorted(self.moves,
                      key=lambda m: (m.kind != MoveKind.SHRINK, m.instance))


def rates(guest: GuestView) -> Optional[GuestRates]:
    """Counter rates between a guest's two samples, or None.

    None when either sample is missing, the interval is not positive, or a
    counter went backwards (the guest rebooted between the samples).
    """
    cur, prev = guest.sample, guest.previous
    if cur is None or prev is None:
        return None
    dt = cur.timestamp - prev.timestamp
    if not dt > 0:
        return None
    deltas = (cur.pgpgin_kb - prev.pgpgin_kb,
              cur.pgmajfault - prev.pgmajfault,
              cur.workingset_refault_file - prev.workingset_refault_file,
              cur.workingset_activate_file - prev.workingset_activate_file,
              cur.pgactivate - prev.pgactivate)
    if min(deltas) < 0:
        return None
    return GuestRates(dt, *(d / dt for d in deltas))
