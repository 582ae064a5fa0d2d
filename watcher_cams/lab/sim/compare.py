"""``watcher-cams-lab compare``: two simulator runs, point by point.

The allocator's figures (issue 23) are sums over hundreds of random hosts
and counts of the points that miss a target: reading more than static or
than paper mode, more than 1.05x the oracle or its replay, or moving more
memory than paper mode. A change to a policy is judged by how those move
between a run before it and one after, and by the points it moved most;
this prints them from the two runs' results.json, so that the figures a
note quotes come from the lab and not from a script beside it.

Each run's target rows (static, cams-paper, oracle, oracle-replay) are
its own where it ran them, else the other run's: a sweep of the default
mode alone is compared against the references of one that ran them all.
"""

import dataclasses
import json
import os

from watcher_cams.lab.sim import experiment
from watcher_cams.lab import tables

GIB = 1024 ** 3
# The targets: (name, reference strategy, factor, what is compared).
TARGETS = (
    ('above static', 'static', 1.0, 'disk_read_bytes'),
    ('above paper mode', 'cams-paper', 1.0, 'disk_read_bytes'),
    ('above 1.05x oracle', 'oracle', 1.05, 'disk_read_bytes'),
    ('above 1.05x replay', experiment.REPLAY, 1.05, 'disk_read_bytes'),
    ('moved more than paper mode', 'cams-paper', 1.0, 'moved_mb'),
)


class CompareError(Exception):
    """A run's results cannot be read or have nothing to compare."""


@dataclasses.dataclass
class Summary:
    """One scenario's comparison; GiB read and MiB moved summed."""

    scenario: str
    points: int
    base_gib: float
    new_gib: float
    better: int
    worse: int
    base_moved_mb: int
    new_moved_mb: int
    # target name -> (points missing it before, after); targets whose
    # reference neither run has are left out.
    misses: dict
    # (GiB read after less before, point, before, after), most gained first.
    changes: list


def load(path):
    """The rows of a results.json, or of the one in directory ``path``."""
    if os.path.isdir(path):
        path = os.path.join(path, 'results.json')
    try:
        with open(path, encoding='utf-8') as f:
            rows = json.load(f)['rows']
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CompareError('%s: no results.json rows (%s)' % (path, exc))
    if not isinstance(rows, list):
        raise CompareError('%s: rows is not a list' % path)
    return [r for r in rows if isinstance(r, dict) and 'scenario' in r]


def compare(base, new, strategy='utility', threshold_gib=0.01):
    """[Summary] for each scenario both row lists have ``strategy`` in.

    A point is better or worse where its reads changed by more than
    ``threshold_gib``. Points whose rows count no disk reads are left out.
    """
    out = []
    for scenario in dict.fromkeys(r['scenario'] for r in new):
        b = experiment.by_point(base, scenario)
        n = experiment.by_point(new, scenario)
        points = [p for p, s in n if s == strategy and (p, s) in b
                  and _reads(n[(p, s)]) and _reads(b[(p, s)])]
        if points:
            out.append(_summary(scenario, points, (b, n), strategy,
                                threshold_gib))
    if not out:
        raise CompareError('no point of strategy %r is in both runs'
                           % strategy)
    return out


def _reads(row):
    """Whether a row counts disk reads (the LLC scenario's count speed)."""
    return isinstance(row.get('disk_read_bytes'), (int, float))


def _summary(scenario, points, runs, strategy, threshold_gib):
    """The Summary of ``points`` of one scenario; ``runs``: (base, new)."""
    b, n = runs

    def gib(rows, p):
        return rows[(p, strategy)]['disk_read_bytes'] / GIB

    def moved(rows):
        return sum(int(rows[(p, strategy)].get('moved_mb') or 0)
                   for p in points)
    changes = sorted((gib(n, p) - gib(b, p), p, gib(b, p), gib(n, p))
                     for p in points)
    return Summary(
        scenario, len(points), sum(c[2] for c in changes),
        sum(c[3] for c in changes),
        sum(1 for c in changes if c[0] < -threshold_gib),
        sum(1 for c in changes if c[0] > threshold_gib),
        moved(b), moved(n), _misses(points, (b, n), strategy), changes)


def _misses(points, runs, strategy):
    """{target: (points missing it in base, in new)} (see TARGETS)."""
    b, n = runs
    out = {}
    for name, ref, factor, key in TARGETS:
        if not any((p, ref) in b or (p, ref) in n for p in points):
            continue
        out[name] = tuple(
            sum(1 for p in points if _misses_target(
                own, other, (p, strategy, ref), factor, key))
            for own, other in ((b, n), (n, b)))
    return out


def _misses_target(own, other, keys, factor, key):
    """Whether the point's row reads (or moves) more than its reference.

    ``keys``: (point, strategy, reference strategy); the reference row is
    the run's own (``own``) or else the other run's.
    """
    point, strategy, ref = keys
    reference = own.get((point, ref)) or other.get((point, ref))
    if reference is None or reference.get(key) is None:
        return False
    return (own[(point, strategy)].get(key) or 0) > factor * reference[key]


@dataclasses.dataclass
class WorkloadExcess:
    """What one kind of guest read under a strategy, against a reference."""

    workload: str
    guests: int
    # GiB summed over the guests that read more than under the reference,
    # and over those that read less.
    more_gib: float
    less_gib: float


def by_workload(base, new, strategy='utility', reference='oracle'):
    """[WorkloadExcess] of ``new``'s ``strategy`` rows, most read more first.

    Each guest's reads less its reads under ``reference`` at the same
    point (the reference row of ``new`` where it ran it, else of
    ``base``), summed by what the guest runs (its figures' ``workload``:
    experiment.workload). Which kinds of guest a strategy's excess over
    the oracle lies with says where to look: a sum over hundreds of
    hosts hides it. Guests without a workload (runs made before it was
    kept) are left out.
    """
    found = {}
    for scenario in dict.fromkeys(r['scenario'] for r in new):
        own = experiment.by_point(new, scenario)
        other = experiment.by_point(base, scenario)
        for (point, label), row in own.items():
            ref = own.get((point, reference)) or other.get((point, reference))
            if label == strategy and ref is not None:
                _add_guests(found, row, ref)
    if not found:
        raise CompareError('no guest of strategy %r has a workload and a '
                           '%r row to compare with' % (strategy, reference))
    return sorted((WorkloadExcess(k, *v) for k, v in found.items()),
                  key=lambda w: (-w.more_gib, w.workload))


def _add_guests(found, row, ref):
    """Add ``row``'s guests less ``ref``'s to ``found`` ({workload: sums})."""
    for name, guest in (row.get('guests') or {}).items():
        kind = guest.get('workload')
        theirs = (ref.get('guests') or {}).get(name)
        if kind is None or theirs is None:
            continue
        gib = (guest['disk_read_bytes'] - theirs['disk_read_bytes']) / GIB
        count, more, less = found.get(kind, (0, 0.0, 0.0))
        found[kind] = (count + 1, more + max(gib, 0.0),
                       less + max(-gib, 0.0))


def workload_lines(excess, reference='oracle'):
    """:func:`by_workload`'s result as a table."""
    return [tables.table(
        ('guests that run', 'guests', 'GiB read more than %s' % reference,
         'GiB read less'),
        [(w.workload, w.guests, '%.2f' % w.more_gib, '%.2f' % w.less_gib)
         for w in excess])]


def lines(summaries, top=8):
    """The comparison as text: the sums, the targets, the largest changes."""
    out = [tables.table(
        ('scenario', 'points', 'GiB read before', 'after', 'change',
         'better', 'worse', 'MiB moved before', 'after', 'change'),
        [(s.scenario, s.points, '%.2f' % s.base_gib, '%.2f' % s.new_gib,
          '%+.2f' % (s.new_gib - s.base_gib), s.better, s.worse,
          s.base_moved_mb, s.new_moved_mb,
          percent_change(s.base_moved_mb, s.new_moved_mb))
         for s in summaries])]
    misses = [(s.scenario, name, before, after) for s in summaries
              for name, (before, after) in s.misses.items()]
    if misses:
        out += ['', tables.table(('scenario', 'target missed at',
                                  'points before', 'after'), misses)]
    for s in summaries:
        gained = [c for c in s.changes[:top] if c[0] < 0]
        lost = [c for c in s.changes[::-1][:top] if c[0] > 0]
        for what, found in (('gained most', gained), ('lost most', lost)):
            if found:
                out.append('%s, %s: %s' % (s.scenario, what, ', '.join(
                    '%s %+.2f GiB (%.2f -> %.2f)' % (p, d, x, y)
                    for d, p, x, y in found)))
    return out


def percent_change(before, after):
    """'+1.2%': how much ``after`` differs from ``before`` ('-' from 0)."""
    return '%+.1f%%' % (100.0 * (after - before) / before) if before else '-'
