"""Whether what a guest says it read agrees with what the host read for it.

Everything the guest agent returns is the tenant's claim. Two of those
claims are reads, and the host counts reads itself (:mod:`host_io`): the
guest kernel's ``pgpgin`` is the KiB it read from its block devices, which
are the disks QEMU serves; and every refault is a page read back in, so
refaults can never come faster than the reads. A guest whose claims exceed
what QEMU read for it by more than the tolerance is not believed at all:
its sample is dropped, so no policy gives it memory for it (nor takes any
on its word), and the report, the overview and the panel say why.

The tolerance covers what honestly differs: the two windows end a few
milliseconds apart, readahead is counted on both sides, and a guest may
read from block devices QEMU does not serve (zram swap, a loop device over
a file counts twice). Those make an honest guest look like it claims too
much, and cost it only that it is left alone while they last.
"""

from typing import Optional

from watcher_cams.policy import model

DISAGREE = 'claims disagree with host-measured IO'
BACKWARDS = 'counters went backwards'
# Claims may exceed host-measured reads by this share plus this rate.
TOLERANCE = 0.25
SLACK_MB_S = 1.0


def went_backwards(guest) -> Optional[str]:
    """Why the guest has no rates although it has two samples, or None.

    A guest reboot resets its counters once; a guest whose counters go
    backwards every window has no rates, so no policy ever moves it: it
    is flagged, not silently frozen. Its samples stay (they say what it
    uses, which a reboot does not make untrue).
    """
    cur, prev = guest.sample, guest.previous
    if (cur is not None and prev is not None
            and cur.timestamp > prev.timestamp
            and model.rates(guest) is None):
        return ('%s: the guest rebooted, or reports counters it cannot '
                'have' % BACKWARDS)
    return None


def _beyond(claimed_mb_s, measured_mb_s):
    return claimed_mb_s > measured_mb_s * (1.0 + TOLERANCE) + SLACK_MB_S


def disagreement(guest) -> Optional[str]:
    """Why ``guest``'s counters cannot be believed, or None.

    None when there is nothing to compare: no two samples of the guest or
    no host-measured window yet (a policy has no rates then either).
    """
    rates, io = model.rates(guest), guest.host_io
    if rates is None or io is None:
        return None
    refault_mb_s = rates.refault_s * model.PAGE_KB / model.KB_PER_MB
    for what, claimed in (('disk reads (pgpgin)', rates.disk_read_mb_s),
                          ('refaults', refault_mb_s)):
        if _beyond(claimed, io.read_mb_s):
            return ('%s: it reports %s of %.1f MiB/s, QEMU read %.1f MiB/s '
                    'for it' % (DISAGREE, what, claimed, io.read_mb_s))
    return None
