"""Guest memory the host saw a QEMU process touch: its referenced bits.

The host's page tables mark a page young when a CPU touches it through
them; writing ``1`` to /proc/<pid>/clear_refs clears those marks for a
process, and /proc/<pid>/smaps counts, per mapping, the memory marked
since (``Referenced``). QEMU keeps a guest's RAM in its largest
anonymous mapping (sharing.guest_ram_mapping), so that mapping's
Referenced over a window is the guest memory touched in it: its working
set as the host sees it, whatever the guest reports (the method of
Brendan Gregg's wss tool; see Documentation/filesystems/proc.rst).

Under TCG QEMU touches guest RAM through the host's page tables itself.
Under KVM the guest touches it through the second-level page tables,
whose accessed bits clear_refs neither clears nor counts: the figure would
be QEMU's own device accesses alone, so it is measured for TCG domains
only, and KVM domains report none. Idle page tracking and DAMON's virtual
address monitoring go through the MMU notifiers and would see them; the
host kernels here have neither built.

A window is only worth something if it is longer than the reuse of what
the guest touches: each one reports what was touched by its half and by
its end (a working set still growing in its second half was not seen
whole) and the smallest balloon size in it (memory the guest did not
have, it could not touch). A window whose QEMU process changed is dropped.
"""

import os
import re

from oslo_log import log as logging

from watcher_cams.agent.collectors import sharing
from watcher_cams.policy import host_io

LOG = logging.getLogger(__name__)
KB = 1024
# A mapping's first line in smaps: its address range.
_MAPPING = re.compile(r'^([0-9a-f]+)-([0-9a-f]+) ')


class TouchedError(Exception):
    """The referenced bits of a QEMU process could not be read or cleared."""


def ram_referenced_mb(pid, root='/'):
    """MiB of the guest RAM mapping of ``pid`` marked referenced.

    The mapping is the one sharing.guest_ram_mapping finds. Raises
    TouchedError where there is none, or on an OSError.
    """
    path = os.path.join(root, 'proc', str(int(pid)), 'smaps')
    try:
        ram = sharing.guest_ram_mapping(pid, root)
        with open(path) as smaps:
            mapping = None
            for line in smaps:
                header = _MAPPING.match(line)
                if header:
                    mapping = (int(header.group(1), 16),
                               int(header.group(2), 16))
                elif mapping == ram and line.startswith('Referenced:'):
                    return int(line.split()[1]) / KB
    except (OSError, ValueError, sharing.SharingError) as exc:
        raise TouchedError('cannot read %s: %s' % (path, exc))
    raise TouchedError('no Referenced line for the guest RAM in %s' % path)


def clear_referenced(pid, root='/'):
    """Clear the referenced bits of every page of process ``pid``."""
    path = os.path.join(root, 'proc', str(int(pid)), 'clear_refs')
    try:
        with open(path, 'w') as f:
            f.write('1')
    except OSError as exc:
        raise TouchedError('cannot clear %s: %s' % (path, exc))


class TouchedMemory:
    """Each guest's last whole window of touched memory.

    ``window_s``: its length (0: not measured); ``root``: of /proc.
    """

    def __init__(self, window_s, root='/'):
        self.window_s = window_s
        self.root = root
        self._open = {}
        self._last = {}
        # Guests whose measurement failed and was logged, until it works.
        self._failing = set()

    def update(self, uuid, pid, actual_mb, now):
        """The guest's last whole window (host_io.Touched), or None.

        ``actual_mb``: its balloon size now. Called at every collection:
        starts, halves and ends the guest's windows.
        """
        if not self.window_s or not pid:
            return None
        pid_window = self._open.get(uuid)
        try:
            if pid_window is None or pid_window[0] != pid:
                self._last.pop(uuid, None)
                self._start(uuid, pid, actual_mb, now)
                return None
            window = pid_window[1]
            window.saw_size(actual_mb)
            ended = window.advance(now, self.window_s, lambda: (
                ram_referenced_mb(pid, self.root)))
            if ended is not None:
                self._last[uuid] = ended
                self._start(uuid, pid, actual_mb, now)
        except TouchedError as exc:
            if uuid not in self._failing:
                LOG.warning('Guest %s: touched memory not measured: %s',
                            uuid, exc)
                self._failing.add(uuid)
            self._open.pop(uuid, None)
            self._last.pop(uuid, None)
        else:
            self._failing.discard(uuid)
        return self._last.get(uuid)

    def _start(self, uuid, pid, actual_mb, now):
        clear_referenced(pid, self.root)
        self._open[uuid] = (pid, host_io.TouchedWindow(now, actual_mb))

    def keep_only(self, uuids):
        """Forget the guests not in ``uuids``."""
        for table in (self._open, self._last):
            for uuid in set(table) - set(uuids):
                del table[uuid]
        self._failing &= set(uuids)
