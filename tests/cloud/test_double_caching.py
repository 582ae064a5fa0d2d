"""Double caching seen through Watcher: the report flags it, a plan says so.

cmp-b keeps the host's page cache under its guests' disks (tools/aio:
``disk_cachemodes = file=writeback``). A 512 MiB server there writes
768 MiB to its 1 GiB ephemeral disk, more than its page cache holds, and
then reads that part at random while its QEMU may keep only 32 MiB of host
page cache (a host short of memory, capped once the guest's memory is all
in use): what the guest's cache misses mostly comes from storage.
A one-shot ``cache_aware_balloon`` audit with ``recommend_lfu=true``,
scoped to the server, must count it in ``lfu_candidates`` and add a
``nop`` action naming it, which Watcher's applier runs.
"""

import os

import testtools

from tests.cloud import base
from watcher_cams.lab import double_caching
from watcher_cams.lab import guests as lab_guests

NODE = base.aio.COMPUTES[1][0]
FLAVOR = 'cams-dc-512-1g'
DATA_MB = 768
HOST_CACHE_MB = 32
# What writing DATA_MB through a TCG guest may take, at most. The whole
# test took 172-276 s in CI runs on the lab machine; while its hypervisor
# took half the CPUs the write alone ran past 300 s. The write is waited
# for; this only bounds a guest that never finishes.
WRITE_S = 900


class TestDoubleCachingOnTheCloud(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        flavors = base.openstack('flavor', 'list', '--all') or []
        if FLAVOR not in {f['Name'] for f in flavors}:
            base.openstack('flavor', 'create', '--vcpus', '1', '--ram',
                           '512', '--disk', '1', '--ephemeral', '1', FLAVOR)
        [self.server] = base.boot_for(self, ['cams-dc'], FLAVOR,
                                      NODE).values()
        self.dom = base.domain(self.server, NODE)

    def guest(self, command, timeout=300):
        code, out = lab_guests.guest_exec(self.dom, command, timeout)
        self.assertEqual(0, code, out)
        return out

    def test_recommended_for_a_guest_the_host_cache_does_not_serve(self):
        xml = self.dom.XMLDesc(0)
        self.assertIn("cache='writeback'", xml)
        # Data: Nova's fresh ephemeral disk is mostly holes, which the
        # host reads as zeros without touching storage. Written through the
        # guest's page cache, it also fills the guest's memory.
        self.guest('yes cams-double-caching | head -c %d >/dev/vdb; sync'
                   % (DATA_MB << 20), timeout=WRITE_S)
        name = self.dom.name()
        with open(os.path.join(base.aio.libvirt_dir(NODE), 'run', 'qemu',
                               name + '.pid')) as f:
            pid = int(f.read())
        double_caching.cap_host_cache(self.dom, pid, HOST_CACHE_MB)
        # Every read in the written three quarters of the disk.
        self.guest('cams-reader hotcold /dev/vdb -b 1024 -H 0.75 -P 1 '
                   '-r 16 </dev/null >/dev/null 2>&1 &')

        def recommended():
            audit = base.oneshot_audit(
                '-g', 'memory_cache_efficiency', '-s', 'cache_aware_balloon',
                '-p', 'recommend_lfu=true')
            plans = base.openstack('optimize', 'actionplan', 'list',
                                   '--audit', audit)
            if not plans:
                return None
            plan = plans[0]['UUID']
            self.assertEqual('SUCCEEDED', base.wait_for(
                'plan', lambda: base.finished('actionplan', plan)))
            nops = [a for a in base.plan_actions(plan)
                    if a['type'] == 'nop'
                    and self.server in a['params']['message']]
            return nops and (plan, nops)
        # The agent's next rate window must cover the reads.
        plan, nops = base.wait_for('a nop naming the server', recommended,
                                   timeout=240, every=15)
        self.assertEqual({'SUCCEEDED'}, {a['state'] for a in nops})
        self.assertIn('cams-lfu', nops[0]['params']['message'])
        shown = base.openstack('optimize', 'actionplan', 'show', plan)
        indicators = {i['name']: i['value']
                      for i in shown['Efficacy indicators']}
        self.assertGreaterEqual(indicators['lfu_candidates'], 1)
