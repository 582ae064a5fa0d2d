"""The heaps choose what a scan of every guest chooses, round after round."""

import random

import testtools

from watcher_cams.policy import exchange

G_MB = 64


class TableCurve:
    """hull_at and loss_at from random tables, ties included."""

    def __init__(self, rng):
        self.slopes = [rng.choice((0.0, 0.5, 1.0, rng.random()))
                       for _ in range(40)]
        self.losses = [rng.choice((0.0, 0.5, rng.random()))
                       for _ in range(40)]

    def hull_at(self, delta_mb, room_mb=None):
        step = delta_mb // G_MB
        return self.slopes[step % 40], G_MB * (1 + step % 3)

    def loss_at(self, given_mb, amount_mb):
        return self.losses[(given_mb // G_MB) % 40]


def scan(curves, delta, up, down, taker=None):
    """The choice by looking at every guest in UUID order."""
    best = (None, 0.0, 0)
    if taker is None:
        for u in sorted(delta):
            d = delta[u]
            if d >= 0 and up[u] - d >= G_MB:
                slope, seg_left = curves[u].hull_at(d, up[u] - d)
                if best[0] is None or slope > best[1]:
                    best = (u, slope, min(up[u] - d, max(seg_left, G_MB)))
        return best
    for u in sorted(delta):
        d = delta[u]
        if u != taker and d <= 0 and down[u] + d >= G_MB:
            loss = curves[u].loss_at(-d, G_MB)
            if best[0] is None or loss < best[1]:
                best = (u, loss, down[u] + d)
    return best


class TestExchange(testtools.TestCase):

    def test_the_same_choices_as_a_scan(self):
        for seed in range(30):
            rng = random.Random(seed)
            uuids = ['g%02d' % i for i in range(rng.randint(2, 12))]
            curves = {u: TableCurve(rng) for u in uuids}
            up = {u: G_MB * rng.randint(0, 8) for u in uuids}
            down = {u: G_MB * rng.randint(0, 8) for u in uuids}
            delta = dict.fromkeys(uuids, 0)
            market = exchange.Exchange(curves, delta, up, down, G_MB)
            for _ in range(60):
                taker = market.best_taker()
                self.assertEqual(scan(curves, delta, up, down), taker)
                donor = market.cheapest_donor(taker[0])
                if taker[0] is None:
                    self.assertEqual((None, 0.0, 0), donor)
                    break
                self.assertEqual(
                    scan(curves, delta, up, down, taker[0]), donor)
                if donor[0] is None:
                    break
                amount = G_MB * rng.randint(1, 2)
                amount = min(amount, taker[2], donor[2])
                amount -= amount % G_MB
                delta[taker[0]] += amount
                delta[donor[0]] -= amount
                market.moved(taker[0], donor[0])
