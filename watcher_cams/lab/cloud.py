"""``watcher-cams-lab cloud``: the real-guest lab through OpenStack.

The experiment of ``watcher-cams-lab guests`` (:mod:`real_guests`), with
every part an operator would use: the guests are Nova servers on one
compute node (a flavor whose ephemeral disk holds the readers' data), the
operator's first plan sizes them to their boot sizes through an actuator
audit, and each strategy runs as a continuous Watcher audit (an audit
template scoped to the lab's servers, auto-trigger, interval = the lab's
cycle) whose plans Watcher's applier applies through the node's
watcher-cams-agent. The lab only watches: it reads each guest's reader
status and counters through the guest agent and QEMU's block stats over
the compute node's libvirt, and at the end of a run takes Watcher's
actions for the table.
"""

import uuid

import libvirt
from oslo_log import log

from watcher_cams.agent.collectors import guest_agent
from watcher_cams.lab import cloud_api
from watcher_cams.lab import core
from watcher_cams.lab import guests as lab_guests
from watcher_cams.lab import real_guests
from watcher_cams.lab import runner

LOG = log.getLogger(__name__)
PREFIX = 'cams-lab-'
# Nova formats a flavor's ephemeral disk and the guest sees it as vdb; the
# readers read the device, so the filesystem on it does not matter.
DATA_DEVICE = '/dev/vdb'
DATA_DISK = 'vdb'


def audit_scope(all_hosts, host, others):
    """A compute scope leaving only ``host`` and none of ``others`` on it."""
    exclude = []
    nodes = [{'name': h} for h in all_hosts if h != host]
    if nodes:
        exclude.append({'compute_nodes': nodes})
    if others:
        exclude.append({'instances': [{'uuid': u} for u in others]})
    return [{'compute': [{'exclude': exclude}]}] if exclude else []


def lab_actions(actions, names, started):
    """Watcher's actions of a run as the lab's table rows.

    ``names``: {server id: guest name}; ``started``: the run's first sample
    (a POSIX time), from which each action's time is counted.
    """
    out = []
    for action in actions:
        stamp = cloud_api.parse_time(action['created_at']).timestamp()
        out.extend({
            't': round(stamp - started, 1), 'cycle': None,
            'action': action['action_type'],
            'guest': names.get(c['instance'], c['instance']),
            'from_mb': c.get('current_mb'),
            'to_mb': c.get('target_mb'), 'outcome': action['state'],
            'reason': c['reason']} for c in runner.guest_changes(action))
    return out


class CloudLab(real_guests.Lab):
    """Lab guests as Nova servers on ``host``, strategies as audits."""

    def __init__(self, exp, cloud, host, libvirt_uri, image='cams-tiny',
                 out=print, progress=None):
        super().__init__(exp, out, progress)
        if exp.data_mb % 1024:
            raise core.LabError(
                'the data lives on the flavor\'s ephemeral disk, in whole '
                'GB: --data-mb must be a multiple of 1024')
        self.cloud = cloud
        self.host = host
        if host not in cloud.compute_hosts():
            raise core.LabError('no nova-compute on host %r' % host)
        libvirt.registerErrorHandler(lambda *args: None, None)
        try:
            self.conn = libvirt.open(libvirt_uri)
        except libvirt.libvirtError as exc:
            raise core.LabError('libvirt of %s at %s: %s'
                                % (host, libvirt_uri, exc))
        self.image_id = cloud.image_id(image)
        gb = exp.data_mb // 1024
        self.flavors = {g.max_mb: cloud.flavor_id(
            '%s%d-%dg' % (PREFIX, g.max_mb, gb), g.max_mb, gb)
            for g in exp.guests}
        self.servers = {}
        self.audit = None
        self.template = None

    def close(self):
        for server in self.cloud.servers_on(self.host):
            if server['name'].startswith(PREFIX):
                self.cloud.delete_server(server['id'])
        self.servers = {}

    def boot(self, agent=True):
        if not agent:
            raise core.LabError('the cloud lab boots its guests through Nova, '
                                'with their guest agent; run utility-'
                                'agentless in the local lab')
        self.close()
        for g in self.exp.guests:
            server_id = self.cloud.boot(PREFIX + g.name,
                                        self.flavors[g.max_mb],
                                        self.image_id, self.host)
            self.servers[server_id] = g.name
        guests = [core.GuestRun(
            self.conn.lookupByUUIDString(server_id),
            next(g for g in self.exp.guests if g.name == name),
            data_path=DATA_DEVICE, data_disk=DATA_DISK)
            for server_id, name in self.servers.items()]
        for g in guests:
            lab_guests.wait_for_agent(g.dom, timeout=300)
        self.cloud.wait_reported(self.host, list(self.servers))
        # The operator's first plan: every run, static included, starts
        # from the boot sizes; Nova boots a server with all of its flavor.
        state = self.cloud.run_actions([{
            'action_type': 'cams_balloon', 'resource_id': g.uuid,
            'input_parameters': {'host': self.host,
                                 'target_mb': g.spec.boot_mb,
                                 'reason': 'lab: boot size'}}
            for g in guests if g.spec.boot_mb < g.spec.max_mb])
        if state != 'SUCCEEDED':
            raise core.LabError('the plan sizing the guests to their '
                                'boot sizes %s' % state)
        for g in guests:
            lab_guests.wait_for_balloon(g.dom, g.spec.boot_mb, timeout=300)
        return guests

    def begin(self, label, guests):
        if real_guests.STRATEGIES[label] is None:
            return
        strategy, params = real_guests.STRATEGIES[label]
        mine = {g.uuid for g in guests}
        others = [s['id'] for s in self.cloud.servers_on(self.host)
                  if s['id'] not in mine]
        self.template = self.cloud.create_audit_template(
            '%s%s-%s' % (PREFIX, label, uuid.uuid4().hex[:8]),
            self.cloud.strategy_goal(strategy), strategy,
            audit_scope(self.cloud.compute_hosts(), self.host, others))
        # Every strategy plans with the memory the static run has.
        params = dict(params, host_reserved_mb=core.reserved_for_budget_mb(
            self.conn, self.exp.budget_mb, guests))
        self.audit = self.cloud.create_audit(
            'CONTINUOUS', params, interval=str(self.exp.cycle_s),
            template=self.template)
        self.out('%s: audit %s (template %s), every %d s' % (
            label, self.audit, self.template, self.exp.cycle_s))

    def samples(self, guests):
        out = {}
        for g in guests:
            try:
                out[g.uuid] = guest_agent.collect(g.dom, timeout=10)
            except (guest_agent.GuestAgentError,
                    libvirt.libvirtError) as exc:
                LOG.warning('guest %s: no counters this cycle (%s)',
                            g.spec.name, exc)
                out[g.uuid] = None
        return out

    def end(self, label, guests, run):
        try:
            if self.audit:
                self.cloud.cancel_audit(self.audit)
                self.cloud.settle(self.audit)
                run.actions.extend(lab_actions(
                    self.cloud.actions(self.audit),
                    {g.uuid: g.spec.name for g in guests}, run.started))
            if self.template:
                self.cloud.delete_audit_template(self.template)
        finally:
            self.audit = self.template = None
            self.close()
