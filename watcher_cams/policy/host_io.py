"""What the host measures of each guest, with nothing from its guest agent.

QEMU counts every read request it carries out for a guest's disks, and the
bytes (libvirt's block statistics, ``rd_req`` and ``rd_bytes``): the
tenant's kernel asks, QEMU counts, and the count is QEMU's own, so a guest
cannot make it say more than it read. What memory is worth to a guest is
how much less the host reads for it when it has more; these counts are
what the allocator trusts.

QEMU also knows how much CPU time the guest ran (libvirt's domain info,
its vCPUs and QEMU's own threads): a guest that reads nothing from disk
may be idle or may be reading data that fits its cache, and only its CPU
time tells those apart (hits in its page cache are work its vCPUs do).

The virtio balloon adds the guest kernel's fault, swap and (Linux 6.12 on,
where libvirt passes them) reclaim, stall and OOM counters, without a guest
agent. Those come from the guest's balloon driver: claims like the guest
agent's, reported beside the reads but never a reason to give memory.

A window needs two samples of the same QEMU process (a restart starts the
counters anew) with the same disks; counters that went backwards give no
window.
"""

import dataclasses
import math

MB = 1 << 20
# Cumulative balloon counters given as rates (libvirt's memoryStats keys;
# the last six only where the guest kernel and libvirt provide them).
BALLOON_COUNTERS = ('major_fault', 'minor_fault', 'swap_in', 'swap_out',
                    'oom_kill', 'alloc_stall', 'async_scan', 'direct_scan',
                    'async_reclaim', 'direct_reclaim')


@dataclasses.dataclass(frozen=True)
class DiskReads:
    """One disk's reads over a window, per second."""

    dev: str
    read_mb_s: float
    read_req_s: float


@dataclasses.dataclass(frozen=True)
class Touched:
    """Guest memory the host saw touched over a window (MiB, seconds).

    Its QEMU process's referenced bits (agent.collectors.touched): all it
    touched in the window (``mb``), by its half (``half_mb``), and the
    least balloon size it held in it (``least_mb``).
    """

    mb: float
    half_mb: float
    window_s: float
    ended_at: float
    least_mb: float

    @property
    def started_at(self):
        return self.ended_at - self.window_s


class TouchedWindow:
    """One guest's open touched window, as the agent and simulator keep it.

    Started at ``started`` with the guest at ``size_mb``; it keeps the
    least size seen in it (:meth:`saw_size`) and, from its half on, what
    was touched by then. :meth:`advance` ends it once ``window_s`` long.
    """

    def __init__(self, started, size_mb):
        self.started = started
        self.least_mb = size_mb
        self.half_mb = None

    def saw_size(self, size_mb):
        self.least_mb = min(self.least_mb, size_mb)

    def advance(self, now, window_s, touched_mb):
        """The window's Touched once it is whole, else None.

        ``touched_mb``: a callable giving the MiB touched since it began.
        """
        age = now - self.started
        if self.half_mb is None and age >= window_s / 2:
            self.half_mb = touched_mb()
        if age < window_s:
            return None
        mb = touched_mb()
        return Touched(mb=mb, half_mb=min(self.half_mb, mb), window_s=age,
                       ended_at=now, least_mb=self.least_mb)


@dataclasses.dataclass(frozen=True)
class HostIo:
    """One guest's host-measured reads over a window of ``window_s``.

    ``start_mb``/``end_mb``: the balloon at the window's ends (the size the
    reads were made at; different ends mean a resize in the window).
    """

    window_s: float
    start_mb: int
    end_mb: int
    read_mb_s: float
    read_req_s: float
    disks: tuple = ()  # DiskReads
    balloon_s: tuple = ()  # (counter, per second) of BALLOON_COUNTERS
    # CPU seconds per second the guest ran (None: not measured).
    cpu_s: float = None
    # The guest memory the host saw touched (Touched; None: not measured).
    touched: object = None

    @property
    def resized(self):
        return self.start_mb != self.end_mb

    def as_dict(self):
        return {'window_s': round(self.window_s, 3),
                'start_mb': self.start_mb, 'end_mb': self.end_mb,
                'read_mb_s': round(self.read_mb_s, 4),
                'read_req_s': round(self.read_req_s, 3),
                'disks': [{'dev': d.dev,
                           'read_mb_s': round(d.read_mb_s, 4),
                           'read_req_s': round(d.read_req_s, 3)}
                          for d in self.disks],
                'balloon_s': {k: round(v, 3) for k, v in self.balloon_s},
                'cpu_s': (None if self.cpu_s is None
                          else round(self.cpu_s, 5)),
                'touched': (None if self.touched is None
                            else dataclasses.asdict(self.touched))}


def io_sample(timestamp, qemu_pid, actual_mb, disks, balloon, cpu_ns=None,
              touched=None):
    """The counters a window needs, from the agent's view of one domain.

    ``disks``: the domain's disks as the agent lists them (``dev``,
    ``rd_req``, ``rd_bytes``; a disk whose statistics libvirt could not
    give has none and is left out); ``balloon``: libvirt's memoryStats;
    ``cpu_ns``: the CPU time it ran (None: unknown); ``touched``: the
    memory it touched in its last whole window (Touched, or None).
    """
    reads = {d['dev']: (d['rd_req'], d['rd_bytes']) for d in disks
             if isinstance(d.get('rd_req'), int)
             and isinstance(d.get('rd_bytes'), int)}
    return {'timestamp': timestamp, 'qemu_pid': qemu_pid,
            'actual_mb': actual_mb, 'reads': reads,
            'balloon': {k: balloon[k] for k in BALLOON_COUNTERS
                        if isinstance(balloon.get(k), int)},
            'cpu_ns': cpu_ns if isinstance(cpu_ns, int) else None,
            'touched': touched}


def window(current, previous):
    """HostIo between two io_sample()s, or None when they give no window."""
    if current is None or previous is None:
        return None
    seconds = current['timestamp'] - previous['timestamp']
    if (seconds <= 0 or current['qemu_pid'] != previous['qemu_pid']
            or set(current['reads']) != set(previous['reads'])):
        return None
    disks = []
    for dev in sorted(current['reads']):
        (req, nbytes), (req0, nbytes0) = (current['reads'][dev],
                                          previous['reads'][dev])
        if req < req0 or nbytes < nbytes0:
            return None
        disks.append(DiskReads(dev, (nbytes - nbytes0) / MB / seconds,
                               (req - req0) / seconds))
    balloon = tuple(
        (k, (current['balloon'][k] - previous['balloon'][k]) / seconds)
        for k in BALLOON_COUNTERS
        if k in current['balloon'] and k in previous['balloon']
        and current['balloon'][k] >= previous['balloon'][k])
    return HostIo(window_s=seconds, start_mb=previous['actual_mb'],
                  end_mb=current['actual_mb'],
                  read_mb_s=math.fsum(d.read_mb_s for d in disks),
                  read_req_s=math.fsum(d.read_req_s for d in disks),
                  disks=tuple(disks), balloon_s=balloon,
                  cpu_s=_cpu_s(current, previous, seconds),
                  touched=current.get('touched'))


def _cpu_s(current, previous, seconds):
    """CPU seconds per second between two samples, or None."""
    now, then = current.get('cpu_ns'), previous.get('cpu_ns')
    if now is None or then is None or now < then:
        return None
    return (now - then) / 1e9 / seconds
