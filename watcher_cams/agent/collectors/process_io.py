"""What a QEMU process read from storage: /proc/<pid>/io."""

import os


def read_bytes(pid, root='/'):
    """``read_bytes`` of process ``pid``; None if unknown.

    The kernel counts there what the storage layer fetched for the process
    (all its threads), so reads served by the host's page cache are not in
    it. Only root may read another user's /proc/<pid>/io.
    """
    if not pid:
        return None
    try:
        with open(os.path.join(root, 'proc', str(int(pid)), 'io')) as f:
            for line in f:
                name, _, value = line.partition(':')
                if name == 'read_bytes':
                    return int(value)
    except (OSError, ValueError):
        pass
    return None
