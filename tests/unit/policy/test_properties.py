"""Property tests of the design invariants over every policy module."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from tests.unit import factory
from watcher_cams.policy import baselines
from watcher_cams.policy import cams
from watcher_cams.policy import guards
from watcher_cams.policy import ksm
from watcher_cams.policy import margin
from watcher_cams.policy import model
from watcher_cams.policy import utility


@st.composite
def guests(draw, n):
    out = []
    for i in range(n):
        max_mb = draw(st.integers(512, 16384))
        actual = draw(st.integers(256, max_mb))
        used = draw(st.integers(0, actual))
        cache = actual - used
        active = draw(st.integers(0, cache))
        bad = draw(st.sampled_from([None, None, None, 'agent timeout']))
        g = factory.guest(
            i + 1, actual_mb=actual, max_mb=max_mb, used_mb=used,
            active_mb=active, inactive_mb=cache - active,
            read_mb_s=draw(st.floats(0, 50)),
            refault_s=draw(st.floats(0, 20000)),
            activate_s=draw(st.floats(0, 20000)),
            psi=draw(st.one_of(st.none(), st.floats(0, 100))),
            base_mb=draw(st.one_of(st.none(), st.integers(256, max_mb))),
            policy_state=draw(st.sampled_from([{}, {'margin': {
                'mode': 'up', 'margin_mb': 300, 'streak': 1,
                'cache_mb': 100.0, 'active_mb': 10.0, 'seen': True}}])))
        if bad:
            g = model.GuestView(**dict(g.__dict__, sample=None,
                                       problem=bad))
        out.append(g)
    return out


@st.composite
def hosts(draw):
    gs = draw(st.integers(1, 6).flatmap(guests))
    total = sum(g.actual_mb for g in gs)
    ram = draw(st.integers(max(1, total // 2), total * 2 + 1))
    saved = draw(st.integers(0, 4096))
    return factory.host(gs, ram_mb=ram,
                        reserved_mb=draw(st.integers(0, 1024)),
                        ksm=model.KsmStats(pages_sharing=saved * 256))


CONFIGS = st.builds(
    guards.GuardConfig, min_guest_mb=st.integers(0, 512),
    floor_margin_mb=st.integers(0, 256),
    ksm_safety_factor=st.floats(0, 1), max_step_mb=st.integers(64, 4096),
    min_change_mb=st.integers(0, 64))


def all_plans(host, cfg):
    rates = {g.uuid: float(int(g.uuid[-4:], 16) + 1) for g in host.guests}
    return {
        'cams': cams.plan(host, cfg),
        'utility': utility.plan(host, cfg),
        'margin': margin.plan(host, cfg),
        'ksm-paper': ksm.plan(host, cfg),
        'ksm-utility': ksm.plan(host, cfg, ksm.KsmParams(mode='utility')),
        'static': baselines.static_split(host, cfg),
        'sms': baselines.sms(host, cfg, rates),
    }


class TestInvariants(testtools.TestCase):
    @settings(max_examples=150, deadline=None)
    @given(hosts(), CONFIGS)
    def test_every_plan_keeps_the_guards(self, host, cfg):
        capacity = guards.capacity_mb(host, cfg)
        current = sum(g.actual_mb for g in host.guests)
        for name, plan in all_plans(host, cfg).items():
            targets = {g.uuid: g.actual_mb for g in host.guests}
            for m in plan.moves:
                g = host.guest(m.instance)
                self.assertTrue(g.has_data, name)
                self.assertLessEqual(m.target_mb, g.max_mb, name)
                if m.target_mb < g.actual_mb:
                    self.assertGreaterEqual(m.target_mb,
                                            guards.floor_mb(g, cfg), name)
                self.assertLessEqual(abs(m.delta_mb), cfg.max_step_mb, name)
                self.assertGreaterEqual(abs(m.delta_mb),
                                        max(1, cfg.min_change_mb), name)
                targets[m.instance] = m.target_mb
            total = sum(targets.values())
            self.assertLessEqual(total, max(capacity, current), name)

    @settings(max_examples=150, deadline=None)
    @given(hosts(), CONFIGS)
    def test_transfers_conserve_memory(self, host, cfg):
        # Utility also hands out what the host may promise and no guest
        # holds; nothing more.
        unheld = max(0, guards.capacity_mb(host, cfg)
                     - sum(g.actual_mb for g in host.guests))
        for plan, grown in ((cams.plan(host, cfg), 0),
                            (utility.plan(host, cfg), unheld)):
            delta = sum(m.delta_mb for m in plan.moves)
            self.assertLessEqual(delta, grown)
            if cfg.min_change_mb <= 64 and not grown:
                self.assertEqual(0, delta)

    @settings(max_examples=60, deadline=None)
    @given(hosts(), CONFIGS)
    def test_plans_are_deterministic(self, host, cfg):
        reordered = model.HostView(**dict(host.__dict__,
                                          guests=host.guests[::-1]))
        a, b = all_plans(host, cfg), all_plans(reordered, cfg)
        for name in a:
            self.assertEqual(sorted(a[name].moves, key=str),
                             sorted(b[name].moves, key=str), name)

    @settings(max_examples=80, deadline=None)
    @given(hosts(), CONFIGS)
    def test_applying_in_order_never_exceeds_capacity(self, host, cfg):
        capacity = guards.capacity_mb(host, cfg)
        for plan in all_plans(host, cfg).values():
            total = sum(g.actual_mb for g in host.guests)
            limit = max(capacity, total)
            for m in plan.moves:
                total += m.delta_mb
                self.assertLessEqual(total, limit)
