"""Exact pairwise KSM sharing between guests.

A guest's RAM is the largest anonymous read-write mapping of its QEMU
process. /proc/<pid>/pagemap gives the physical frame (PFN) behind each
page (root only), and /proc/kpageflags says which frames are KSM pages
(bit 21, KPF_KSM). Two guests share exactly the KSM frames both map, so the
pairwise matrix is the size of the intersections of their KSM frame sets.
"""

import array
import collections
import itertools
import os
import sys

PAGEMAP_PRESENT = 1 << 63
PAGEMAP_PFN_MASK = (1 << 55) - 1
KPF_KSM = 21
# kpageflags entries read at once (8 KiB). The kernel computes every entry
# read, and guest frames are scattered: small windows read fewer entries
# (2 GiB of guests here: 1<<16 took 0.22 s, 1<<12 0.16 s, 1<<10 0.10 s).
WINDOW_PAGES = 1 << 10
CHUNK_PAGES = 1 << 17       # pagemap entries read at once (1 MiB)


class SharingError(Exception):
    """The pairwise sharing cannot be computed (permissions, kernel)."""


def guest_ram_mapping(pid, root='/'):
    """(start, end) of the largest anonymous (or memfd) rw-p mapping."""
    best = None
    path = os.path.join(root, 'proc', str(int(pid)), 'maps')
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 5 or fields[1] != 'rw-p':
                continue
            if len(fields) > 5 and not fields[5].startswith('/memfd:'):
                continue  # file-backed or [heap]/[stack]: not guest RAM
            start, _, end = fields[0].partition('-')
            start, end = int(start, 16), int(end, 16)
            if best is None or end - start > best[1] - best[0]:
                best = (start, end)
    if best is None:
        raise SharingError('process %s has no anonymous rw mapping' % pid)
    return best


def _words(data):
    words = array.array('Q')
    words.frombytes(data[:len(data) - len(data) % 8])
    if sys.byteorder != 'little':
        words.byteswap()
    return words


def present_pfns(pid, start, end, page_size=4096, root='/'):
    """PFNs of the present pages of ``pid`` in [start, end)."""
    pfns = []
    path = os.path.join(root, 'proc', str(int(pid)), 'pagemap')
    with open(path, 'rb', buffering=0) as f:
        page = start // page_size
        last = end // page_size
        while page < last:
            count = min(CHUNK_PAGES, last - page)
            f.seek(page * 8)
            words = _words(f.read(count * 8))
            if not words:
                break
            pfns.extend(w & PAGEMAP_PFN_MASK for w in words
                        if w & PAGEMAP_PRESENT)
            page += len(words)
    if pfns and not any(pfns[:64]):
        # Without CAP_SYS_ADMIN the kernel reports PFN 0 for every page.
        raise SharingError('pagemap hides PFNs: the agent must run as root')
    return pfns


def ksm_frames(pfns, root='/'):
    """The subset of ``pfns`` that are KSM pages, per /proc/kpageflags."""
    windows = collections.defaultdict(list)
    for pfn in pfns:
        windows[pfn // WINDOW_PAGES].append(pfn)
    found = set()
    path = os.path.join(root, 'proc', 'kpageflags')
    with open(path, 'rb', buffering=0) as f:
        for window in sorted(windows):
            base = window * WINDOW_PAGES
            f.seek(base * 8)
            flags = _words(f.read(WINDOW_PAGES * 8))
            size = len(flags)
            found.update(pfn for pfn in windows[window]
                         if pfn - base < size
                         and flags[pfn - base] >> KPF_KSM & 1)
    return found


def guest_ksm_frames(pids, page_size=4096, root='/', merged=None):
    """{key: (ram_pages, set of KSM PFNs)} for {key: qemu pid}.

    ``merged`` ({key: pages merged now or None}, from ksm_stat) lets a
    process with nothing merged skip the page walk: it cannot share a KSM
    frame. None (kernel without the counter) always walks.
    """
    out = {}
    for key, pid in pids.items():
        start, end = guest_ram_mapping(pid, root)
        if merged is not None and merged.get(key) == 0:
            out[key] = ((end - start) // page_size, set())
            continue
        pfns = present_pfns(pid, start, end, page_size, root)
        out[key] = ((end - start) // page_size, ksm_frames(pfns, root))
    return out


def pairwise(frames):
    """[(a, b, pages)] for every pair of keys sharing at least one frame."""
    pairs = []
    for (a, (_, fa)), (b, (_, fb)) in itertools.combinations(
            sorted(frames.items()), 2):
        shared = len(fa & fb) if len(fa) <= len(fb) else len(fb & fa)
        if shared:
            pairs.append((a, b, shared))
    return pairs
