"""A new workload the host saw in the memory a guest touched, not its reads.

Utility mode takes a new workload from the guest's reads: where they
moved at the same size, what it measured at other sizes was another
workload's (mrc.of_this_phase). A workload can change at the same reads:
a hot/cold reader whose hot set fitted its cache, reading 1.9 MiB/s of
cold blocks, became a uniform reader over 64 GiB at 1.9 MiB/s (random
host 233). Its old measurements below, steep where its hot set stopped
fitting, went on pricing the 3.5 GiB it held for 90 minutes, while its
cache now saved it 0.1 MiB/s. The memory it touched tells them apart: the
hot/cold reader touched all its cache every window, the uniform reader a
third of it (host_io.Touched, the agent's referenced bits). Two
consecutive windows whose touched memory differs by more than TURN_SHARE
and two granules, beyond what the guest's sizes in them differed, read
another workload (:func:`turned`); cache_value._history then drops what
was measured, as for moved reads.

The policy state keeps the last whole window seen while the guest read
(STATE_KEY: MiB touched, when it ended, the least size held in it). A
tenant who makes its guest touch more or less can do no more than by
changing its reads: its measurements are dropped and measured anew.
"""

from watcher_cams.policy import mrc

# Policy state key: [MiB touched, when the window ended, least MiB held].
STATE_KEY = 'touched'
# Touched memory that moved by more than this share of the larger window's
# moved with another workload. Half (mrc.PHASE_SHARE, as for reads) missed
# random host 233's turn by a few MiB: its uniform reader touched 1,443 MiB
# against the hot/cold reader's 2,856 in a window a probe moved 128 MiB.
TURN_SHARE = 0.3


def remembered(guest):
    """(MiB touched, ended at, least MiB) of the window kept, or None."""
    state = guest.policy_state.get(mrc.STATE_KEY)
    value = state.get(STATE_KEY) if isinstance(state, dict) else None
    try:
        mb, ended_at, least_mb = (float(v) for v in value)
    except (TypeError, ValueError):
        return None
    return mb, ended_at, least_mb


def turned(guest, params):
    """Whether the guest's touched memory moved between two windows.

    The window the agent reports now and the one kept before it, the one
    begun when the other ended: moved by more than TURN_SHARE of the
    larger and two granules, beyond what its sizes in them moved (memory
    it did not have, it could not touch: a window that touched more than
    its size now held more). Not from or to a window that touched little
    more than its used memory: a guest idle for part of it, whose return
    rest_hold and mrc.resumed_from weigh.
    """
    touched = guest.host_io and guest.host_io.touched
    last = remembered(guest)
    if touched is None or last is None:
        return False
    mb, ended_at, least_mb = last
    size_mb, g_mb = guest.actual_mb, params.granule_mb
    if abs(ended_at - touched.started_at) > 1.0 or min(
            mb, touched.mb) <= guest.sample.used_mb + 2 * g_mb:
        return False
    resized_mb = max(abs(least_mb - size_mb), size_mb - touched.least_mb,
                     mb - size_mb, touched.mb - size_mb)
    return abs(touched.mb - mb) - resized_mb > max(
        2 * g_mb, TURN_SHARE * max(touched.mb, mb))


def remember(state, guest, reading):
    """Keep the guest's touched window in ``state`` while it reads.

    ``reading``: it read from disk and its CPUs did not idle this rate
    window. A window not kept breaks the chain: a guest back from a rest
    is measured anew by its reads (rest_hold, mrc.resumed_from).
    """
    touched = guest.host_io and guest.host_io.touched
    if touched is not None and reading:
        state[STATE_KEY] = [round(touched.mb, 1), touched.ended_at,
                            round(touched.least_mb, 1)]
