"""Nova, Watcher and watcher-cams together on the all-in-one cloud.

Servers boot through Nova on cmp-a, whose nova-compute runs the driver
extension; actions go through Watcher's applier to the agent and libvirt.
"""

from lxml import etree
import testtools

from tests.cloud import base
from watcher_cams.lab import prometheus as lab_prometheus

SERVERS = ('cams-e2e-1', 'cams-e2e-2')
_servers = {}


class TestCloud(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        if not _servers:
            _servers.update(base.boot(SERVERS))
        self.servers = _servers

    def test_servers_on_the_extension_node_get_its_devices(self):
        for server_id in self.servers.values():
            server = base.openstack('server', 'show', server_id)
            self.assertEqual(('ACTIVE', base.NODE), (
                server['status'], server['OS-EXT-SRV-ATTR:host']))
            devices = etree.fromstring(base.virsh(
                'dumpxml', base.domain_name(server_id))).find('devices')
            balloon = devices.find('memballoon')
            # Nova alone writes autodeflate='on'.
            self.assertEqual(('virtio', 'off', '10'), (
                balloon.get('model'), balloon.get('autodeflate'),
                balloon.find('stats').get('period')))
            self.assertIsNotNone(devices.find(
                "channel/target[@name='org.qemu.guest_agent.0']"))

    def test_watcher_s_applier_resizes_through_the_agent(self):
        server_id = self.servers[SERVERS[0]]
        self.assertEqual(512, base.actual_mb(server_id))
        _, state = base.run_actions([base.balloon_action(
            server_id, 448, 'cloud test: value 0.750 MiB/s per GiB')])
        self.assertEqual('SUCCEEDED', state)
        self.assertLessEqual(abs(base.actual_mb(server_id) - 448), 8)
        # The cloud's Prometheus scrapes the node's agent: the resize, the
        # value its reason gave, and the balloon that followed it. Waited
        # for by the value: the plans tests before this one left targets
        # of 448 MiB on this server too, with reasons that give none, and
        # the scrape before this resize may still show one of them.
        prom = lab_prometheus.Prometheus(url=base.aio.PROMETHEUS)
        mine = '{host="%s",resource="%s"}' % (base.NODE, server_id)
        self.assertEqual(0.75 / 1024, base.wait_for(
            'the value in Prometheus', lambda: prom.value(
                'watcher_cams_instance_memory_value' + mine),
            timeout=120))
        self.assertEqual(448 * 2 ** 20, prom.value(
            'watcher_cams_instance_memory_target_bytes' + mine))
        base.wait_for('the balloon in Prometheus', lambda: abs(prom.value(
            'watcher_cams_instance_memory_actual_bytes' + mine)
            - 448 * 2 ** 20) <= 8 * 2 ** 20, timeout=120)
        _, state = base.run_actions([base.balloon_action(server_id, 512)])
        self.assertEqual('SUCCEEDED', state)
        self.assertLessEqual(abs(base.actual_mb(server_id) - 512), 8)

    def test_a_failed_plan_reverts_what_it_applied(self):
        first, second = (self.servers[name] for name in SERVERS)

        def full_size():
            back = [base.balloon_action(s, 512, 'test cleanup')
                    for s in (first, second) if base.actual_mb(s) != 512]
            if back:
                base.run_actions(back)
        self.addCleanup(full_size)
        # The second action asks for less than the agent's floor
        # (min_guest_mb 256): the agent refuses, the action fails, and the
        # plugin's workflow engine reverts the first.
        plan, state = base.run_actions([
            base.balloon_action(first, 448),
            base.balloon_action(second, 128)])
        self.assertEqual('FAILED', state)
        states = {a['params']['resource_id']: a['state']
                  for a in base.plan_actions(plan)}
        self.assertEqual({first: 'SUCCEEDED', second: 'FAILED'}, states)
        self.assertLessEqual(abs(base.actual_mb(first) - 512), 8)
        self.assertLessEqual(abs(base.actual_mb(second) - 512), 8)

    def test_a_cancelled_plan_reverts_what_it_applied(self):
        first, second = (self.servers[name] for name in SERVERS)
        # Twenty changes, one after the other (a second or so each), so
        # that the cancel lands half-way: Watcher starts no action after it
        # and the plugin's workflow engine reverts those that ran. Each has
        # its own reason: the planner merges identical actions.
        plan = base.start_actions(
            [base.balloon_action(s, (448, 384)[step % 2], 'step %d' % step)
             for step in range(10) for s in (first, second)])
        base.wait_for('the first action', lambda: any(
            a['state'] == 'SUCCEEDED' for a in base.plan_actions(plan)),
            timeout=120, every=0.5)
        base.openstack_quiet('optimize', 'actionplan', 'cancel', plan)
        state = base.wait_for('the plan', lambda: base.finished(
            'actionplan', plan), timeout=300, every=2)
        self.assertEqual('CANCELLED', state)
        actions = base.plan_actions(plan)
        ran = [a for a in actions if a['state'] == 'SUCCEEDED']
        self.assertTrue(ran)
        self.assertLess(len(ran), len(actions), actions)
        for a in ran:
            self.assertTrue(a['message'].startswith('Reverted: '), a)
        for server_id in (first, second):
            self.assertLessEqual(abs(base.actual_mb(server_id) - 512), 8)
