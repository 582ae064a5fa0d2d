import tempfile

import libvirt
import testtools

from tests.functional import env
from watcher_cams.agent import manager as agent_manager


class AgentTestCase(testtools.TestCase):
    """An agent manager on the shared lab guests, with a fresh state dir."""

    def setUp(self):
        super().setUp()
        self.lab = env.lab()
        self.state_dir = tempfile.mkdtemp(prefix='cams-ft-state-')
        self.addCleanup(self.reset_guests)

    def manager(self, **overrides):
        return agent_manager.AgentManager(
            env.agent_conf(self.state_dir, **overrides))

    def reset_guests(self):
        """Full size and default affinity, whatever the test did."""
        for dom in (self.lab.a, self.lab.b):
            try:
                ncpus = len(dom.vcpuPinInfo(0)[0])
                every = tuple([True] * ncpus)
                for vcpu in range(dom.info()[3]):
                    dom.pinVcpu(vcpu, every)
                dom.pinEmulator(every, libvirt.VIR_DOMAIN_AFFECT_LIVE)
                dom.setMemoryFlags(env.GUEST_MB * 1024,
                                   libvirt.VIR_DOMAIN_AFFECT_LIVE)
            except libvirt.libvirtError:
                pass  # a test replaced the guest; the next lab() call knows
