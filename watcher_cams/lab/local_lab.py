"""The ``guests`` lab on this host's libvirt, agent and strategies in-process.

The agent (:class:`watcher_cams.agent.manager.AgentManager`) runs in this
process on the real guests, the real Watcher strategy plans from its report
and the real Watcher actions resize balloons through it
(:mod:`watcher_cams.lab.runner`). :mod:`watcher_cams.lab.cloud` runs the
same experiment through Nova and Watcher instead.
"""

import tempfile

from watcher_cams.agent import manager as agent_manager
from watcher_cams import conf as cams_conf
from watcher_cams.lab import core
from watcher_cams.lab import guests as lab_guests
from watcher_cams.lab import real_guests
from watcher_cams.lab import runner

PREFIX = 'cams-lab-'
HOST = 'cams-lab'


class LocalLab(real_guests.Lab):
    """Guests booted on libvirt here; agent and strategies in-process."""

    def __init__(self, exp, image_dir, uri='qemu:///system', out=print,
                 progress=None):
        super().__init__(exp, out, progress)
        self.host = core.LabHost(image_dir, exp.data_mb, PREFIX, uri)
        self.agent = None
        self.report = None

    def close(self):
        self.host.close()

    def boot(self, agent=True):
        host = self.host
        host.close()
        guests = [core.GuestRun(lab_guests.boot(
            host.conn, PREFIX + g.name, host.image, host.workdir,
            memory_mb=g.max_mb, current_mb=g.boot_mb,
            dtype=self.exp.domain_type, lab_data_mb=self.exp.data_mb,
            agent=agent), g)
            for g in self.exp.guests]
        for g in guests:
            lab_guests.wait_for_agent(g.dom, timeout=300)
            # Every run starts from the same sizes, static included.
            lab_guests.wait_for_balloon(g.dom, g.spec.boot_mb, timeout=300)
        return guests

    def begin(self, label, guests):
        # The capacity guard sees exactly the memory the static run has.
        conf = cams_conf.isolated(
            host=HOST, connection_uri=self.host.uri,
            state_dir=tempfile.mkdtemp(prefix=PREFIX + 'state-'),
            reserved_host_memory_mb=core.reserved_for_budget_mb(
                self.host.conn, self.exp.budget_mb, guests),
            min_rate_interval=max(1, self.exp.cycle_s // 3),
            collect_sharing=False)
        self.agent = runner.LocalAgent(agent_manager.AgentManager(conf), HOST)

    def samples(self, guests):
        self.report = self.agent.get_report(HOST)
        return {g['uuid']: g.get('sample') for g in self.report['guests']}

    def cycle(self, label, guests, run, t, number):
        if real_guests.STRATEGIES[label] is None:
            return
        name, params = real_guests.STRATEGIES[label]
        model = runner.compute_model([self.report],
                                     only={g.uuid for g in guests})
        _, solution = runner.run(name, model, self.agent, params)
        names = {g.uuid: g.name for g in guests}
        for spec, outcome in runner.apply_actions(solution.actions,
                                                  self.agent):
            run.actions.extend({
                't': round(t, 1), 'cycle': number,
                'action': spec['action_type'],
                'guest': names[c['instance']],
                'from_mb': c.get('current_mb'),
                'to_mb': c.get('target_mb'), 'outcome': outcome,
                'reason': c['reason']} for c in runner.guest_changes(spec))

    def end(self, label, guests, run):
        self.close()
