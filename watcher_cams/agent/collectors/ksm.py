"""KSM counters: host-wide from sysfs, per QEMU process from /proc."""

import os
import resource

KSM_DIR = 'sys/kernel/mm/ksm'
COUNTERS = ('pages_shared', 'pages_sharing', 'pages_unshared',
            'pages_volatile', 'run', 'full_scans')


def host_counters(root='/'):
    """The sysfs counters, or None when the kernel has no KSM."""
    base = os.path.join(root, KSM_DIR)
    if not os.path.isdir(base):
        return None
    values = {}
    for name in COUNTERS:
        try:
            with open(os.path.join(base, name)) as f:
                values[name] = int(f.read().strip())
        except (OSError, ValueError):
            values[name] = 0
    values['page_size'] = resource.getpagesize()
    return values


def process_merging_pages(pid, root='/'):
    """Pages of process ``pid`` merged by KSM now; None if unknown.

    /proc/<pid>/ksm_stat has ksm_merging_pages on recent kernels; older ones
    have only /proc/<pid>/ksm_merging_pages; very old ones neither.
    """
    if not pid:
        return None
    proc = os.path.join(root, 'proc', str(int(pid)))
    try:
        with open(os.path.join(proc, 'ksm_stat')) as f:
            for line in f:
                name, _, value = line.partition(' ')
                if name == 'ksm_merging_pages':
                    return int(value)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(proc, 'ksm_merging_pages')) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None
