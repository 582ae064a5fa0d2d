"""What of a guest's cache its current workload never activated.

The kernel's file LRU holds pages its workloads read; a page reaches the
active list when it is hit again on the inactive one (``pgactivate``) or
refaulted within the active list's reach (``workingset_activate_file``),
and leaves it only when reclaim ages it. So after a phase change, pages
the old workload activated stay active beside a new one that fits, and
no counter tells them apart; but the new workload can have activated, at
most, as many pages as the guest counted activations since it began (a
page activated twice counts twice: the bound errs toward keeping). The
cache beyond that is the old workload's, which the new one has not read
twice: cache_value lets it go a granule a cycle while the guest reads
nothing (donation.unread_active_mb).

The baseline is the activation count when the policy saw the phase
change (cache_value._history), kept in the policy state. A guest whose
workload never changed while the policy watched it has none, and keeps
its active list: a slow scan that fits reads nothing from disk and hits
nothing on its inactive list for as long as it passes over its active
one, and every page it holds is its own. The counters are the guest's
claims: claiming fewer activations only gives its own memory away; a
baseline above the counters (junk, or a guest that rebooted and reset
them) is no baseline.
"""

from watcher_cams.policy import model

# Key of the baseline (pages activated when the workload began) in the
# policy state's utility part.
BASE_KEY = 'activated_base'


def activated(sample):
    """Pages the guest's kernel activated since it booted (a claim)."""
    return sample.pgactivate + sample.workingset_activate_file


def base(guest, state, window):
    """Pages activated when the guest's workload began, or None.

    ``state``: the utility part of its policy state; ``window``: (whether
    this window showed a phase change, which begins a workload at the
    window's start; whether the balloon shrank the guest within it). A
    shrink's reclaim demotes active pages, and the workload's hits on the
    inactive list activate them again: pages it had activated already,
    not counted twice.
    """
    new_phase, shrunk = window
    if new_phase:
        return activated(guest.previous)
    value = state.get(BASE_KEY) if isinstance(state, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if not 0 <= value <= activated(guest.sample):
        return None
    if shrunk:
        value += activated(guest.sample) - activated(guest.previous)
    return min(value, activated(guest.sample))


def never_activated_mb(guest, since):
    """MiB of its file LRU the workload since ``since`` never activated.

    ``since``: a :func:`base`; 0.0 without one.
    """
    if since is None:
        return 0.0
    fresh_mb = (activated(guest.sample) - since) * model.MB_PER_PAGE
    return max(0.0, guest.sample.file_lru_mb - fresh_mb)
