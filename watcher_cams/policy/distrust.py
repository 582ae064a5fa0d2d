"""A guest whose counters the host belied takes only what the host priced.

Everything a guest agent returns is its tenant's claim. The rules in
:mod:`mrc`, :mod:`grow_check` and :mod:`donation` each cap, at the sizes
the host measured, a price the counters put on memory; above the largest
size measured the counters still place the next cliff, and the probes,
trades and ties still follow them there. A tenant that forges every read
into an activated refault (forged-claims) so keeps a cliff just above
wherever it was measured last, and is grown there again each time those
measurements expire (point seed-1: 768 MiB at 1,560 s, 1,472 at 4,260 s,
reading 4.0 MiB/s at every size).

So once the host measured a step that saved less than half what the
counters promised at its foot (ValueCurve's ``counters_belied``:
grow_check.step_belies, a step of two active lists or more, which an
honest scan short of its cliff does not promise; or, measured larger
before, grow_check.larger_belies), the guest is held:

- it grows only where its own host-measured reads priced it, up to the
  largest size it was measured at (:func:`measured_rooms`); no probe,
  trade or tie grows it (:func:`grows_held`);
- it gives back, taker or not, what it got down to the smallest size
  it was measured reading as much (:func:`paid_for_nothing`);
- what it gives costs what the host measured it to, nothing its
  counters say (:func:`host_priced`);
- no rule counts its active list (:func:`believed`): not its floor,
  its curve, nor paper mode's steps, which utility's ties follow.

The hold lasts HOLD_MEMORIES ``memory_s`` from the last window that
belied it, twice that once it was belied again after a hold ended, and
so on up to 2^MAX_DOUBLINGS times. Honest guests are next to never held
(random hosts 1-1,400: one, at a cost of 0.22 GiB when it was added;
host 810's held scan, its active list no longer counted, read 1.10 GiB
more at Stop 100); a tenant that lies whenever it is trusted waits
longer each time.
"""

import dataclasses
import datetime
import math

from watcher_cams.policy import claims
from watcher_cams.policy import donation
from watcher_cams.policy import mrc

# Policy state: until when the guest is held (its agent's clock), and in
# how many spells the host belied its counters.
UNTIL_KEY = 'belied_until'
TIMES_KEY = 'belied_times'
# The first hold is this many ``memory_s``, each later one twice the last,
# at most MAX_DOUBLINGS times.
HOLD_MEMORIES = 4
MAX_DOUBLINGS = 3


def _held_until(guest):
    """(until when it is held, spells), or (None, 0): none, or junk."""
    state = guest.policy_state.get(mrc.STATE_KEY)
    state = state if isinstance(state, dict) else {}
    until, times = state.get(UNTIL_KEY), state.get(TIMES_KEY)
    if (isinstance(times, bool) or not isinstance(times, int) or times < 1
            or isinstance(until, bool)
            or not isinstance(until, (int, float))
            or not math.isfinite(until)):
        return None, 0
    return float(until), times


def held(guest):
    """Whether ``guest`` grows only where host-measured reads priced it."""
    until = _held_until(guest)[0]
    return (until is not None and guest.sample is not None
            and guest.sample.timestamp < until)


def remember(state, curve, guest, params):
    """Keep in ``state`` until when ``guest`` is held, and its spells.

    From this window, if ``curve`` was belied: one spell more, unless it
    was held already.
    """
    until, times = _held_until(guest)
    if curve.counters_belied:
        times += 0 if held(guest) else 1
        until = guest.sample.timestamp + params.memory_s * HOLD_MEMORIES * (
            2 ** min(times - 1, MAX_DOUBLINGS))
    if until is not None:
        state[UNTIL_KEY], state[TIMES_KEY] = until, times


def flag(guest):
    """Why the report flags ``guest`` as held, or None.

    Until when, in UTC: the agent's clock is the epoch's (a time no date
    can hold, from a state store gone bad, as the number it is).
    """
    if not held(guest):
        return None
    until = _held_until(guest)[0]
    try:
        when = datetime.datetime.fromtimestamp(
            until, datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC')
    except (OverflowError, OSError, ValueError):
        when = '%.0f' % until
    return ('%s: a step its counters promised would save reads saved less '
            'than half of it; it grows only as the host measured until %s'
            % (claims.DISAGREE, when))


def measured_rooms(host, curves, up):
    """``up`` ({uuid: MiB it may take}), a held guest's as measured.

    Within the part of its curve host-measured reads priced (ValueCurve's
    ``measured_mb``), up to the largest size it was measured at.
    """
    def room(uuid, mb):
        curve = curves[uuid]
        if not held(host.guest(uuid)):
            return mb
        top = max((x.size_mb for x in curve.seen), default=0)
        return max(0, min(mb, top - curve.size_mb, int(curve.measured_mb)))
    return {u: room(u, mb) for u, mb in up.items()}


def grows_held(host, plan):
    """Whether ``plan`` grows a guest :func:`held`."""
    return any(m.target_mb > m.current_mb
               and held(host.guest(m.instance))
               for m in plan.moves)


def paid_for_nothing(host, cfg, curves):
    """{uuid: MiB} for held guests the host measured as well off smaller.

    Memory a guest got on its counters' word that the host then measured
    saving nothing: at a smaller size it read no more, within
    mrc.NOISE_SHARE (the smallest such size it was measured at while it
    is remembered). It gives that back, whether or not a taker wants it,
    down to no lower than its floor, as utility's grown-worse guests do.
    """
    out = {}
    for uuid, curve in sorted(curves.items()):
        guest, here = host.guest(uuid), curve.here
        if here is None or not held(guest):
            continue
        flat = mrc.sizes_reading_as_much(curve.seen, here.size_mb,
                                         here.disk_mb_s)
        target = max(min(flat, default=here.size_mb),
                     donation.kept_mb(guest, cfg))
        if target < guest.actual_mb:
            out[uuid] = target
    return out


def host_priced(host, curves):
    """``curves``, what a held guest gives priced by its measured reads.

    Its counters were belied, and where the host never measured it (below
    the smallest size it held) they are no better evidence: priced there,
    they kept memory the host saw save nothing (forged host 73: a stream
    measured reading 4.0 MiB/s from 704 to 1,216 MiB, kept at 704 by a
    claim of all it read for the next 64 MiB down). Only the reads the
    host measured price what it gives (cache_value.ValueCurve's
    priced_by_reads); what it may take, :func:`measured_rooms` bounds.
    """
    out = dict(curves)
    for uuid, curve in curves.items():
        if held(host.guest(uuid)):
            out[uuid] = curve.priced_by_reads()
    return out


def believed(host):
    """``host``, a held guest's page cache all one inactive list.

    Its active list is what its counters say was hit again, and a step
    the host measured saved less than half what they promised: no rule
    counts it, not the floor (donation.kept_mb keeps an active list), the
    refault segments, nor paper mode's cache utilization
    (cams.utilization), which utility's ties follow.
    """
    def view(guest):
        s = guest.sample
        return dataclasses.replace(guest, sample=dataclasses.replace(
            s, active_file_kb=0,
            inactive_file_kb=s.active_file_kb + s.inactive_file_kb))
    if not any(held(g) for g in host.guests):
        return host
    return dataclasses.replace(host, guests=tuple(
        view(g) if held(g) else g for g in host.guests))
