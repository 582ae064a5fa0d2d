"""One host's plan from its report and an audit's request.

Each policy plans one host from that host's report alone. At 5,000 hosts
of 40 instances, parsing every report and planning every host in the
decision engine took about 22 s of its one CPU, and the reports moved
hundreds of megabytes through the message bus. So the agent plans its own
host (agent API 1.5 ``plan``): the decision engine sends every agent the
same small :func:`request` at once (which planner, its parameters, the
guards, what Watcher's model says of the host's instances) and gets a
:func:`answer` back: the plan, the figures its indicators need, and the
instances on host-cached disks. The decision engine runs this very module
for agents that cannot plan (older than 1.5) and for in-process stand-ins.

A request comes from the decision engine and an answer from the agent:
each side checks what it receives (:class:`PlanError`).
"""

import dataclasses

from watcher_cams.policy import affinity
from watcher_cams.policy import cams
from watcher_cams.policy import compact
from watcher_cams.policy import guards
from watcher_cams.policy import host_cache
from watcher_cams.policy import ksm
from watcher_cams.policy import margin
from watcher_cams.policy import model
from watcher_cams.policy import report
from watcher_cams.policy import utility

MARGIN_STATE_KEY = 'margin'
# Characters of a move's or a pin's reason in an answer (an action's
# parameters keep no more).
MAX_REASON = 255
MAX_NOTE = 255


def _margin(host, cfg, params):
    return margin.plan(host, cfg, params, state_key=MARGIN_STATE_KEY)


def _affinity(host, cfg, params):
    return affinity.plan(host, params)


# {planner name: (parameter dataclass, plan(host, cfg, params))}.
PLANNERS = {
    'cams': (cams.CamsParams, cams.plan),
    'utility': (utility.UtilityParams, utility.plan),
    'ksm': (ksm.KsmParams, ksm.plan),
    'margin': (margin.MarginParams, _margin),
    'affinity': (affinity.AffinityParams, _affinity),
}


class PlanError(ValueError):
    """A plan request or a plan answer that cannot be used."""


def planner_name(params):
    """The PLANNERS name of a parameter dataclass instance."""
    for name, (kind, _) in PLANNERS.items():
        if type(params) is kind:
            return name
    raise PlanError('no planner takes %s' % type(params).__name__)


def instance_scope(memory_mb, active, dedicated):
    """What Watcher's model says of one instance, for :func:`reconcile`."""
    return {'memory_mb': memory_mb, 'active': bool(active),
            'dedicated': bool(dedicated)}


def request(params, cfg, instances, reserved_mb=0):
    """A plan request: ``params`` a PLANNERS dataclass, ``cfg`` GuardConfig.

    ``instances``: {uuid: :func:`instance_scope`}, the instances of the
    host in the audit's scope; ``reserved_mb``: the node's reserved memory.
    """
    return {'planner': planner_name(params),
            'params': dataclasses.asdict(params),
            'guards': dataclasses.asdict(cfg),
            'instances': instances, 'reserved_mb': int(reserved_mb or 0)}


def checked_request(data):
    """(plan function, params, GuardConfig, instances, reserved_mb)."""
    if not isinstance(data, dict) or data.get('planner') not in PLANNERS:
        raise PlanError('planner must be one of %s' % sorted(PLANNERS))
    kind, plan = PLANNERS[data['planner']]
    try:
        params = kind(**_mapping(data.get('params'), 'params'))
        cfg = guards.GuardConfig(**_mapping(data.get('guards'), 'guards'))
    except (TypeError, ValueError) as exc:  # GuardError is a ValueError
        raise PlanError('bad parameters: %s' % exc) from exc
    instances = _mapping(data.get('instances'), 'instances')
    for uuid, entry in instances.items():
        if not isinstance(entry, dict) or not (
                entry.get('memory_mb') is None
                or type(entry['memory_mb']) is int):
            raise PlanError('instance %.64s: bad scope entry' % uuid)
    reserved = data.get('reserved_mb', 0)
    if type(reserved) is not int or reserved < 0:
        raise PlanError('reserved_mb must be a non-negative integer')
    return plan, params, cfg, instances, reserved


def _mapping(value, what):
    if not isinstance(value, dict):
        raise PlanError('%s must be a mapping' % what)
    return value


def reconcile(guest, entry):
    """``guest`` with what Watcher's model says of it (``entry`` or None).

    Outside the audit's scope, excluded or not active: left alone (its
    ``problem`` says why). Its flavor memory caps its max; dedicated CPUs
    are never re-pinned.
    """
    if entry is None:
        return dataclasses.replace(
            guest, problem=guest.problem or 'not in the audit scope')
    if not entry.get('active'):
        return dataclasses.replace(
            guest, problem=guest.problem or 'excluded or not active')
    changes = {}
    memory = entry.get('memory_mb')
    if memory and memory < guest.max_mb:
        changes['max_mb'] = memory
    if entry.get('dedicated'):
        changes['dedicated_cpus'] = True
    return dataclasses.replace(guest, **changes) if changes else guest


def host_view(raw, instances, reserved_mb):
    """HostView of a report (version 1 or 2) reconciled with the scope.

    Raises report.ReportError for a report that cannot be used.
    """
    host = report.parse_host(compact.expand(raw))
    guests = tuple(reconcile(g, instances.get(g.uuid)) for g in host.guests)
    return dataclasses.replace(host, guests=guests,
                               reserved_mb=max(host.reserved_mb, reserved_mb))


def plan_report(raw, data):
    """(HostView, Plan) of report ``raw`` for request ``data``.

    Raises PlanError or report.ReportError.
    """
    plan, params, cfg, instances, reserved = checked_request(data)
    host = host_view(raw, instances, reserved)
    return host, plan(host, cfg, params)


@dataclasses.dataclass(frozen=True)
class PlannedHost:
    """A host's plan, with what an audit's indicators need of its host.

    ``host_caches``: ((uuid, name, HostCacheService), ...) of the guests
    that read through host-cached disks.
    """

    plan: model.Plan
    audited_instances: int = 0
    host_caches: tuple = ()


def planned(host, plan):
    """PlannedHost of a HostView and its Plan."""
    return PlannedHost(
        plan, sum(1 for g in host.guests if g.has_data),
        tuple((g.uuid, g.name, g.host_cache) for g in host.guests
              if g.host_cache is not None))


def answer(done):
    """The JSON-able answer of a PlannedHost, as the agent sends it."""
    p = done.plan
    return {
        'host': p.host, 'audited_instances': done.audited_instances,
        'moves': [[m.instance, m.current_mb, m.target_mb,
                   m.reason[:MAX_REASON]] for m in p.moves],
        'pins': [[c.instance, list(c.cpus), c.llc, c.reason[:MAX_REASON]]
                 for c in p.pins],
        'predicted_reads_avoided_mb_s': p.predicted_reads_avoided_mb_s,
        'ksm_returned_mb': p.ksm_returned_mb,
        'sharing_total_pages': p.sharing_total_pages,
        'sharing_kept_pages': p.sharing_kept_pages,
        'notes': [n[:MAX_NOTE] for n in p.notes[:report.MAX_GUESTS]],
        'host_caches': [[uuid, name, list(s.disks), s.window_s,
                         s.guest_read_mb, s.storage_read_mb, s.hit_ratio]
                        for uuid, name, s in done.host_caches]}


def parse_answer(data, host, instances):
    """PlannedHost of an agent's answer for ``host``; PlanError if unusable.

    Every move and pin must name an instance of the request's scope.
    """
    try:
        data = report._dict(data, 'plan')
        if data.get('host') != host:
            raise PlanError('answered for %r' % (data.get('host'),))
        plan = model.Plan(
            host, moves=[_move(host, m, instances) for m in _rows(
                data, 'moves', 4)],
            pins=[_pin(host, p, instances) for p in _rows(data, 'pins', 4)],
            predicted_reads_avoided_mb_s=report._float(
                data.get('predicted_reads_avoided_mb_s', 0.0), 'predicted'),
            ksm_returned_mb=report._int(data.get('ksm_returned_mb', 0),
                                        'ksm_returned_mb'),
            sharing_total_pages=report._int(
                data.get('sharing_total_pages', 0), 'sharing_total_pages'),
            sharing_kept_pages=report._int(
                data.get('sharing_kept_pages', 0), 'sharing_kept_pages'),
            notes=[str(n)[:MAX_NOTE] for n in report._list(
                data.get('notes', []), 'notes')])
        return PlannedHost(
            plan, report._int(data.get('audited_instances', 0), 'audited',
                              0, report.MAX_GUESTS),
            tuple(_host_cache(c) for c in _rows(data, 'host_caches', 7)))
    except report.ReportError as exc:
        raise PlanError(str(exc)) from exc


def _rows(data, key, width):
    rows = report._list(data.get(key, []), key)
    for row in rows:
        if not isinstance(row, list) or len(row) != width:
            raise PlanError('%s: rows of %d fields expected' % (key, width))
    return rows


def _scoped(uuid, instances):
    if not isinstance(uuid, str) or uuid not in instances:
        raise PlanError('instance %.64r is not in the request' % (uuid,))
    return uuid


def _move(host, row, instances):
    uuid, current, target, reason = row
    return model.BalloonMove(
        host, _scoped(uuid, instances), report._int(current, 'current_mb'),
        report._int(target, 'target_mb'), str(reason)[:MAX_REASON])


def _pin(host, row, instances):
    uuid, cpus, llc, reason = row
    return model.AffinityChange(
        host, _scoped(uuid, instances),
        tuple(report._int(c, 'cpus', 0, 1 << 16)
              for c in report._list(cpus, 'cpus')),
        report._str(llc, 'llc'), str(reason)[:MAX_REASON])


def _host_cache(row):
    uuid, name, disks, window, read, storage, ratio = row
    return (report._str(uuid, 'uuid', 64), str(name)[:255],
            host_cache.HostCacheService(
                tuple(str(d)[:64] for d in report._list(disks, 'disks')),
                report._float(window, 'window_s'),
                report._float(read, 'guest_read_mb'),
                report._float(storage, 'storage_read_mb'),
                None if ratio is None else report._float(ratio, 'hit_ratio',
                                                         0.0, 1.0)))
