"""Memory a guest gave on evidence that no longer holds, back in one step.

Utility mode takes memory a guest's measurements price at nothing. Two
kinds of such evidence expire with the workload that made it:

- A guest that read nothing gave what it held to a taker (an idle
  guest's memory goes where it is worth something, or to a wide probe);
  when it reads again, what it read then (nothing) says nothing of what
  its new workload needs, and a scan that fits only in what it gave reads
  like a stream from the memory it kept: no refault, no measured slope,
  and single-granule probes never reach the size where it fits.
- A guest without an agent measured at sizes where it read the same
  (host_only.restore_target): a new workload's reads rise beyond them.

The size it held then (at most its entitled size) is one probe's step
(probes): its next windows measure it there and the water-filling takes
back what did not pay. The policy state keeps the size it held while it
read nothing (LENT_KEY) until it reads, and the step (RESTORE_KEY, with
the size it was found at) until the guest is resized.
"""

from watcher_cams.policy import mrc

# Policy state key: the size a probe gives back, and the size it was
# found at.
RESTORE_KEY = 'restore_mb'
# Policy state key: the largest size a guest held while it read nothing.
LENT_KEY = 'lent_mb'


def lent_mb(guest, lending):
    """The largest size held while it read nothing, or None.

    ``lending``: whether this window is one of those (the caller decides:
    it read less than mrc.READ_MB_S, and with an agent its CPUs idled).
    None once it is not: the size is then a restore target
    (:func:`restore_mb`) for this one window, and forgotten.
    """
    if not lending:
        return None
    return max(mrc.state_mb(guest, LENT_KEY) or 0, guest.actual_mb)


def restore_mb(guest, disk_mb_s, params, found_mb=None):
    """MiB to probe the guest back to, or None.

    The step kept for its size (RESTORE_KEY), ``found_mb`` (a size the
    caller found it gave on evidence that expired), and, once it reads
    (mrc.READ_MB_S), the size it held while it read nothing: the largest,
    at most its entitled size, at least a granule above its size.
    """
    targets = [_remembered_restore(guest), found_mb]
    if disk_mb_s >= mrc.READ_MB_S:
        targets.append(mrc.state_mb(guest, LENT_KEY))
    target = max((t for t in targets if t), default=None)
    if target is None:
        return None
    target = min(target, guest.entitled_mb)
    return target if target >= guest.actual_mb + params.granule_mb else None


def remember(state, curve):
    """Write ``curve``'s restore step and lent size into ``state``."""
    if curve.restore_mb is not None:
        state[RESTORE_KEY] = [curve.restore_mb, curve.size_mb]
    if curve.lent_mb is not None:
        state[LENT_KEY] = curve.lent_mb


def _remembered_restore(guest):
    """The target RESTORE_KEY keeps for the guest's size, or None."""
    value = mrc.state_entry(guest, RESTORE_KEY)
    if not (isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return None
    target, found_at = value
    return target if found_at == guest.actual_mb else None
