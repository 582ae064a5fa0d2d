"""bench-agent's fake guest agents, read by the agent's real collector."""

import libvirt_qemu
import testtools

from tests.unit.agent import fakes
from watcher_cams.agent.collectors import guest_agent
from watcher_cams.lab import fake_agents

FILES = {'/proc/meminfo': fakes.MEMINFO.encode(),
         '/proc/vmstat': fakes.VMSTAT.encode(),
         guest_agent.PSI_PATH: fakes.PSI.encode()}


class Dom:
    def __init__(self, uuid):
        self.uuid = uuid

    def UUIDString(self):
        return self.uuid


class TestFakeGuestAgents(testtools.TestCase):

    def test_the_collector_reads_what_the_real_agent_gave(self):
        real = libvirt_qemu.qemuAgentCommand
        # A chunk smaller than the files: reads go on until eof.
        self.patch(guest_agent, 'READ_CHUNK', 100)
        agent = fake_agents.FakeGuestAgent(FILES, [0.0, 0.001])
        with fake_agents.answering({'a': agent}):
            sample = guest_agent.collect(Dom('a'))
        self.assertIs(real, libvirt_qemu.qemuAgentCommand)
        self.assertEqual(468524, sample['meminfo']['MemTotal'])
        self.assertEqual(98324, sample['vmstat']['pgpgin'])
        self.assertEqual(1.5, sample['psi']['some_avg10'])
        self.assertEqual({}, agent._open)  # every file closed

    def test_a_hung_agent_times_out_as_libvirt_s_does(self):
        agent = fake_agents.FakeGuestAgent(FILES, [0.0], hung=True)
        with fake_agents.answering({'a': agent}):
            exc = self.assertRaises(guest_agent.GuestAgentError,
                                    guest_agent.collect, Dom('a'),
                                    timeout=0.01)
        self.assertEqual(guest_agent.TIMEOUT, exc.status)

    def test_other_domains_reach_the_real_call_timed(self):
        calls, timings = [], []
        self.patch(libvirt_qemu, 'qemuAgentCommand',
                   lambda dom, cmd, timeout, flags: calls.append(
                       dom.UUIDString()) or '{"return": 7}')
        with fake_agents.answering({}, timings):
            self.assertEqual(7, guest_agent.GuestAgent(Dom('b')).command(
                'guest-ping'))
        self.assertEqual(['b'], calls)
        self.assertEqual(1, len(timings))
