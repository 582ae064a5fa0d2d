"""cams-lfu decides as the simulator's LFU guest does, access for access.

The guest component is C (a guest has no Python); ``cams-lfu replay`` runs
its policy (tools/guest/lfu-policy.h) on a trace with residency tracked in
memory, and the simulator's ``_LfuGuest`` (watcher_cams/policy/lfu.py) runs
on the same trace: every hit and miss, the swaps and the final hot set
must agree.
"""

import os
import random
import subprocess

import fixtures
import testtools

from watcher_cams.lab.sim import lfu as sim_lfu
from watcher_cams.policy import lfu

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
GUEST = os.path.join(TOP, 'tools', 'guest')


def build(out):
    """Build the guest tools into ``out``; the path of cams-lfu."""
    subprocess.run(['make', '-s', '-C', GUEST, 'OUT=' + out], check=True,
                   capture_output=True)
    return os.path.join(out, 'cams-lfu')


def python_replay(chunks, slots, per_block, params):
    params = lfu.LfuParams(block_mb=per_block,
                           check_every=params.check_every,
                           history=params.history,
                           confidence=params.confidence)
    guest = sim_lfu._LfuGuest({'chunk_mb': 1,
                               'lfu_cache_mb': slots * per_block}, params)
    hits = ''.join('h' if guest.read(c) else 'm' for c in chunks)
    return hits, guest.hot.swaps, guest.hot.misses, sorted(guest.hot.hot)


def c_replay(binary, chunks, slots, per_block, params):
    out = subprocess.run(
        [binary, 'replay', '-c', str(slots), '-b', str(per_block),
         '-k', str(params.check_every), '-H', str(params.history),
         '-C', repr(params.confidence)],
        input='\n'.join(map(str, chunks)) + '\n', capture_output=True,
        text=True, check=True).stdout.splitlines()
    _, swaps, _, misses, _, hot = out[1].split()
    return out[0], int(swaps), int(misses), sorted(map(int, hot.split(',')))


class TestCamsLfuReplay(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.binary = build(self.useFixture(fixtures.TempDir()).path)

    def check(self, chunks, slots, per_block, params):
        expected = python_replay(chunks, slots, per_block, params)
        got = c_replay(self.binary, chunks, slots, per_block, params)
        self.assertEqual(expected[1:], got[1:])
        self.assertEqual(expected[0], got[0])
        return expected

    def test_paper_parameters_on_the_papers_uniform_reads(self):
        # 4 GiB in 1 MiB chunks, 128 MiB blocks, 2.625 GiB of hot set.
        rng = random.Random(3)
        chunks = [rng.randrange(4096) for _ in range(20000)]
        hits, swaps, _, hot = self.check(chunks, 21, 128, lfu.PAPER)
        self.assertGreater(swaps, 10)
        self.assertEqual(21, len(hot))
        self.assertIn('h', hits)

    def test_small_cases_and_ties(self):
        rng = random.Random(11)
        for trial in range(30):
            nchunks = rng.randrange(8, 200)
            per_block = rng.randrange(1, 9)
            slots = rng.randrange(1, 6)
            params = lfu.LfuParams(check_every=rng.randrange(1, 6),
                                   history=rng.randrange(1, 40),
                                   confidence=rng.choice((0.0, 0.5, 2.0)))
            skew = rng.random()
            chunks = [rng.randrange(nchunks // 4 + 1) if rng.random() < skew
                      else rng.randrange(nchunks) for _ in range(400)]
            self.check(chunks, slots, per_block, params)

    def test_bad_arguments_are_refused(self):
        for args in (['replay', '-c', '0', '-b', '1'],
                     ['replay', '-c', '2', '-b', '-1'],
                     ['-c', '1', '-b', '2', '/dev/null', 'true'],
                     ['-c', '4', '/nonexistent', 'true']):
            proc = subprocess.run([self.binary] + args, capture_output=True,
                                  text=True, stdin=subprocess.DEVNULL)
            self.assertNotEqual(0, proc.returncode, args)
            self.assertTrue(proc.stderr, args)
