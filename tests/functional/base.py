import tempfile
import time

import libvirt
import testtools

from tests.functional import env
from watcher_cams.agent import manager as agent_manager


# The agent accepts a balloon within this many MiB of its target (the
# guest driver works in pages and may stop a little short).
BALLOON_SLACK_MB = 4


def balloon_mb(dom, target_mb, slack_mb=BALLOON_SLACK_MB, timeout=60.0):
    """The guest's balloon size once it is within slack of the target.

    A balloon change is asynchronous: libvirt's figure moves as the guest
    driver gives or takes pages. Waits up to timeout and returns the last
    figure either way, for the caller to assert on.
    """
    deadline = time.monotonic() + timeout
    while True:
        actual = dom.info()[2] // 1024
        if abs(actual - target_mb) <= slack_mb or time.monotonic() > deadline:
            return actual
        time.sleep(0.25)


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

    def assertBalloon(self, target_mb, dom):
        actual = balloon_mb(dom, target_mb)
        self.assertLessEqual(abs(actual - target_mb), BALLOON_SLACK_MB,
                             'balloon at %d MiB, expected %d MiB'
                             % (actual, target_mb))

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
        # The next test starts from the full size, not from a deflation
        # still under way.
        for dom in (self.lab.a, self.lab.b):
            try:
                balloon_mb(dom, env.GUEST_MB, slack_mb=0)
            except libvirt.libvirtError:
                pass
