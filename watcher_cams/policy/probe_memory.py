"""A probe given back, remembered so that the same evidence does not repeat it.

A probe (:mod:`probes`) takes one step toward a guest on a bound: what
its next MiB may save, from a slope its reads showed below its size or
from its cache's last fill. The water-filling takes the step back where
the guest's counters, or the window that measured the new size, value it
below what its donors lose. Back at the size it was probed from, the
same slope is still there, and so is the bound: nothing the step showed
is in it (random host 10: a hot/cold reader above its hot set was probed
from 2,304 to 2,432 MiB four times in 53 minutes on one noisy window
below, and each step went back within two windows).

So the size a probe went from, and its bound, are kept once the step
went back (BACK_KEY), for ``memory_s`` while the guest is at that size;
a probe from there needs a bound well above the one that failed
(REPEAT_MARGIN). While the step is held, the policy state keeps the
probe itself (PROBED_KEY).
"""

import math

from watcher_cams.policy import mrc

# Policy state: [MiB probed from, MiB probed to, bound in MiB/s per MiB,
# when], while the guest holds the step.
PROBED_KEY = 'probed'
# Policy state: [MiB probed from, bound in MiB/s per MiB, when it was
# given back], while the guest is back at that size.
BACK_KEY = 'probe_back'
# A probe from a size a step went back from needs a bound this many times
# the one that failed: a slope from one noisy window below rises and
# falls by chance (random host 9: a reader probed from 3,200 to 3,840 MiB
# on 0.80 MiB/s per GiB, given back, and again on 0.97). 1.0 and 1.5
# measured in lab.rst.
REPEAT_MARGIN = 1.5


def record(state, guest, bound, to_mb):
    """Keep in ``state`` a probe of ``guest`` to ``to_mb`` on ``bound``."""
    state[PROBED_KEY] = [guest.actual_mb, to_mb, bound,
                         guest.sample.timestamp]


def carried(guest, params):
    """{key: value} of the guest's probe memory to keep this cycle.

    The probe while the guest holds its step (for ``memory_s`` at most);
    once it is back at the size it was probed from, the size and bound,
    for ``memory_s`` from then while it stays there.
    """
    now = guest.sample.timestamp
    probed = _entry(guest, PROBED_KEY, 4)
    if probed is not None:
        from_mb, to_mb, bound, at = probed
        if guest.actual_mb == from_mb:
            return {BACK_KEY: [from_mb, bound, now]}
        if guest.actual_mb == to_mb and 0 <= now - at <= params.memory_s:
            return {PROBED_KEY: probed}
    back = _entry(guest, BACK_KEY, 3)
    if back is not None and back[0] == guest.actual_mb and (
            0 <= now - back[2] <= params.memory_s):
        return {BACK_KEY: back}
    return {}


def repeats(guest, bound, params):
    """Whether a probe on ``bound`` repeats one given back at this size.

    ``bound``: what the guest's next MiB may save (MiB/s per MiB); less
    than REPEAT_MARGIN times the bound of the probe that went back.
    """
    back = carried(guest, params).get(BACK_KEY)
    return back is not None and bound < REPEAT_MARGIN * back[1]


def _entry(guest, key, length):
    """The state's list of ``length`` numbers under ``key``, or None.

    The agent keeps the state; a corrupt entry is forgotten.
    """
    value = mrc.state_entry(guest, key)
    if not (isinstance(value, list) and len(value) == length and all(
            isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v) for v in value)):
        return None
    return value
