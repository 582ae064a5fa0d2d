"""KSM merging within seconds for an experiment, and as it was afterwards.

The lab's tiny guests share a few hundred MiB of identical pages; with the
kernel's default scan rate KSM takes minutes to merge them (lab-notes.md).
The benchmark, the functional KSM test and the all-in-one cloud's pinning
tests scan fast while they run. Standard library only: tools/aio imports
it with the system's Python.
"""

import contextlib
import os

KSM = '/sys/kernel/mm/ksm'
FAST = (('pages_to_scan', '20000'), ('sleep_millisecs', '10'), ('run', '1'))


def setting(name, value=None, directory=KSM):
    """Read one of the host's KSM settings or counters, or write it."""
    path = os.path.join(directory, name)
    if value is None:
        with open(path) as f:
            return f.read().strip()
    with open(path, 'w') as f:
        f.write(value)


@contextlib.contextmanager
def fast(directory=KSM):
    """KSM merging fast inside; after, as before.

    If KSM was off, what it merged meanwhile is unmerged (run = 2) before
    it is stopped again, so no merged page outlives the experiment.
    """
    saved = [(name, setting(name, directory=directory)) for name, _ in FAST]
    try:
        for name, value in FAST:
            setting(name, value, directory)
        yield
    finally:
        if dict(saved)['run'] == '0':
            setting('run', '2', directory)
        for name, value in saved:
            setting(name, value, directory)
