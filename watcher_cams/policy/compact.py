"""The compact report (version 2): what an audit reads, each thing once.

An audit asks every host for its report at once; at 5,000 hosts, version 1
moved hundreds of megabytes through the message bus, most of it read by
nobody: whole /proc/meminfo and /proc/vmstat files twice per guest, the
previous sample repeating the current one, pairwise sharing naming both
guests by UUID, the host facts kept for operators. Version 2, sent to a
caller that asks for it (agent API 1.3), carries:

- of each sample, the counters the parser reads (``report.MEMINFO_KEYS``,
  ``VMSTAT_KEYS``, the PSI figures): a bounded size per guest;
- the previous sample as its difference from the current one: integers as
  ``current - previous``, anything else as the previous value where it
  differs, and under ``"-"`` the keys the previous sample lacks;
- pairwise sharing as ``[i, j, pages]``, ``i`` and ``j`` indexes into
  ``guests``;
- of the host facts only QEMU's resident size (``rss_kb``), which bounds
  what a guest may claim to commit;
- no default: agent ``"ok"``, no error, no base size, empty policy state,
  no host-measured reads, shared CPUs.

:func:`expand` gives back the version-1 report, which the parser checks
as before: every bound of version 1 holds for version 2.
"""

from watcher_cams.policy import report as report_format

VERSION = 2
ABSENT = '-'
_GUEST_KEPT = ('uuid', 'name', 'max_mb', 'actual_mb', 'vcpus', 'cpus',
               'ram_pages', 'base_mb', 'dedicated', 'policy_state',
               'host_cache', 'host_io', 'agent', 'error')
_GUEST_DEFAULTS = {'base_mb': None, 'dedicated': False, 'policy_state': {},
                   'host_cache': None, 'host_io': None, 'agent': 'ok',
                   'error': None}
_HOST_KEPT = ('host', 'timestamp', 'age_s', 'memory', 'ksm', 'topology',
              'enabled')
_SAMPLE_READ = {'meminfo': tuple(report_format.MEMINFO_KEYS),
                'vmstat': tuple(report_format.VMSTAT_KEYS),
                'psi': ('some_avg10', 'full_avg10', 'some_total')}


def _read_part(sample):
    """The sample's counters the parser reads, and its other fields."""
    if not isinstance(sample, dict):
        return sample
    kept = {k: v for k, v in sample.items() if k not in _SAMPLE_READ}
    for section, keys in _SAMPLE_READ.items():
        values = sample.get(section)
        if isinstance(values, dict):
            kept[section] = {k: values[k] for k in keys if k in values}
    return kept


def difference(current, previous):
    """``previous`` as its difference from ``current`` (module docstring)."""
    found = {}
    for key, value in previous.items():
        now = current.get(key)
        if type(now) is int and type(value) is int:
            if now != value:
                found[key] = now - value
        elif isinstance(now, dict) and isinstance(value, dict):
            inner = difference(now, value)
            if inner:
                found[key] = inner
        elif key not in current or now != value:
            found[key] = value
    gone = sorted(k for k in current if k not in previous)
    if gone:
        found[ABSENT] = gone
    return found


def undo_difference(current, found, depth=3):
    """The previous sample from ``current`` and its :func:`difference`.

    Samples nest ``depth`` levels at most (sections of counters): an
    agent sending deeper ones gets ReportError, not a recursion error.
    """
    if not isinstance(found, dict) or depth < 1:
        raise report_format.ReportError('previous: expected an object of '
                                        'at most 3 levels')
    gone = found.get(ABSENT, [])
    if not isinstance(gone, list):
        raise report_format.ReportError('previous["-"]: expected a list')
    previous = {}
    for key, now in current.items():
        if key in gone:
            continue
        if key not in found:
            previous[key] = now
        elif type(now) is int and type(found[key]) is int:
            previous[key] = now - found[key]
        elif isinstance(now, dict) and isinstance(found[key], dict):
            previous[key] = undo_difference(now, found[key], depth - 1)
        else:
            previous[key] = found[key]
    for key in found.keys() - current.keys() - {ABSENT}:
        previous[key] = found[key]
    return previous


def _compact_guest(guest):
    entry = {k: guest[k] for k in _GUEST_KEPT
             if k in guest and guest[k] != _GUEST_DEFAULTS.get(k, ())}
    rss = (guest.get('balloon') or {}).get('rss')
    if rss is not None:
        entry['rss_kb'] = rss
    sample = _read_part(guest.get('sample'))
    if sample is not None:
        entry['sample'] = sample
        previous = _read_part(guest.get('previous'))
        if isinstance(previous, dict) and isinstance(sample, dict):
            entry['previous'] = difference(sample, previous)
    return entry


def compact(report):
    """The version-2 form of a version-1 report (the agent's answer)."""
    guests = report['guests']
    index = {g['uuid']: i for i, g in enumerate(guests)}
    found = {k: report[k] for k in _HOST_KEPT if k in report}
    found.update(
        version=VERSION, guests=[_compact_guest(g) for g in guests],
        sharing=[[index[s['a']], index[s['b']], s['pages']]
                 for s in report.get('sharing', ())
                 if s['a'] in index and s['b'] in index])
    return found


def _expand_guest(entry):
    guest = report_format._dict(entry, 'guest')
    guest = dict(guest)
    rss = guest.pop('rss_kb', None)
    if rss is not None:
        guest['balloon'] = {'rss': rss}
    if isinstance(guest.get('sample'), dict) and 'previous' in guest:
        guest['previous'] = undo_difference(guest['sample'],
                                            guest['previous'])
    return guest


def _expand_sharing(pairs, guests):
    found = []
    for pair in report_format._list(pairs, 'sharing',
                                    report_format.MAX_GUESTS ** 2):
        if not isinstance(pair, list) or len(pair) != 3:
            raise report_format.ReportError('sharing: expected [i, j, '
                                            'pages] entries')
        a, b = (report_format._int(i, 'sharing index', 0, len(guests) - 1)
                for i in pair[:2])
        found.append({'a': guests[a].get('uuid'), 'b': guests[b].get('uuid'),
                      'pages': pair[2]})
    return found


def expand(data):
    """A version-1 report from ``data`` of version 1 (as is) or 2.

    Malformed version-2 structure raises report.ReportError; the values
    are checked by report.parse_host as in version 1.
    """
    data = report_format._dict(data, 'report')
    if data.get('version') != VERSION:
        return data
    guests = [_expand_guest(g) for g in report_format._list(
        data.get('guests', []), 'guests')]
    return dict(data, version=report_format.VERSION, guests=guests,
                sharing=_expand_sharing(data.get('sharing', []), guests))
