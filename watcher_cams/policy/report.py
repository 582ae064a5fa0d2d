"""The agent's report format, and its conversion into policy views.

A report is a JSON-able dict (version 1)::

    {"version": 1, "host": "cmp-a", "timestamp": 1700000000.0,
     "memory": {"total_mb": 24000, "reserved_mb": 512},
     "ksm": {"pages_shared": 0, "pages_sharing": 0, "pages_unshared": 0,
             "pages_volatile": 0, "page_size": 4096, "run": 1},
     "topology": {"llc": [{"name": "L3-0", "socket": 0, "cpus": [0, 1]}],
                  "shared_cpus": [0, 1]},
     "sharing": [{"a": uuid, "b": uuid, "pages": 1234}],
     "guests": [{"uuid": ..., "name": ..., "max_mb": 2048,
                 "actual_mb": 2048, "base_mb": null, "vcpus": 1,
                 "dedicated": false, "cpus": [[0, 1]], "ram_pages": 524288,
                 "agent": "ok", "error": null, "policy_state": {},
                 "host_cache": HOST_CACHE or null,
                 "host_io": HOST_IO or null,
                 "sample": SAMPLE, "previous": SAMPLE}]}

    SAMPLE = {"timestamp": 1700000000.0,
              "meminfo": {"MemTotal": kB, "MemAvailable": kB, "Cached": kB,
                          "Active(file)": kB, "Inactive(file)": kB,
                          "Committed_AS": kB},
              "vmstat": {"pgpgin": kB, "pgmajfault": n,
                         "workingset_refault_file": n,
                         "workingset_activate_file": n},
              "psi": {"some_avg10": pct, "full_avg10": pct,
                      "some_total": us}}

An agent answering an audit adds ``"age_s"``: seconds since it collected
the report (it never collects inside the call).

A guest without a guest agent (``"agent": "missing"``) may carry a SAMPLE
the agent built from host-side signals alone (:func:`balloon_sample`, with
``"source": "balloon"``): its balloon's statistics and the reads QEMU made
for it. Such a guest is managed from those (``GuestView.host_only``).

    HOST_CACHE = {"disks": ["vda"], "window_s": 30.0,
                  "guest_read_mb": 120.0, "storage_read_mb": 110.4,
                  "hit_ratio": 0.08, "double_caching": true}

    HOST_IO = {"window_s": 30.0, "start_mb": 1024, "end_mb": 1024,
               "read_mb_s": 2.5, "read_req_s": 40.0,
               "disks": [{"dev": "vda", "read_mb_s": 2.5,
                          "read_req_s": 40.0}],
               "balloon_s": {"major_fault": 12.0, "swap_in": 0.0},
               "cpu_s": 0.35, "touched": TOUCHED or null}

    TOUCHED = {"mb": 812.0, "half_mb": 790.0, "window_s": 600.0,
               "ended_at": 1700000000.0, "least_mb": 1024}

``host_cache`` (:mod:`watcher_cams.policy.host_cache`) and ``host_io``
(:mod:`watcher_cams.policy.host_io`) are measured on the host, whatever
the guest agent says; a malformed one is dropped, the guest is kept.
``touched`` is the guest memory the host saw touched in the agent's last
whole touched window (host_io.Touched), for guests emulated by TCG.

Guest samples come from inside tenant VMs and are untrusted: a guest whose
sample is malformed, out of range or inconsistent with its size keeps its
place in the view (so it is accounted for) but carries a ``problem`` and no
sample, so no policy moves it. A malformed host part raises ReportError.
"""

import collections
import dataclasses
import math

from watcher_cams.policy import claims
from watcher_cams.policy import host_cache
from watcher_cams.policy import host_io
from watcher_cams.policy import model

VERSION = 1
# A guest entry's ``agent`` when the guest has no guest agent, and the
# ``source`` of a sample built from host-side signals for it.
MISSING_AGENT = 'missing'
BALLOON_SOURCE = 'balloon'
# The balloon statistics (libvirt's memoryStats keys, KiB) such a sample
# needs: the guest's balloon driver reports them since Linux 4.18.
BALLOON_NEEDS = ('available', 'usable', 'disk_caches')
MAX_COUNTER = 1 << 62
MAX_MB = 1 << 30  # 1 PiB: anything larger is nonsense
MAX_GUESTS = 4096
MAX_STATE_CHARS = 16384
# Far above any disk's or balloon counter's rate: larger is nonsense.
MAX_RATE = 1e9
# CPU seconds per second: more than any host's CPUs.
MAX_CPU_S = 4096.0

MEMINFO_KEYS = {'MemTotal': 'mem_total_kb',
                'MemAvailable': 'mem_available_kb',
                'Cached': 'cached_kb',
                'Active(file)': 'active_file_kb',
                'Inactive(file)': 'inactive_file_kb',
                'Committed_AS': 'committed_as_kb'}
VMSTAT_KEYS = {'pgpgin': 'pgpgin_kb',
               'pgmajfault': 'pgmajfault',
               'workingset_refault_file': 'workingset_refault_file',
               'workingset_activate_file': 'workingset_activate_file',
               'pgactivate': 'pgactivate'}


class ReportError(ValueError):
    """The host part of a report cannot be used."""


def _label(what):
    """A field's name for an error; tuples are formatted only when used."""
    return what[0] % what[1:] if isinstance(what, tuple) else what


def _int(value, what, low=0, high=MAX_COUNTER):
    if type(value) is not int:  # bool is an int subclass: refused too
        raise ReportError('%s: expected an integer, got %s'
                          % (_label(what), type(value).__name__))
    if not low <= value <= high:
        raise ReportError('%s: %d is outside [%d, %d]'
                          % (_label(what), value, low, high))
    return value


def _float(value, what, low=0.0, high=float(MAX_COUNTER)):
    if type(value) not in (int, float):
        raise ReportError('%s: expected a number, got %s'
                          % (_label(what), type(value).__name__))
    value = float(value)
    if not math.isfinite(value) or not low <= value <= high:
        raise ReportError('%s: %r is not a finite number in [%g, %g]'
                          % (_label(what), value, low, high))
    return value


def _dict(value, what):
    if not isinstance(value, dict):
        raise ReportError('%s: expected an object, got %s'
                          % (_label(what), type(value).__name__))
    return value


def _list(value, what, limit=MAX_GUESTS):
    if not isinstance(value, list):
        raise ReportError('%s: expected a list, got %s'
                          % (_label(what), type(value).__name__))
    if len(value) > limit:
        raise ReportError('%s: %d entries, at most %d'
                          % (_label(what), len(value), limit))
    return value


def _str(value, what, limit=255):
    if not isinstance(value, str) or not 0 < len(value) <= limit:
        raise ReportError('%s: expected a non-empty string of at most %d '
                          'characters' % (_label(what), limit))
    return value


def parse_sample(data, max_mb, what='sample'):
    """A GuestSample from a report's sample dict, checked against the VM."""
    data = _dict(data, what)
    meminfo = _dict(data.get('meminfo'), what + '.meminfo')
    vmstat = _dict(data.get('vmstat', {}), what + '.vmstat')
    psi = data.get('psi') or {}
    psi = _dict(psi, what + '.psi')
    fields = {'timestamp': _float(data.get('timestamp'),
                                  what + '.timestamp')}
    # A guest sees at most its own RAM; allow 1% plus 64 MiB for rounding.
    mem_limit = int(max_mb * 1024 * 1.01) + 65536
    for key, name in MEMINFO_KEYS.items():
        high = MAX_COUNTER if key == 'Committed_AS' else mem_limit
        fields[name] = _int(meminfo.get(key), ('%s.meminfo[%s]', what, key),
                            high=high)
    for key, name in VMSTAT_KEYS.items():
        fields[name] = _int(vmstat.get(key, 0), ('%s.vmstat[%s]', what, key))
    for key, name in (('some_avg10', 'psi_some_avg10'),
                      ('full_avg10', 'psi_full_avg10')):
        if psi.get(key) is not None:
            fields[name] = _float(psi[key], ('%s.psi[%s]', what, key),
                                  high=100.0)
    if psi.get('some_total') is not None:
        fields['psi_some_total_us'] = _int(psi['some_total'],
                                           what + '.psi[some_total]')
    sample = model.GuestSample(**fields)
    if sample.mem_available_kb > sample.mem_total_kb:
        raise ReportError('%s: MemAvailable exceeds MemTotal' % what)
    if (sample.active_file_kb + sample.inactive_file_kb
            > sample.mem_total_kb):
        raise ReportError('%s: file LRU lists exceed MemTotal' % what)
    return sample


def _policy_state(value):
    if value is None:
        return {}
    value = _dict(value, 'policy_state')
    if len(repr(value)) > MAX_STATE_CHARS:
        raise ReportError('policy_state larger than %d characters'
                          % MAX_STATE_CHARS)
    return value


def parse_host_cache(data):
    """A HostCacheService from a guest entry's ``host_cache``."""
    data = _dict(data, 'host_cache')
    ratio = data.get('hit_ratio')
    return host_cache.HostCacheService(
        disks=tuple(_str(d, 'host_cache.disks', 64) for d in _list(
            data.get('disks'), 'host_cache.disks', 256)),
        window_s=_float(data.get('window_s'), 'host_cache.window_s'),
        guest_read_mb=_float(data.get('guest_read_mb'),
                             'host_cache.guest_read_mb'),
        storage_read_mb=_float(data.get('storage_read_mb'),
                               'host_cache.storage_read_mb'),
        hit_ratio=None if ratio is None else _float(
            ratio, 'host_cache.hit_ratio', 0.0, 1.0))


def parse_host_io(data):
    """A HostIo from a guest entry's ``host_io``."""
    data = _dict(data, 'host_io')
    balloon = _dict(data.get('balloon_s', {}), 'host_io.balloon_s')
    return host_io.HostIo(
        window_s=_float(data.get('window_s'), 'host_io.window_s', 1e-3,
                        86400.0),
        start_mb=_int(data.get('start_mb'), 'host_io.start_mb', 0, MAX_MB),
        end_mb=_int(data.get('end_mb'), 'host_io.end_mb', 0, MAX_MB),
        read_mb_s=_float(data.get('read_mb_s'), 'host_io.read_mb_s',
                         high=MAX_RATE),
        read_req_s=_float(data.get('read_req_s'), 'host_io.read_req_s',
                          high=MAX_RATE),
        disks=tuple(host_io.DiskReads(
            _str(_dict(d, 'host_io.disks').get('dev'), 'host_io.dev', 64),
            _float(d.get('read_mb_s'), 'host_io.disk.read_mb_s',
                   high=MAX_RATE),
            _float(d.get('read_req_s'), 'host_io.disk.read_req_s',
                   high=MAX_RATE))
            for d in _list(data.get('disks', []), 'host_io.disks', 256)),
        balloon_s=tuple(
            (k, _float(balloon[k], ('host_io.balloon_s[%s]', k),
                       high=MAX_RATE))
            for k in host_io.BALLOON_COUNTERS if k in balloon),
        cpu_s=(None if data.get('cpu_s') is None else _float(
            data['cpu_s'], 'host_io.cpu_s', high=MAX_CPU_S)),
        touched=(None if data.get('touched') is None
                 else _parse_touched(data['touched'])))


def _parse_touched(data):
    """A host_io.Touched from ``host_io.touched``."""
    data = _dict(data, 'host_io.touched')
    mb = _float(data.get('mb'), 'host_io.touched.mb', high=MAX_MB)
    return host_io.Touched(
        mb=mb, half_mb=_float(data.get('half_mb'), 'host_io.touched.half_mb',
                              high=mb),
        window_s=_float(data.get('window_s'), 'host_io.touched.window_s',
                        1e-3, 86400.0),
        ended_at=_float(data.get('ended_at'), 'host_io.touched.ended_at'),
        least_mb=_float(data.get('least_mb'), 'host_io.touched.least_mb',
                        high=MAX_MB))


def _host_measured(data):
    """The guest's host-measured parts; a malformed one is dropped."""
    found = {}
    for key, parse in (('host_cache', parse_host_cache),
                       ('host_io', parse_host_io)):
        if data.get(key) is not None:
            try:
                found[key] = parse(data[key])
            except ReportError:
                pass
    return found


def parse_guest(data):
    """A GuestView; guest-side problems become ``problem``, not errors."""
    data = _dict(data, 'guest')
    uuid = _str(data.get('uuid'), 'guest.uuid', 64)
    max_mb = _int(data.get('max_mb'), ('guest %s max_mb', uuid), 1, MAX_MB)
    view = dict(
        uuid=uuid,
        name=str(data.get('name') or uuid)[:255],
        max_mb=max_mb,
        actual_mb=_int(data.get('actual_mb'), ('guest %s actual_mb', uuid),
                       0, MAX_MB),
        vcpus=_int(data.get('vcpus', 1), ('guest %s vcpus', uuid), 1, 4096),
        dedicated_cpus=bool(data.get('dedicated', False)),
        ram_pages=_int(data.get('ram_pages', 0), ('guest %s ram_pages', uuid)),
        cpus=tuple(tuple(_int(c, ('guest %s cpu', uuid), 0, 1 << 16)
                         for c in _list(v, ('guest %s vcpu cpus', uuid)))
                   for v in _list(data.get('cpus', []),
                                  ('guest %s cpus', uuid))),
    )
    if data.get('base_mb') is not None:
        view['base_mb'] = _int(data['base_mb'], ('guest %s base_mb', uuid),
                               0, MAX_MB)
    try:
        view['policy_state'] = _policy_state(data.get('policy_state'))
    except ReportError:
        view['policy_state'] = {}
    view.update(_host_measured(data))
    if _balloon_sourced(data):
        view['host_only'] = True
    elif data.get('agent', 'ok') != 'ok':
        view['problem'] = 'guest agent %s: %s' % (
            str(data.get('agent'))[:32], str(data.get('error') or '')[:200])
        return model.GuestView(**view)
    limit_kb = _physical_limit_kb(data, max_mb)
    try:
        view['sample'] = _bounded(parse_sample(data.get('sample'), max_mb),
                                  limit_kb)
        if data.get('previous') is not None:
            view['previous'] = _bounded(
                parse_sample(data['previous'], max_mb, 'previous'), limit_kb)
    except ReportError as exc:
        view.pop('sample', None)
        view['problem'] = 'bad guest data: %s' % exc
    return _believed(model.GuestView(**view))


def _balloon_sourced(data):
    """Whether a guest without its agent carries a balloon-built sample."""
    sample = data.get('sample')
    return (data.get('agent') == MISSING_AGENT and isinstance(sample, dict)
            and sample.get('source') == BALLOON_SOURCE)


def _physical_limit_kb(data, max_mb):
    """The most memory (KiB) the guest can be using.

    Its flavor maximum, or what its QEMU holds on the host (libvirt's
    ``rss``, measured there) if that is less.
    """
    limit = max_mb * 1024
    rss = (data.get('balloon') or {}).get('rss')
    if type(rss) is int and 0 < rss < limit:
        limit = rss
    return limit


def _bounded(sample, limit_kb):
    """``sample`` with Committed_AS no larger than physically possible.

    Committed_AS may honestly exceed the guest's RAM (overcommit), but a
    guest cannot use more than it has, nor more than the host gave its
    QEMU: beyond that the figure would only make the guest unshrinkable
    (its floor its maximum) on the tenant's word.
    """
    if sample.committed_as_kb <= limit_kb:
        return sample
    return dataclasses.replace(sample, committed_as_kb=limit_kb)


def _believed(guest):
    """``guest`` without its samples if they disagree with the host's."""
    why = claims.disagreement(guest)
    if why is None:
        return guest
    return dataclasses.replace(guest, sample=None, previous=None,
                               problem=why)


def _parse_guests(data, only):
    """The report's GuestViews (those in ``only``, when given).

    The host lists each domain once: where it lists a uuid twice, which
    entry is true is unknown, and the host part is malformed.
    """
    guests, listed = [], set()
    for g in _list(data.get('guests', []), 'guests'):
        view = parse_guest(g)
        if view.uuid in listed:
            raise ReportError('guests: %s is listed twice' % view.uuid)
        listed.add(view.uuid)
        if only is None or view.uuid in only:
            guests.append(view)
    return guests


def parse_host(data, only=None):
    """HostView from a report; ``only`` limits guests to these uuids."""
    data = _dict(data, 'report')
    if data.get('version') != VERSION:
        raise ReportError('report version %r, expected %d'
                          % (data.get('version'), VERSION))
    host = _str(data.get('host'), 'host')
    memory = _dict(data.get('memory'), 'memory')
    ksm = None
    if data.get('ksm') is not None:
        k = _dict(data['ksm'], 'ksm')
        ksm = model.KsmStats(**{
            f: _int(k.get(f, 0), 'ksm.' + f)
            for f in ('pages_shared', 'pages_sharing', 'pages_unshared',
                      'pages_volatile', 'run')},
            page_size=_int(k.get('page_size', 4096), 'ksm.page_size', 1,
                           1 << 30))
    topology = _dict(data.get('topology', {}), 'topology')
    domains = tuple(
        model.LlcDomain(_str(d.get('name'), 'llc.name'),
                        tuple(_int(c, 'llc.cpus', 0, 1 << 16)
                              for c in _list(d.get('cpus'), 'llc.cpus')),
                        _int(d.get('socket', 0), 'llc.socket', 0, 4096))
        for d in (_dict(x, 'llc') for x in _list(topology.get('llc', []),
                                                 'topology.llc')))
    shared_cpus = tuple(_int(c, 'shared_cpus', 0, 1 << 16) for c in
                        _list(topology.get('shared_cpus', []), 'shared_cpus'))
    guests = _parse_guests(data, only)
    known = {g.uuid for g in guests}
    sharing = {}
    for entry in _list(data.get('sharing', []), 'sharing',
                       MAX_GUESTS * MAX_GUESTS):
        entry = _dict(entry, 'sharing entry')
        a, b = entry.get('a'), entry.get('b')
        if a in known and b in known and a != b:
            sharing[model.pair_key(a, b)] = _int(entry.get('pages'),
                                                 'sharing.pages')
    return model.HostView(
        name=host,
        ram_mb=_int(memory.get('total_mb'), 'memory.total_mb', 1, MAX_MB),
        reserved_mb=_int(memory.get('reserved_mb', 0), 'memory.reserved_mb',
                         0, MAX_MB),
        guests=tuple(sorted(guests, key=lambda g: g.uuid)),
        ksm=ksm, llc_domains=domains, shared_cpus=shared_cpus,
        sharing=sharing)


# -- building reports -------------------------------------------------------
# The agent, the simulator, the paper's example and the benchmark all build
# their reports here, beside the parser: a new field is one change in a
# builder and one in its parser.

ONE_LLC = ({'name': 'L3-0', 'socket': 0, 'cpus': [0, 1]},)


def sample(timestamp, total_kb, used_kb, cached_kb, active_kb, inactive_kb,
           committed_kb, vmstat, psi_some=0.0):
    """One guest sample (SAMPLE above), as the guest-agent collector reads it.

    MemAvailable is what the guest does not use; the lab's guests have no
    other reclaimable memory than their page cache.
    """
    return {
        'timestamp': timestamp,
        'meminfo': {
            'MemTotal': int(total_kb),
            'MemAvailable': int(max(0, total_kb - used_kb)),
            'Cached': int(cached_kb),
            'Active(file)': int(active_kb),
            'Inactive(file)': int(inactive_kb),
            'Committed_AS': int(committed_kb),
        },
        'vmstat': dict(vmstat),
        'psi': {'some_avg10': round(psi_some, 2),
                'full_avg10': round(psi_some / 2, 2),
                'some_total': 0},
    }


def balloon_sample(timestamp, balloon, read_bytes):
    """A SAMPLE from host-side signals alone, or None when they lack one.

    For a guest without a guest agent: ``balloon`` is libvirt's
    memoryStats (what the guest's balloon driver reports: its MemTotal
    as ``available``, MemAvailable as ``usable``, page cache as
    ``disk_caches``), ``read_bytes`` what QEMU read for its disks in all.
    What the balloon does not say is not guessed: no refaults or
    activations (0), the whole cache as one inactive list, and the memory
    in use (MemTotal - MemAvailable) as its commitment, so its floor is
    what the balloon reports in use. The reads are the host's own count.
    """
    if any(type(balloon.get(k)) is not int for k in BALLOON_NEEDS):
        return None
    total = balloon['available']
    usable = min(balloon['usable'], total)
    cached = min(balloon['disk_caches'], total)
    return {
        'timestamp': timestamp, 'source': BALLOON_SOURCE,
        'meminfo': {'MemTotal': total, 'MemAvailable': usable,
                    'Cached': cached, 'Active(file)': 0,
                    'Inactive(file)': cached,
                    'Committed_AS': total - usable},
        'vmstat': {'pgpgin': int(read_bytes) // 1024,
                   'pgmajfault': balloon.get('major_fault', 0)},
        'psi': {}}


def ksm_counters(pages_shared=0, pages_sharing=0, pages_unshared=0,
                 pages_volatile=0, page_size=4096, run=1):
    """The host's KSM counters (the ``ksm`` part)."""
    return {'pages_shared': pages_shared, 'pages_sharing': pages_sharing,
            'pages_unshared': pages_unshared,
            'pages_volatile': pages_volatile, 'page_size': page_size,
            'run': run}


def guest_entry(uuid, name, max_mb, actual_mb, *, sample=None,
                previous=None, base_mb=None, vcpus=1, dedicated=False,
                cpus=([0, 1],), ram_pages=None, policy_state=None,
                agent='ok', error=None, host_cache=None, host_io=None,
                **host_facts):
    """One guest of a report.

    ``ram_pages`` defaults to the balloon size in 4 KiB pages; a guest
    without a ``sample`` (its agent did not answer) carries ``agent`` and
    ``error`` instead. ``host_facts`` are what the agent measured on the
    host for operators (qemu_pid, disks, balloon, ...): passed through,
    read by no policy.
    """
    entry = dict(
        uuid=uuid, name=name, max_mb=max_mb, actual_mb=actual_mb,
        base_mb=base_mb, vcpus=vcpus, dedicated=dedicated,
        cpus=[list(c) for c in cpus],
        ram_pages=actual_mb * 256 if ram_pages is None else ram_pages,
        policy_state=dict(policy_state or {}), host_cache=host_cache,
        host_io=host_io, agent=agent, error=error, **host_facts)
    if sample is not None:
        entry.update(sample=sample, previous=previous)
    return entry


def host_report(host, timestamp, total_mb, reserved_mb, guests, *,
                ksm=None, llc=ONE_LLC, shared_cpus=(0, 1), sharing=(),
                available_mb=None, dedicated_cpus=None, enabled=None):
    """A version-1 report of ``host`` with its ``guests`` (guest_entry).

    ``ksm`` defaults to KSM running with nothing merged. ``available_mb``,
    ``dedicated_cpus`` and ``enabled`` are the agent's, for operators and
    the overview; a report without them is still whole.
    """
    report = {
        'version': VERSION, 'host': host, 'timestamp': timestamp,
        'memory': {'total_mb': total_mb, 'reserved_mb': reserved_mb},
        'ksm': ksm_counters() if ksm is None else ksm,
        'topology': {'llc': [dict(d, cpus=list(d['cpus'])) for d in llc],
                     'shared_cpus': list(shared_cpus)},
        'sharing': list(sharing), 'guests': list(guests)}
    if available_mb is not None:
        report['memory']['available_mb'] = available_mb
    if dedicated_cpus is not None:
        report['topology']['dedicated_cpus'] = dedicated_cpus
    if enabled is not None:
        report['enabled'] = enabled
    return report


class SampleHistory:
    """Recent samples per guest, to compute rates over a useful interval.

    The agent fills a report's ``previous`` sample from it; the lab's
    simulator does the same, so both give policies the same window.
    """

    HISTORY = 32

    def __init__(self, min_interval):
        self.min_interval = min_interval
        self._samples = collections.defaultdict(
            lambda: collections.deque(maxlen=self.HISTORY))

    def add(self, uuid, sample):
        """Store ``sample``; return the sample to compute rates against."""
        history = self._samples[uuid]
        previous = None
        for old in history:
            if sample['timestamp'] - old['timestamp'] >= self.min_interval:
                previous = old  # the newest one old enough wins
        if previous is None and history:
            previous = history[0]
        history.append(sample)
        return previous

    def keep_only(self, uuids):
        for uuid in set(self._samples) - set(uuids):
            del self._samples[uuid]
