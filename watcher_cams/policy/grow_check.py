"""Whether a grow made a guest read more: if so, it gives the grow back.

More memory never costs an LRU cache hits, but a kernel's two file lists
are not one LRU: a scan that never fits keeps part of itself on the
active list of a small cache, and a larger one rebalances that part away
(random host 342: a 1,331 MiB scan read 4.9 MiB/s at 1,024 MiB and 8.0 at
1,536, where the refault counters valued more memory at all it read).
The host measures it: the window after a grow's echo reads more than the
window that decided the grow. A new workload that began with the grow
reads more too; giving back tells them apart (reading as much there
again, the next window's reads drop every measurement of the old one,
mrc.of_this_phase) at the cost of one round trip.

Only the first window after the echo decides: a rise later on, at the
same size, is the workload's (random host 105: a phase change four
windows after a grow). The policy state keeps what the deciding window
read (``reads_mb_s``, clean windows only) and, while the echo lasts,
the grow to check (``grown_from``: [MiB, MiB/s]).
"""

import math

from watcher_cams.policy import cache_window
from watcher_cams.policy import mrc


def pending(guest, grown_since_plan):
    """(MiB it was grown from, MiB/s it read there) to check, or None.

    ``grown_since_plan``: whether it grew after the last plan (see
    cache_window.change_since_plan): that plan's size and reads, if its
    window was clean (a resize or a filling cache blurs what it read).
    Otherwise the grow the state carries through its echo.
    """
    state = guest.policy_state.get(mrc.STATE_KEY)
    if not isinstance(state, dict):
        return None
    if grown_since_plan:
        return _sane(state.get('size_mb'), state.get('reads_mb_s'), guest)
    carried = state.get('grown_from')
    if not isinstance(carried, list) or len(carried) != 2:
        return None
    return _sane(carried[0], carried[1], guest)


def _sane(from_mb, reads_mb_s, guest):
    """(MiB, MiB/s) when both are numbers the grow makes possible."""
    try:
        from_mb, reads_mb_s = int(from_mb), float(reads_mb_s)
    except (TypeError, ValueError):
        return None
    if not (0 < from_mb < guest.actual_mb and math.isfinite(reads_mb_s)
            and reads_mb_s >= 0):
        return None
    return from_mb, reads_mb_s


def read_less_at(grow, size_mb, reads):
    """MiB it was grown from where it read less than now, or None.

    ``grow``: :func:`pending`; ``reads``: (disk reads, activations) in
    MiB/s now. At least mrc.EMPIRICAL_REACH_MB smaller (closer, a disk
    rate's difference is mostly noise), and less by more than
    mrc.NOISE_SHARE of the reads and mrc.READ_MB_S. And only where its
    kernel activates (next to) all it reads: every read is of a page
    evicted so recently that it goes back to the active list, which then
    keeps none of the scan for long. That is how the two lists make more
    memory cost reads; a workload that grew with the grow (random host
    594: a scan's rate rising through a phase change, its refaults not
    activated) reads more for another reason, and giving back its memory
    sent it round trips it never recovered from.
    """
    if grow is None:
        return None
    from_mb, then_mb_s = grow
    disk_mb_s, activate_mb_s = reads
    if (from_mb <= size_mb - mrc.EMPIRICAL_REACH_MB
            and then_mb_s < (1 - mrc.NOISE_SHARE) * disk_mb_s - mrc.READ_MB_S
            and activate_mb_s >= (1 - mrc.NOISE_SHARE) * disk_mb_s):
        return from_mb
    return None


# Policy state: the size a guest went back to from a grow that made it
# read more.
UNDONE_KEY = 'undone_mb'


def remember_undone(state, curve, guest):
    """Keep in ``state`` a grow this plan gives back, or the one kept."""
    if curve.reads_less_at is not None:
        state[UNDONE_KEY] = curve.reads_less_at
    else:
        back_mb = undone_mb(guest)
        if back_mb is not None:
            state[UNDONE_KEY] = back_mb


def undone_mb(guest):
    """The size a grow that made it read more went back to, or None.

    While the guest still has that size: memory nobody holds does not
    grow it past it again. Random host 342: a 1,331 MiB scan's grow to
    1,536 MiB, given back, was taken again from memory nobody held, and
    a round trip left its kernel's lists thrashing at 1,024 MiB, where
    before they kept part of the scan. A donor's grow, which its loss
    weighs, is the old question and forgets this.
    """
    back_mb = mrc.state_mb(guest, UNDONE_KEY)
    return back_mb if back_mb == guest.actual_mb else None


# Policy state: the reads of a full window at the size a run of grows
# began from (an mrc.Seen as a list), for fill_belies.
BASE_KEY = 'full_at'


def full_base(guest, segments, window, cfg, params):
    """The full window grows are audited from (an mrc.Seen), or None.

    A window not resized whose memory is all taken (free no more than the
    floor's margin) measures the guest's reads at its size, even while
    its cache still grows: a tenant grown from its first fill on leaves
    no clean window (forged-claims point seed-9). The one kept stays while
    the guest is no smaller, for ``memory_s``, renewed at its own size.
    ``window``: (disk reads in MiB/s, cache_window's resized, free MiB).
    """
    disk_mb_s, resized, free_mb = window
    now = guest.sample.timestamp
    kept = mrc.Seen.from_list(mrc.state_entry(guest, BASE_KEY))
    if kept is not None and not (
            kept.size_mb < guest.actual_mb and kept.timestamp <= now
            and now - kept.timestamp <= params.memory_s):
        kept = None
    if kept is not None or resized or free_mb > cfg.floor_margin_mb:
        return kept
    length, density = segments[0]
    return mrc.Seen(guest.actual_mb, density, length, now, disk_mb_s)


def fill_belies(guest, seen, window, cfg, base):
    """The measurements a grown guest's full memory belies, or None.

    At each size it was measured, its counters priced the memory above
    (a measurement's density over its length: the activations, refaults
    the next active list's worth saves). A guest grown every cycle is
    never measured again (every window holds a resize or a filling
    cache), and a tenant that forges its counters keeps growing so
    (forged-claims point seed-7: a stream grew from 1,216 to 2,112 MiB in
    seven cycles, reading 4.0 MiB/s at every size). Once its memory is
    all taken (free no more than the floor's margin: the cache holds what
    it was grown by), the step from the size it was last measured at
    below (``seen``, or ``base``: :func:`full_base`) has been measured
    too. Where that was far enough below and promised enough
    (:func:`_promised_over`), and the step saved less than half of it
    (mrc.promise_belied), this window is a measurement, made with
    ``seen`` and the base. Not a window whose reads rose past
    mrc.PHASE_SHARE: a new workload. Nor a nearer step: a scan short of
    its cliff saves nothing until it fits (wide host 453: a scan grown
    1,856 MiB whose refaults began to activate only on the way). Nor an
    older foot than the last measurement below (wide host 417: a reader
    measured at 1,536 MiB 38 minutes before, and at larger sizes since),
    but for the base its run of grows began from: steps each shorter
    than a promise's reach from the last are one step from there
    (forged-claims point seed-7: grown 64, 128, 128 and 192 MiB from
    1,024, measured at 1,216 on the way; from the base the third step
    spanned two of its claimed active lists, and the fourth took 192 MiB
    more from its honest neighbours).
    ``window``: (disk reads in MiB/s, cache_window's resized, free MiB).
    """
    disk_mb_s, resized, free_mb = window
    last = cache_window.last_balloon_change(guest)
    if (resized < 0 or last is None or last[1] < 0
            or free_mb > cfg.floor_margin_mb):
        return None
    sizes = {x.size_mb for x in seen}
    run = (base,) if base is not None and base.size_mb not in sizes else ()
    below = tuple(seen) + run
    if step_belies(guest, below, disk_mb_s) or (
            run and step_belies(guest, run, disk_mb_s)):
        return below
    return None


def step_belies(guest, seen, disk_mb_s):
    """Whether the step from the last smaller measurement belies it.

    The foot: of ``seen``, the latest measured below the guest's size.
    Far enough below and promising enough (:func:`_promised_over`), with
    reads now (``disk_mb_s``) not risen past mrc.PHASE_SHARE of the
    foot's (a new workload), and saving less than half the promise
    (mrc.promise_belied).
    """
    foot = max((x for x in seen if x.size_mb < guest.actual_mb),
               key=lambda x: x.timestamp, default=None)
    if foot is None or not _promised_over(foot, guest.actual_mb) or (
            disk_mb_s > (1 + mrc.PHASE_SHARE) * foot.disk_mb_s):
        return False
    here = mrc.Seen(guest.actual_mb, 0.0, 0.0, guest.sample.timestamp,
                    disk_mb_s)
    return mrc.promise_belied(guest, (here, foot))


def larger_belies(guest, seen, disk_mb_s, phase_at):
    """Whether sizes it was measured at before, larger, belie it now.

    :func:`step_belies` read the other way round. A guest given a trial
    on its counters' word and measured reading as much there gives it
    back, and from then on is measured at its size with the larger sizes
    behind it: no grow from here is checked, and its counters price what
    it keeps here as they did before the trial (forged host 73: a stream
    claiming all it read would end 64 MiB up, measured reading 4.0 MiB/s
    from 704 to 1,216 MiB, kept 704 where honest it went to 640, and its
    neighbour read 21% more). Its measurement at its size is the foot;
    each larger one far enough above (:func:`_promised_over`), of the
    same workload (reads there and now within mrc.PHASE_SHARE of the
    foot's), must save less than half of what the counters at the foot
    promise (mrc.promise_belied). Only measurements taken once the
    workload begun at ``phase_at`` (None: before the policy watched)
    could have re-read all their cache held (:func:`_came_round`): in a
    first pass every size reads as much, while the pages an old workload
    left refault (random host 3,187: a 1 GiB scan after a reader over
    64 GiB, held so, lost the memory it fits in).
    """
    foot = next((x for x in seen if x.size_mb == guest.actual_mb), None)
    if foot is None or disk_mb_s > (1 + mrc.PHASE_SHARE) * foot.disk_mb_s:
        return False
    if not _came_round(foot, guest, phase_at):
        return False
    tops = [x for x in seen if x.size_mb > foot.size_mb
            and _promised_over(foot, x.size_mb)
            and x.disk_mb_s <= (1 + mrc.PHASE_SHARE) * foot.disk_mb_s
            and _came_round(x, guest, phase_at)]
    return bool(tops) and all(mrc.promise_belied(guest, (top, foot))
                              for top in tops)


def _came_round(measured, guest, phase_at):
    """Whether the workload read all a measurement's cache held before it.

    ``measured``: an mrc.Seen. Since ``phase_at``, at the rate it read
    there: as much as its size less the guest's used memory.
    """
    return phase_at is None or (
        (measured.timestamp - phase_at) * measured.disk_mb_s
        >= measured.size_mb - guest.sample.used_mb)


def _promised_over(foot, size_mb):
    """Whether the counters at ``foot`` promised most of its reads by now.

    Their first segment (its ``length_mb``, the active list) is what
    activations promise; a step of mrc.ACTIVE_REACH_LISTS of it (and
    mrc.EMPIRICAL_REACH_MB) up to ``size_mb`` is past every refault they
    counted. At least 1/mrc.WITNESS_SLACK of the reads there: a smaller
    promise is within the noise of a window that still refills (wide host
    81: a scan short of its cliff promised 0.6 of 2.7 MiB/s).
    """
    step_mb = size_mb - foot.size_mb
    return (step_mb >= max(mrc.EMPIRICAL_REACH_MB,
                           mrc.ACTIVE_REACH_LISTS * foot.length_mb)
            and foot.density * foot.length_mb
            >= foot.disk_mb_s / mrc.WITNESS_SLACK)
