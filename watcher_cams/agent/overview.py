"""What operators see of a compute node: its memory, guests and their history.

The agent's report is the strategies' input: raw guest samples, counters
and KSM pages. The overview is the same collection put the way an operator
reads it (the dashboard, through the read-only reports API): host memory
and KSM savings, per instance its size, ceiling and the floor the agent's
guards keep, its page cache and the rates between samples, the last-level
caches with the instances pinned inside each, and a bounded timeline of
memory and disk reads per instance for charts.

Format (version 1)::

    {"version": 1, "host": "cmp-a", "timestamp": 1700000000.0,
     "enabled": true,
     "memory": {"ram_mb", "reserved_mb", "available_mb", "capacity_mb",
                "guests_max_mb", "guests_actual_mb", "ksm_saved_mb",
                "ksm_promisable_mb"},
     "ksm": {"run": 1, "pages_shared": n, "pages_sharing": n},
     "llc": [{"name": "L3-0", "cpus": [0, 1], "instances": [uuid]}],
     "instances": [INSTANCE],
     "timeline": {uuid: [POINT]}}

    INSTANCE = {"uuid", "name", "max_mb", "actual_mb", "floor_mb",
                "dedicated", "cpus": [0, 1], "agent": "ok", "problem",
                "cache_mb", "active_file_mb", "inactive_file_mb",
                "used_mb", "disk_read_mb_s", "refault_s", "activate_s",
                "psi_some_avg10", "host_cache": HOST_CACHE or null,
                "host_read_mb_s", "host_read_req_s", "host_cpu_s",
                "host_touched_mb", "host_io": HOST_IO or
                null, "balloon": BALLOON, "claims": null or why the guest's
                own counters are not believed, "host_only": true when it
                has no guest agent and is managed from host-side signals}

    BALLOON = {"usable_mb", "available_mb", "unused_mb", "disk_caches_mb",
               "rss_mb"}

    POINT = {"t", "actual_mb", "cache_mb", "disk_read_mb_s", "refault_s",
             "host_read_mb_s"}

``disk_read_mb_s`` is what the guest says it read (its pgpgin); the
``host_`` figures are what QEMU read for it (HOST_IO of
:mod:`watcher_cams.policy.report`), whatever the guest says, and the CPU
time it ran (``host_cpu_s``, CPU seconds per second) and the memory it
touched in the agent's last touched window (``host_touched_mb``, guests
emulated by TCG only: :mod:`watcher_cams.agent.collectors.touched`).
``balloon`` is what the guest's balloon driver reports (null where it
gives nothing). Figures a guest did not give (no guest agent, bad data)
are null; its ``problem`` says why.
"""

import collections

from watcher_cams.policy import guards
from watcher_cams.policy import model

VERSION = 1
# libvirt memoryStats levels (KiB) shown in MiB.
BALLOON_LEVELS = ('usable', 'available', 'unused', 'disk_caches', 'rss')


def _round(value, digits=3):
    return None if value is None else round(float(value), digits)


def _figures(guest):
    """A guest's figures: its own (cache, rates) and the host-measured."""
    sample, rates = guest.sample, model.rates(guest)
    io = guest.host_io
    return {
        'host_read_mb_s': _round(io and io.read_mb_s),
        'host_read_req_s': _round(io and io.read_req_s, 1),
        'host_cpu_s': _round(io and io.cpu_s),
        'host_touched_mb': _round(io and io.touched and io.touched.mb, 1),
        'cache_mb': _round(sample and sample.cached_kb / model.KB_PER_MB, 1),
        'active_file_mb': _round(sample and sample.active_file_mb, 1),
        'inactive_file_mb': _round(sample and sample.inactive_file_mb, 1),
        'used_mb': _round(sample and sample.used_mb, 1),
        'disk_read_mb_s': _round(rates and rates.disk_read_mb_s),
        'refault_s': _round(rates and rates.refault_s, 1),
        'activate_s': _round(rates and rates.activate_s, 1),
        'psi_some_avg10': sample and sample.psi_some_avg10,
    }


def _balloon(entry):
    """The balloon driver's memory levels of a report's guest entry."""
    stats = entry.get('balloon') or {}
    return {'%s_mb' % k: (stats[k] // 1024
                          if isinstance(stats.get(k), int) else None)
            for k in BALLOON_LEVELS}


def _instance(guest, cfg, entry):
    return dict(
        _figures(guest),
        uuid=guest.uuid, name=guest.name, max_mb=guest.max_mb,
        actual_mb=guest.actual_mb,
        floor_mb=guards.floor_mb(guest, cfg) if guest.sample else None,
        dedicated=guest.dedicated_cpus,
        cpus=sorted({c for vcpu in guest.cpus for c in vcpu}),
        agent=entry.get('agent'), problem=guest.problem,
        claims=entry.get('claims'), host_only=guest.host_only,
        host_cache=(guest.host_cache.as_dict()
                    if guest.host_cache is not None else None),
        host_io=(guest.host_io.as_dict()
                 if guest.host_io is not None else None),
        balloon=_balloon(entry))


def _llc(view):
    """Each last-level cache with the instances whose vCPUs all run there."""
    groups = []
    for domain in view.llc_domains:
        cpus = set(domain.cpus)
        inside = [g.uuid for g in view.guests
                  if g.cpus and all(set(v) <= cpus for v in g.cpus)]
        groups.append({'name': domain.name, 'cpus': list(domain.cpus),
                       'instances': inside})
    return groups


class Timeline:
    """A bounded series of points per instance, at most one per interval.

    Every collection offers a point; reports asked for often (audits, the
    dashboard) would otherwise crowd out the history.
    """

    def __init__(self, points, min_interval):
        self.points = points
        self.min_interval = min_interval
        self._series = collections.defaultdict(
            lambda: collections.deque(maxlen=self.points))

    def add(self, view, timestamp):
        for guest in view.guests:
            series = self._series[guest.uuid]
            if series and timestamp - series[-1]['t'] < self.min_interval:
                continue
            figures = _figures(guest)
            series.append({'t': round(timestamp, 1),
                           'actual_mb': guest.actual_mb,
                           'cache_mb': figures['cache_mb'],
                           'disk_read_mb_s': figures['disk_read_mb_s'],
                           'refault_s': figures['refault_s'],
                           'host_read_mb_s': figures['host_read_mb_s']})
        for uuid in set(self._series) - {g.uuid for g in view.guests}:
            del self._series[uuid]

    def since(self, timestamp=None):
        """{uuid: [point]} of the points newer than ``timestamp``."""
        return {uuid: [p for p in series
                       if timestamp is None or p['t'] > timestamp]
                for uuid, series in self._series.items()}


def build(report, view, account, cfg, timeline, since=None):
    """The overview of one collection.

    ``report`` comes with its parsed ``view`` and ``account``; ``cfg``
    gives the floors the agent enforces.
    """
    ksm = report.get('ksm') or {}
    return {
        'version': VERSION, 'host': report['host'],
        'timestamp': report['timestamp'],
        'enabled': report.get('enabled', True),
        'memory': {
            'ram_mb': account.ram_mb, 'reserved_mb': account.reserved_mb,
            'available_mb': report['memory'].get('available_mb'),
            'capacity_mb': account.capacity_mb,
            'guests_max_mb': account.guests_max_mb,
            'guests_actual_mb': account.guests_actual_mb,
            'ksm_saved_mb': _round(account.ksm_saved_mb, 1),
            'ksm_promisable_mb': _round(account.ksm_promisable_mb, 1)},
        'ksm': {k: ksm.get(k) for k in ('run', 'pages_shared',
                                        'pages_sharing')},
        'llc': _llc(view),
        'instances': instances(report, view, cfg),
        'timeline': timeline.since(since),
    }


def instances(report, view, cfg):
    """The overview's INSTANCE of each guest of one collection."""
    entries = {g.get('uuid'): g for g in report['guests']}
    return [_instance(g, cfg, entries.get(g.uuid, {})) for g in view.guests]
