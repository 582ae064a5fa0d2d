"""libcams-lfu.so on the real kernel: only the hot set stays cached.

cams-reader reads a file on this host's disk, once plainly and once under
cams-lfu, and the file's pages in the page cache are counted with mincore()
afterwards. Plainly, what it read stays cached; under cams-lfu only the
pages of the hot blocks do, and those are the blocks the reader reads most.
"""

import ctypes
import os
import random
import subprocess

import fixtures
import testtools

from tests.unit.lab import test_cams_lfu

MB = 1 << 20
FILE_MB = 64
BLOCK_MB = 4
CACHE_MB = 16
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long)
libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


def resident_pages(path):
    """Page numbers of ``path`` in the page cache now."""
    size = os.path.getsize(path)
    page = os.sysconf('SC_PAGE_SIZE')
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), 'mmap failed')
        vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
        try:
            if libc.mincore(addr, size, vec):
                raise OSError(ctypes.get_errno(), 'mincore failed')
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return [n for n, v in enumerate(vec) if v & 1]


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


class TestLfuShim(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        test_cams_lfu.build(self.dir)
        self.data = os.path.join(self.dir, 'data')
        rng = random.Random(5)
        with open(self.data, 'wb') as f:
            for _ in range(FILE_MB):
                f.write(rng.randbytes(MB))
        drop_cache(self.data)
        self.assertEqual([], resident_pages(self.data))
        self.reader = [os.path.join(self.dir, 'cams-reader'), 'hotcold',
                       self.data, '-b', '1024', '-n', '800', '-r', '0',
                       '-s', '3']

    def test_plain_reads_stay_cached(self):
        subprocess.run(self.reader, check=True, capture_output=True)
        pages = resident_pages(self.data)
        self.assertGreater(len(pages) * 4096, 40 * MB)

    def test_only_the_hot_set_stays_cached(self):
        status = os.path.join(self.dir, 'lfu.status')
        subprocess.run(
            [os.path.join(self.dir, 'cams-lfu'), '-c', str(CACHE_MB),
             '-b', str(BLOCK_MB), '-k', '10', '-H', '100', '-s', status,
             '-L', os.path.join(self.dir, 'libcams-lfu.so'), self.data]
            + self.reader, check=True, capture_output=True)
        with open(status) as f:
            counters, hot = f.read().splitlines()
        accesses, hits, misses, swaps, slots, nhot, done = map(
            int, counters.split())
        hot = {int(b) for b in hot.split(',')}
        self.assertEqual((800, 4, 4, 1), (accesses, slots, nhot, done))
        self.assertEqual(accesses, hits + misses)
        self.assertGreater(hits, 200)
        # The hot fifth of the file (12.8 MiB) is blocks 0-3.
        self.assertGreaterEqual(len(hot & {0, 1, 2, 3}), 3, hot)
        pages = resident_pages(self.data)
        per_block = BLOCK_MB * MB // 4096
        outside = [p for p in pages if p // per_block not in hot]
        self.assertEqual([], outside)
        self.assertLessEqual(len(pages) * 4096, CACHE_MB * MB)
        self.assertGreater(len(pages) * 4096, CACHE_MB * MB // 2)
