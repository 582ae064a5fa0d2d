"""The agent's manager: the locks, the libvirt connection, what RPC calls.

The split follows oVirt MoM: collectors gather, the monitor
(:mod:`watcher_cams.agent.monitor`) assembles the report, the controllers
act and the reconciler (:mod:`watcher_cams.agent.reconciler`) keeps
recorded changes applied; the policy decides elsewhere. This module wires
them to one libvirt connection and one state file, serializes changes, and
runs the background collection. The RPC endpoint
(:mod:`watcher_cams.agent.rpc`) is a thin shell around it.
"""

import contextlib
import threading
import time

import libvirt
from oslo_log import log

from watcher_cams.agent.collectors import domains as domains_collector
from watcher_cams.agent import controllers
from watcher_cams.agent.controllers import balloon
from watcher_cams.agent.controllers import pinning
from watcher_cams.agent import monitor as host_monitor
from watcher_cams.agent import overview
from watcher_cams.agent import reconciler as agent_reconciler
from watcher_cams import changes as state_store
from watcher_cams.conf import guards as guards_conf
from watcher_cams.policy import planning
from watcher_cams.policy import report as report_format

LOG = log.getLogger(__name__)


class AgentManager:
    def __init__(self, conf, root='/', clock=time.time):
        opts = conf.watcher_cams_compute
        self.conf = conf
        self.opts = opts
        self.cfg = guards_conf.guard_config(conf)
        self.state = state_store.StateStore(opts.state_dir)
        topology = host_monitor.host_topology(opts, root)
        self.balloon = balloon.BalloonController(
            self.state, self.cfg, opts.balloon_timeout,
            opts.balloon_tolerance_mb)
        self.pinning = pinning.PinningController(
            self.state, topology.shared_cpus, topology.dedicated_cpus)
        problems = host_monitor.ProblemLog()
        self.monitor = host_monitor.HostMonitor(
            opts, self.cfg, self.state, self.pinning, topology, problems,
            root, clock)
        self.reconciler = agent_reconciler.Reconciler(
            self.state, self.balloon, self.pinning, problems,
            opts.balloon_tolerance_mb)
        self.timeline = overview.Timeline(opts.timeline_points,
                                          opts.min_rate_interval)
        self._last = None  # (monotonic time, report, view, account)
        self._newest = None  # the same, not cleared by changes
        self._fresh = threading.Condition()  # notified when _last is set
        self._conn = None
        # Held by collections too: a report never shows a change half made.
        self._change_lock = threading.RLock()
        self._stop = threading.Event()
        self._wake = threading.Event()  # collect now, not at the interval
        self._thread = None
        self.failed_cycles = 0  # background cycles that raised

    @property
    def conn(self):
        if self._conn is None or not self._alive(self._conn):
            LOG.info('Connecting to libvirt at %s', self.opts.connection_uri)
            self._conn = libvirt.open(self.opts.connection_uri)
        return self._conn

    @staticmethod
    def _alive(conn):
        try:
            return conn.isAlive() == 1
        except libvirt.libvirtError:
            return False

    # -- reports ---------------------------------------------------------
    def collect(self):
        """(report dict, {uuid: Domain}) of this host, collected now."""
        found = self._collect()
        return found.report, found.domains

    def _collect(self):
        """A monitor.Collection, kept for reports, the overview, timeline."""
        with self._change_lock:
            found = self.monitor.collect(self.conn)
            self.timeline.add(found.view, found.report['timestamp'])
            with self._fresh:
                self._last = self._newest = (
                    time.monotonic(), found.report, found.view,
                    found.account)
                self._fresh.notify_all()
            return found

    def get_report(self):
        """This host's report, collected now (the lab's and tests' way)."""
        return self.collect()[0]

    def last_report(self):
        """The newest collection's report, with its age in ``age_s``.

        What an audit asks for. It never collects: an audit asks every
        host at once, and a host whose guest agents hang must not hold
        its answer up. The background loop collects every
        ``collect_interval`` and right after each change, so a report
        never predates a change the agent made. When no collection is at
        hand yet, waits ``report_wait`` seconds for the loop's next one,
        then refuses (NoCollection). Policy state is read now: the last
        audit may have saved some since.
        """
        with self._fresh:
            if not self._fresh.wait_for(lambda: self._last is not None,
                                        self.opts.report_wait):
                raise controllers.NoCollection(
                    'no collection of %s within %.0f s'
                    % (self.opts.host, self.opts.report_wait))
            taken, report = self._last[:2]
        recorded = self.state.all()
        guests = [dict(g, policy_state=recorded.get(g['uuid'], {}).get(
            'policy_state') or {}) for g in report['guests']]
        return dict(report, guests=guests,
                    age_s=round(time.monotonic() - taken, 3))

    def plan(self, request):
        """This host's plan for an audit's request (policy.planning).

        Planned from the newest collection, as :meth:`last_report` serves
        it, so the decision engine of a large cloud neither parses every
        host's report nor plans every host itself. The policy state the
        plan keeps is saved here at once, as ``save_policy_state`` would
        (no second call). Answers :func:`planning.answer` with ``age_s``.
        """
        raw = self.last_report()
        try:
            host, plan = planning.plan_report(raw, request)
        except (planning.PlanError, report_format.ReportError) as exc:
            raise controllers.Refused('plan request not served: %s' % exc)
        for guest in host.guests:
            if guest.problem:
                LOG.debug('plan: %s left alone: %s', guest.uuid,
                          guest.problem)
        if plan.policy_state:
            try:
                self.save_policy_state(plan.policy_state)
            except controllers.Refused as exc:
                LOG.warning('plan: policy state not saved, the next audit '
                            'plans without it: %s', exc)
        return dict(planning.answer(planning.planned(host, plan)),
                    age_s=raw['age_s'])

    def newest(self):
        """(monotonic time, report, view, account), or None before any.

        The newest collection, even one a change has made stale: the
        metrics page should not blink while the loop collects anew.
        """
        return self._newest

    def get_overview(self, since=None):
        """The operators' overview (:mod:`watcher_cams.agent.overview`).

        From the newest collection if the background loop made it less
        than ``collect_interval`` ago: a page view should not cost a round
        of guest-agent calls.
        """
        last = self._last
        if last is None or (time.monotonic() - last[0]
                            > self.opts.collect_interval):
            found = self._collect()
            last = (None, found.report, found.view, found.account)
        _, report, view, account = last
        return overview.build(report, view, account, self.cfg,
                              self.timeline, since)

    # -- changes ---------------------------------------------------------
    def _require_enabled(self):
        if not self.opts.enabled:
            raise controllers.Refused(
                'changes are disabled on %s ([watcher_cams_compute] enabled '
                '= False)' % self.opts.host)

    @contextlib.contextmanager
    def _changing(self):
        """Hold the change lock; on leaving, have the loop collect anew.

        Whatever the change did or failed to do, no report or overview
        is served from a collection made before it.
        """
        with self._change_lock:
            try:
                yield
            finally:
                with self._fresh:
                    self._last = None
                self._wake.set()

    def _lookup(self, instance):
        """(Domain, GuestView, HostAccount) of a running instance, now."""
        found = self._collect()
        domain = found.domains.get(instance)
        if domain is None:
            raise controllers.UnknownInstance(
                'instance %s does not run on %s' % (instance, self.opts.host))
        return domain, found.view.guest(instance), found.account

    def set_balloon(self, instance, target_mb, reason='', change_id=None):
        self._require_enabled()
        with self._changing():
            domain, guest, account = self._lookup(instance)
            return self.balloon.set(domain.dom, guest, account, target_mb,
                                    reason, domain.qemu_pid, change_id)

    def set_balloons(self, targets, reason='', change_id=None):
        """Resize several guests in order, from one collection.

        One host's whole plan in one call (:meth:`BalloonController.
        set_many`): one collection for all of them, not one per guest.
        """
        self._require_enabled()
        with self._changing():
            found = self._collect()
            return self.balloon.set_many(found, targets, reason, change_id)

    def revert_balloons(self, instances, change_id):
        """Undo change ``change_id`` of each guest: {uuid: answer}."""
        with self._changing():
            found = self._collect()
            return self.balloon.revert_many(found, instances, change_id)

    def set_affinity(self, instance, cpus, reason='', change_id=None):
        self._require_enabled()
        with self._changing():
            domain, _, _ = self._lookup(instance)
            return self.pinning.set(domain, cpus, reason, change_id)

    def revert(self, instance, kind, change_id=None):
        with self._changing():
            domain, guest, account = self._lookup(instance)
            if kind == balloon.KIND:
                return self.balloon.revert(domain.dom, guest, account,
                                           domain.qemu_pid, change_id)
            if kind == pinning.KIND:
                return self.pinning.revert(domain, change_id)
            raise controllers.Refused('unknown kind %r' % (kind,))

    def get_state(self):
        # The applier asks before every action: list the running domains'
        # UUIDs without describing each one.
        running = sorted(dom.UUIDString()
                         for dom in domains_collector.running(self.conn))
        return {'host': self.opts.host, 'enabled': self.opts.enabled,
                'running': running, 'instances': self.state.all()}

    def save_policy_state(self, states):
        if not isinstance(states, dict):
            raise controllers.Refused('states must be a mapping')
        with self._change_lock:
            for uuid, value in states.items():
                if not isinstance(value, dict) or len(repr(value)) > \
                        report_format.MAX_STATE_CHARS:
                    raise controllers.Refused('policy state of %s is not a '
                                              'small mapping' % uuid)
                merged = self.state.get(uuid, 'policy_state') or {}
                merged.update(value)
                self.state.record(uuid, 'policy_state', merged)
        return {'saved': sorted(states)}

    # -- recorded changes ------------------------------------------------
    def reconcile(self, domains):
        """Re-apply recorded targets to guests whose QEMU was restarted."""
        with self._change_lock:
            self.reconciler.reconcile(
                self.conn, domains, lambda uuid: self._lookup(uuid)[1:])

    def restore_all(self):
        """Give every guest the agent changed its full size and affinity."""
        with self._changing():
            self.reconciler.restore_all(
                self.conn, self.monitor.describe_all(self.conn))

    # -- background work -------------------------------------------------
    def cycle(self):
        _, domains = self.collect()
        if self.opts.enabled:
            self.reconcile(domains)

    def start(self):
        if not self.opts.enabled and self.opts.restore_on_disable:
            LOG.warning('Agent disabled: restoring every changed guest')
            self.restore_all()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='cams-collector')
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.cycle()
            except Exception:  # keep collecting; the next cycle may work
                self.failed_cycles += 1
                LOG.exception('Collection cycle failed')
            self._wake.wait(self.opts.collect_interval)

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
