import collections
import dataclasses
import itertools

import testtools

from tests.unit import factory
from watcher_cams.policy import affinity
from watcher_cams.policy import model

DOMAINS = (model.LlcDomain('L3-0', (0, 1, 2, 3), 0),
           model.LlcDomain('L3-1', (4, 5, 6, 7), 1))


def guests(n, **kw):
    return [model.GuestView(uuid=factory.uid(i), name='g%d' % i,
                            max_mb=1024, actual_mb=1024, vcpus=2,
                            ram_pages=262144, cpus=((0, 1, 2, 3, 4, 5, 6,
                                                     7),) * 2, **kw)
            for i in range(1, n + 1)]


def host(gs, sharing, **kw):
    return factory.host(gs, llc_domains=DOMAINS, sharing={
        model.pair_key(factory.uid(a), factory.uid(b)): p
        for (a, b), p in sharing.items()}, **kw)


PARAMS = affinity.AffinityParams(cpu_allocation_ratio=1.0)


class TestAffinity(testtools.TestCase):
    def test_pairs_with_most_sharing_share_an_llc(self):
        # g1-g3 and g2-g4 share heavily; capacity 4 vCPUs per LLC.
        h = host(guests(4), {(1, 3): 150000, (2, 4): 140000, (1, 2): 500})
        plan = affinity.plan(h, PARAMS)
        where = {p.instance: p.llc for p in plan.pins}
        self.assertEqual(where[factory.uid(1)], where[factory.uid(3)])
        self.assertEqual(where[factory.uid(2)], where[factory.uid(4)])
        self.assertNotEqual(where[factory.uid(1)], where[factory.uid(2)])
        pin = plan.pins[0]
        self.assertIn(pin.cpus, ((0, 1, 2, 3), (4, 5, 6, 7)))
        self.assertAlmostEqual(290000 / 290500, plan.sharing_in_llc)

    def test_capacity_respected(self):
        h = host(guests(4), {(a, b): 1000 for a, b in
                             itertools.combinations(range(1, 5), 2)})
        plan = affinity.plan(h, PARAMS)
        load = {}
        for p in plan.pins:
            load[p.llc] = load.get(p.llc, 0) + 2
        self.assertTrue(all(v <= 4 for v in load.values()))

    def test_dedicated_guests_never_moved_but_attract(self):
        gs = guests(3)
        fixed = model.GuestView(uuid=factory.uid(9), name='ded', max_mb=1024,
                                actual_mb=1024, vcpus=2, ram_pages=262144,
                                dedicated_cpus=True, cpus=((6,), (7,)))
        h = host(gs + [fixed], {(1, 9): 200000, (2, 3): 100000})
        plan = affinity.plan(h, PARAMS)
        where = {p.instance: p.llc for p in plan.pins}
        self.assertNotIn(fixed.uuid, where)
        self.assertEqual('L3-1', where[factory.uid(1)])

    def test_guests_sharing_nothing_are_left_alone(self):
        # Found on the all-in-one cloud: before KSM had merged anything,
        # every guest was pinned to the first LLC.
        self.assertEqual([], affinity.plan(host(guests(4), {}), PARAMS).pins)
        plan = affinity.plan(host(guests(4), {(1, 2): 5000}), PARAMS)
        self.assertEqual({factory.uid(1), factory.uid(2)},
                         {p.instance for p in plan.pins})

    def test_guests_outside_the_audit_are_never_moved(self):
        # Found in CI: one of two fresh guests shared pages only with a
        # third guest outside the audit, and was pinned alone.
        gs = guests(3)
        gs[2] = dataclasses.replace(gs[2], problem='not in the audit scope')
        plan = affinity.plan(host(gs, {(1, 3): 50000}), PARAMS)
        self.assertEqual([], plan.pins)
        plan = affinity.plan(host(gs, {(1, 3): 50000, (1, 2): 10}), PARAMS)
        self.assertEqual({factory.uid(1), factory.uid(2)},
                         {p.instance for p in plan.pins})
        # Confined to L3-1 it stays there, counts in its load, and pulls.
        gs[2] = dataclasses.replace(gs[2], cpus=((4, 5),) * 2)
        plan = affinity.plan(host(gs, {(1, 3): 50000}), PARAMS)
        self.assertEqual([(factory.uid(1), 'L3-1')],
                         [(p.instance, p.llc) for p in plan.pins])
        # Its 2 vCPUs fill half of L3-1: g2 joins g1 there only if it fits.
        sharing = {(1, 3): 50000, (1, 2): 40000}
        plan = affinity.plan(host(gs, sharing), PARAMS)
        self.assertEqual({'L3-1': 1, 'L3-0': 1},
                         collections.Counter(p.llc for p in plan.pins))
        plan = affinity.plan(host(gs, sharing), affinity.AffinityParams(
            cpu_allocation_ratio=2.0))
        self.assertEqual({'L3-1'}, {p.llc for p in plan.pins})

    def test_pinned_loners_count_and_ties_spread_the_load(self):
        # g3 shares nothing but is pinned to L3-0 with 2 vCPUs: the sharing
        # pair (4 vCPUs) only fits on L3-1.
        gs = guests(3)
        gs[2] = model.GuestView(uuid=factory.uid(3), name='g3', max_mb=1024,
                                actual_mb=1024, vcpus=2, ram_pages=262144,
                                cpus=((0, 1, 2, 3),) * 2)
        plan = affinity.plan(host(gs, {(1, 2): 5000}), PARAMS)
        self.assertEqual({'L3-1'}, {p.llc for p in plan.pins})
        # Two pairs sharing equally little with each other: one per LLC,
        # not both on the first.
        ratio2 = affinity.AffinityParams(cpu_allocation_ratio=2.0)
        one_vcpu = [dataclass_vcpus(g, 1) for g in guests(4)]
        plan = affinity.plan(host(one_vcpu, {(1, 2): 100, (3, 4): 100}),
                             ratio2)
        where = {p.instance: p.llc for p in plan.pins}
        self.assertEqual(where[factory.uid(1)], where[factory.uid(2)])
        self.assertNotEqual(where[factory.uid(1)], where[factory.uid(3)])

    def test_one_llc_no_plan(self):
        h = factory.host(guests(2), llc_domains=DOMAINS[:1], sharing={
            model.pair_key(factory.uid(1), factory.uid(2)): 10})
        plan = affinity.plan(h, PARAMS)
        self.assertEqual([], plan.pins)
        self.assertEqual(1.0, plan.sharing_in_llc)

    def test_greedy_plus_search_matches_exact_on_small_inputs(self):
        sharing = {(a, b): (a * 7919 + b * 104729) % 100000
                   for a, b in itertools.combinations(range(1, 7), 2)}
        six = [dataclass_vcpus(g, 1) for g in guests(6)]
        exact = affinity.plan(host(six, sharing), affinity.AffinityParams(
            cpu_allocation_ratio=1.0, exact_limit=8))
        heuristic = affinity.plan(host(six, sharing), affinity.AffinityParams(
            cpu_allocation_ratio=1.0, exact_limit=0))
        self.assertGreaterEqual(exact.sharing_kept_pages,
                                heuristic.sharing_kept_pages)
        self.assertGreaterEqual(heuristic.sharing_kept_pages,
                                0.9 * exact.sharing_kept_pages)


def dataclass_vcpus(g, n):
    return dataclasses.replace(g, vcpus=n)
