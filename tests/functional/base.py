import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib

import libvirt
import oslo_messaging as messaging
import testtools
from testtools import content

from tests.functional import env
from watcher_cams.agent import manager as agent_manager
from watcher_cams import conf as cams_conf
from watcher_cams import rpcapi


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


AGENT_CONF = """[DEFAULT]
transport_url = {url}
log_file = {log}
debug = True

[watcher_cams_compute]
host = {host}
state_dir = {state}
connection_uri = {uri}
collect_interval = 5
"""


def wait_report(test, check, timeout=90.0):
    """The daemon's first whole report for which ``check`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        report = test.client.get_report(test.host, report_version=1)
        if check(report):
            return report
        test.assertLess(time.monotonic(), deadline, 'no such report')
        time.sleep(0.5)


class DaemonTestCase(AgentTestCase):
    """The watcher-cams-agent daemon on the lab guests, and its client.

    ``EXTRA_CONF``: more of the daemon's configuration file.
    """

    EXTRA_CONF = ''

    def setUp(self):
        super().setUp()
        tmp = tempfile.mkdtemp(prefix='cams-ft-rpc-')
        self.host = 'functional-%s' % uuidlib.uuid4().hex[:8]
        self.log = os.path.join(tmp, 'agent.log')
        conf_file = os.path.join(tmp, 'agent.conf')
        with open(conf_file, 'w') as f:
            f.write(AGENT_CONF.format(url=env.RABBIT_URL, log=self.log,
                                      host=self.host, state=self.state_dir,
                                      uri=env.URI) + self.EXTRA_CONF)
        agent = os.path.join(os.path.dirname(sys.executable),
                             'watcher-cams-agent')
        self.daemon = subprocess.Popen([agent, '--config-file', conf_file])
        self.addCleanup(self._stop_daemon)
        self.addOnException(self._attach_log)

        # oslo.messaging registers some client options (tracing) on the
        # global CONF only, so the client uses it, as the services do.
        conf = cams_conf.CONF
        conf([], project='watcher-cams')
        self.addCleanup(conf.reset)
        # The callers are Watcher's services, whose control_exchange is
        # 'watcher' (the agent's is oslo.messaging's default): the client
        # must reach the agent all the same. The first transport registers
        # the option; the client's transport reads it when created.
        messaging.get_rpc_transport(conf, url=env.RABBIT_URL).cleanup()
        conf.set_override('control_exchange', 'watcher')
        transport = messaging.get_rpc_transport(conf, url=env.RABBIT_URL)
        self.addCleanup(transport.cleanup)
        self.client = rpcapi.AgentAPI(conf, transport)
        self._wait_ready()

    def _wait_ready(self, timeout=90):
        deadline = time.monotonic() + timeout
        while True:
            self.assertIsNone(self.daemon.poll(), 'agent exited')
            try:
                return self.client._call(self.host, 'get_state', 2)
            except rpcapi.AgentUnreachable:
                if time.monotonic() > deadline:
                    raise

    def _stop_daemon(self):
        if self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(30)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()

    def _attach_log(self, exc_info):
        if os.path.exists(self.log):
            with open(self.log) as f:
                self.addDetail('agent-log', content.text_content(f.read()))
