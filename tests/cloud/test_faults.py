"""Faults on the real cloud: RabbitMQ restarted, the agent killed, a guest
deleted, each in the middle of Watcher's work.

After each: every running guest on cmp-a is at least the agent's floor, a
guest below its flavor size has a balloon record in the agent's state (so
it can be reverted or restored), records of deleted guests are dropped, and
the next audit or plan works again.
"""

import datetime
import os
import signal
import subprocess
import time

import libvirt
import testtools

from tests.cloud import base
from watcher_cams import changes as state_store

aio = base.aio
FLOOR_MB = 256
SLACK_MB = 8


def agent_state():
    """The agent's records, read as the agent and Nova's driver do."""
    return state_store.StateStore(os.path.join(
        aio.DATA, 'agent-' + base.NODE)).all()


def consumed_queues():
    """Names of the broker's queues that have a consumer.

    Reply queues aside: a process declares its reply queue again only when
    it next makes a call.
    """
    out = subprocess.run(
        ['rabbitmqctl', '-q', 'list_queues', 'name', 'consumers'],
        check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if (len(fields) == 2 and fields[1].isdigit() and int(fields[1])
                and not fields[0].startswith('reply_')):
            names.add(fields[0])
    return names


class TestFaults(testtools.TestCase):

    def setUp(self):
        super().setUp()
        base.cloud()
        self.conn = libvirt.open(base.libvirt_uri())
        self.addCleanup(self.conn.close)

    def assert_nothing_lost(self):
        state = agent_state()
        for dom in self.conn.listAllDomains(
                libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
            uuid = dom.UUIDString()
            actual = dom.info()[2] // 1024
            full = dom.maxMemory() // 1024
            self.assertGreaterEqual(actual, FLOOR_MB - SLACK_MB, uuid)
            if full - actual > SLACK_MB:
                self.assertIn('balloon', state.get(uuid, {}),
                              '%s at %d of %d MiB without a record'
                              % (uuid, actual, full))

    def _first_done(self, plan):
        return base.wait_for('the first action', lambda: any(
            a['state'] in ('SUCCEEDED', 'FAILED')
            for a in base.plan_actions(plan)), timeout=120, every=0.5)

    def test_rabbitmq_restarted_during_a_continuous_audit(self):
        servers = base.boot_for(self, ['cams-fault-mq'])
        server_id = servers['cams-fault-mq']
        audit = base.openstack(
            'optimize', 'audit', 'create', '-g', 'memory_cache_efficiency',
            '-s', 'margin_balloon', '-t', 'CONTINUOUS', '-i', '30',
            '--auto-trigger')['UUID']
        self.addCleanup(base.openstack_quiet, 'optimize', 'audit', 'update',
                        audit, 'replace', 'state=CANCELLED')
        # The margin controller sizes the idle guest down.
        base.wait_for('the first cycle', lambda: base.actual_mb(
            server_id) < 512 - 32, timeout=240, every=5)
        consumed = consumed_queues()
        subprocess.run(['rabbitmqctl', 'stop_app'], check=True,
                       capture_output=True)
        time.sleep(10)
        subprocess.run(['rabbitmqctl', 'start_app'], check=True,
                       capture_output=True)
        restarted = datetime.datetime.now(datetime.timezone.utc)
        self.assert_nothing_lost()
        # The queues are not durable: each service declares its own again
        # when it reconnects, which takes a while (backoff). A message sent
        # before its queue is back is dropped by the broker: an audit
        # created then stays PENDING for good (seen in CI). So wait until
        # every queue that had a consumer has one again.
        base.wait_for('every service subscribed again', lambda: not (
            consumed - consumed_queues()), timeout=180, every=3)
        # After the broker is back: a plan reaches the agent again...
        _, state = base.run_actions([base.balloon_action(server_id, 512)])
        self.assertEqual('SUCCEEDED', state)
        # ...and the audit's next cycles size the guest down again.
        base.wait_for('a cycle after the restart', lambda: base.actual_mb(
            server_id) < 512 - 32, timeout=300, every=5)
        self.assert_nothing_lost()
        # Nova comes back too, once the compute's heartbeat lost in the
        # outage has timed out (rpc_response_timeout, 60 s): until then the
        # scheduler counts the node as down (NoValidHost).
        base.wait_for('nova-compute on %s heard from' % base.NODE,
                      lambda: base.compute_heard_from() > restarted,
                      timeout=240, every=5)
        base.boot_for(self, ['cams-fault-mq-after'])

    def test_agent_killed_and_restarted_mid_plan(self):
        servers = base.boot_for(
            self, ['cams-fault-agent-1', 'cams-fault-agent-2'])
        ids = list(servers.values())
        plan = base.start_actions(
            [base.balloon_action(s, 448) for s in ids]
            + [base.balloon_action(s, 384) for s in ids])
        self._first_done(plan)
        name = 'watcher-cams-agent-' + base.NODE
        aio.signal_group(aio.alive(name), signal.SIGKILL)
        base.wait_for('the agent gone', lambda: not aio.alive(name),
                      timeout=30, every=0.5)
        os.unlink(aio.pidfile(name))
        time.sleep(5)
        aio.start_agent(base.NODE)
        state = base.wait_for('the plan', lambda: base.finished(
            'actionplan', plan), timeout=600, every=3)
        self.assertIn(state, ('SUCCEEDED', 'FAILED'))
        self.assert_nothing_lost()
        if state == 'FAILED':
            # The engine undid each guest's changes newest first, each by
            # its change id: the one whose reply died with the agent too,
            # if the agent had made it. Back at full size, unless the
            # agent was down when the engine tried.
            actions = base.plan_actions(plan)
            for server_id in ids:
                own = [a for a in actions
                       if a['params']['resource_id'] == server_id]
                if not any(a['message'].startswith('Not reverted')
                           for a in own):
                    self.assertLessEqual(
                        abs(base.actual_mb(server_id) - 512), SLACK_MB,
                        (server_id, own))
        # The restarted agent answers: every guest back to full size.
        back = [base.balloon_action(s, 512) for s in ids
                if base.actual_mb(s) != 512]
        if back:
            self.assertEqual('SUCCEEDED', base.run_actions(back)[1])
        for server_id in ids:
            self.assertLessEqual(abs(base.actual_mb(server_id) - 512),
                                 SLACK_MB)
        self.assert_nothing_lost()

    def test_guest_deleted_mid_plan(self):
        servers = base.boot_for(
            self, ['cams-fault-del-1', 'cams-fault-del-2'])
        kept, deleted = servers['cams-fault-del-1'], servers[
            'cams-fault-del-2']
        plan = base.start_actions([base.balloon_action(kept, 448),
                                   base.balloon_action(deleted, 448),
                                   base.balloon_action(deleted, 384)])
        self._first_done(plan)
        base.delete_server(deleted)
        state = base.wait_for('the plan', lambda: base.finished(
            'actionplan', plan), timeout=300, every=3)
        self.assertIn(state, ('SUCCEEDED', 'FAILED'))
        self.assert_nothing_lost()
        # The agent drops the deleted guest's records at its next
        # collection.
        base.wait_for('records of the deleted guest dropped',
                      lambda: deleted not in agent_state(), timeout=120,
                      every=5)
        if state == 'FAILED':
            # The plugin's engine reverted the kept guest's change.
            self.assertLessEqual(abs(base.actual_mb(kept) - 512), SLACK_MB)
        _, state = base.run_actions([base.balloon_action(kept, 400)])
        self.assertEqual('SUCCEEDED', state)
        self.assert_nothing_lost()
