"""The agent's core: collect a report, apply guarded changes, keep state.

Collectors gather, controllers act, the policy decides (elsewhere): this
module only wires them to one libvirt connection and one state file. The
RPC endpoint (watcher_cams.agent.rpc) is a thin shell around it.
"""

import logging
import threading
import time

import libvirt
from oslo_log import log

from watcher_cams import accounting
from watcher_cams.agent.collectors import domains as domains_collector
from watcher_cams.agent.collectors import guest_agent
from watcher_cams.agent.collectors import host as host_collector
from watcher_cams.agent.collectors import ksm as ksm_collector
from watcher_cams.agent.collectors import process_io
from watcher_cams.agent.collectors import sharing as sharing_collector
from watcher_cams.agent import controllers
from watcher_cams.agent.controllers import balloon
from watcher_cams.agent.controllers import pinning
from watcher_cams.agent import overview
from watcher_cams import changes as state_store
from watcher_cams.conf import guards as guards_conf
from watcher_cams.policy import host_cache
from watcher_cams.policy import report as report_format

LOG = log.getLogger(__name__)


class UnknownInstance(LookupError):
    """The instance does not run on this host."""


class ProblemLog:
    """Logs a guest's problem when it starts and when it ends, not per poll.

    A guest without an agent would otherwise log one error every cycle.
    """

    def __init__(self):
        self._current = {}

    def update(self, uuid, problem):
        before = self._current.get(uuid)
        if problem == before:
            return
        if problem:
            # A guest without an agent is a normal (if unhelpful) setup;
            # anything else is an error worth an operator's look.
            level = (logging.WARNING
                     if problem.startswith(guest_agent.MISSING)
                     else logging.ERROR)
            LOG.log(level, 'Guest %s: %s; it is reported as such and left '
                    'alone until this clears', uuid, problem)
            self._current[uuid] = problem
        else:
            LOG.info('Guest %s: counters readable again', uuid)
            self._current.pop(uuid, None)

    def keep_only(self, uuids):
        for uuid in set(self._current) - set(uuids):
            del self._current[uuid]


class AgentManager:
    def __init__(self, conf, root='/', clock=time.time):
        opts = conf.watcher_cams_compute
        self.conf = conf
        self.opts = opts
        self.root = root
        self.clock = clock
        self.cfg = guards_conf.guard_config(conf)
        self.state = state_store.StateStore(opts.state_dir)
        self.dedicated_cpus = host_collector.parse_cpu_list(
            ','.join(opts.dedicated_cpus))
        shared = host_collector.parse_cpu_list(','.join(opts.shared_cpus))
        if not shared:
            shared = [c for c in host_collector.online_cpus(root)
                      if c not in set(self.dedicated_cpus)]
        self.shared_cpus = shared
        # Read once: the cache topology does not change while the agent
        # runs (after CPU hotplug, restart the agent).
        if opts.llc_cpus.strip():
            self.llc_domains = host_collector.configured_llc_domains(
                opts.llc_cpus, host_collector.online_cpus(root))
        else:
            self.llc_domains = host_collector.llc_domains(root)
        self.balloon = balloon.BalloonController(
            self.state, self.cfg, opts.balloon_timeout,
            opts.balloon_tolerance_mb)
        self.pinning = pinning.PinningController(
            self.state, shared, self.dedicated_cpus)
        self.problems = ProblemLog()
        self.history = report_format.SampleHistory(opts.min_rate_interval)
        # The host-side I/O counters of each guest, for host_cache windows.
        self.io_history = report_format.SampleHistory(opts.min_rate_interval)
        self.timeline = overview.Timeline(opts.timeline_points,
                                          opts.min_rate_interval)
        self._last = None  # (monotonic time, report, view, account)
        self._conn = None
        self._collect_lock = threading.Lock()
        self._change_lock = threading.RLock()
        self._sharing = (0.0, [], {})  # (time, pairs, ram pages per uuid)
        self._stop = threading.Event()
        self._thread = None

    # -- libvirt ---------------------------------------------------------
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

    def _describe_all(self):
        """{uuid: Domain} of the running guests; vanished ones skipped."""
        found = {}
        for dom in domains_collector.running(self.conn):
            try:
                domain = domains_collector.describe(dom)
            except libvirt.libvirtError as exc:
                if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                    LOG.debug('A domain vanished while being described')
                else:
                    self.problems.update(dom.UUIDString(),
                                         'libvirt error: %s' % exc)
                continue
            found[domain.uuid] = domain
        return found

    # -- collection ------------------------------------------------------
    def _guest_entry(self, domain, recorded):
        opts = self.opts
        entry = report_format.guest_entry(
            domain.uuid, domain.name, domain.max_mb, domain.actual_mb,
            base_mb=(domain.flavor_mb if domain.flavor_mb
                     and domain.flavor_mb < domain.max_mb else None),
            vcpus=domain.vcpus, dedicated=self.pinning.dedicated(domain),
            cpus=domain.vcpu_cpus, ram_pages=domain.max_mb * 256,
            policy_state=recorded.get('policy_state'),
            host_cache=self._host_cache(domain),
            domain_name=domain.domain_name,
            emulator_cpus=domain.emulator_cpus, qemu_pid=domain.qemu_pid,
            ksm_merging_pages=ksm_collector.process_merging_pages(
                domain.qemu_pid, self.root),
            balloon=domain.balloon, disks=domain.disks)
        try:
            sample = guest_agent.collect(domain.dom, opts.guest_agent_timeout,
                                         opts.guest_file_max_bytes,
                                         self.clock)
            # Parse it as the strategies will, so nonsense that is well
            # formed (MemAvailable > MemTotal...) is caught here as well.
            report_format.parse_sample(sample, domain.max_mb)
        except guest_agent.GuestAgentError as exc:
            entry.update(agent=exc.status, error=str(exc)[:200])
        except report_format.ReportError as exc:
            entry.update(agent=guest_agent.BAD_DATA, error=str(exc)[:200])
        else:
            entry['sample'] = sample
            entry['previous'] = self.history.add(domain.uuid, sample)
        self.problems.update(domain.uuid, None if entry['error'] is None
                             else '%s: %s' % (entry['agent'], entry['error']))
        return entry

    def _host_cache(self, domain):
        """The guest's reads through host-cached disks since a window ago."""
        sample = host_cache.io_sample(
            self.clock(), domain.qemu_pid, domain.disks,
            process_io.read_bytes(domain.qemu_pid, self.root))
        if sample is None:
            return None
        svc = host_cache.service(
            sample, self.io_history.add(domain.uuid, sample),
            self.opts.host_cache_min_read_mb)
        return svc.as_dict() if svc else None

    def _sharing_pairs(self, domains, merged):
        """Cached pairwise sharing [{'a','b','pages'}] and RAM pages."""
        when, pairs, pages = self._sharing
        now = time.monotonic()
        pids = {u: d.qemu_pid for u, d in domains.items() if d.qemu_pid}
        fresh = now - when < self.opts.sharing_interval
        same_guests = set(pages) == set(pids)
        if not self.opts.collect_sharing or (fresh and same_guests):
            return pairs, pages, 0.0
        start = time.monotonic()
        try:
            frames = sharing_collector.guest_ksm_frames(
                pids, root=self.root, merged=merged)
        except (OSError, ValueError, sharing_collector.SharingError) as exc:
            # A guest that exits mid-read, or no root: no matrix this time.
            self.problems.update('host:sharing', 'pairwise sharing: %s' % exc)
            return [], {}, 0.0
        self.problems.update('host:sharing', None)
        pairs = [{'a': a, 'b': b, 'pages': n}
                 for a, b, n in sharing_collector.pairwise(frames)]
        pages = {u: ram for u, (ram, _) in frames.items()}
        self._sharing = (now, pairs, pages)
        return pairs, pages, (time.monotonic() - start) * 1000.0

    def collect(self):
        """(report dict, {uuid: Domain}) of this host, collected now."""
        report, domains, _, _ = self._collect()
        return report, domains

    def _collect(self):
        """collect() plus the report's parsed HostView and HostAccount."""
        with self._collect_lock:
            started = time.monotonic()
            domains = self._describe_all()
            described = time.monotonic()
            recorded = self.state.all()
            guests = [self._guest_entry(d, recorded.get(u, {}))
                      for u, d in sorted(domains.items())]
            sampled = time.monotonic()
            pairs, ram_pages, sharing_ms = self._sharing_pairs(
                domains, {g['uuid']: g['ksm_merging_pages'] for g in guests})
            for guest in guests:
                if guest['uuid'] in ram_pages:
                    guest['ram_pages'] = ram_pages[guest['uuid']]
            self.history.keep_only(domains)
            self.io_history.keep_only(domains)
            self.problems.keep_only(list(domains) + ['host:sharing'])
            meminfo = host_collector.meminfo_kb(self.root)
            report = report_format.host_report(
                self.opts.host, self.clock(), meminfo['MemTotal'] // 1024,
                self.opts.reserved_host_memory_mb, guests,
                available_mb=meminfo.get('MemAvailable', 0) // 1024,
                ksm=ksm_collector.host_counters(self.root),
                llc=self.llc_domains, shared_cpus=self.shared_cpus,
                dedicated_cpus=self.dedicated_cpus, sharing=pairs,
                enabled=self.opts.enabled)
            view = report_format.parse_host(report)
            account = accounting.account(
                view, self.cfg, {g['uuid']: g['ksm_merging_pages'] or 0
                                 for g in guests})
            report['accounting'] = account.as_dict()
            finished = time.monotonic()
            report['collection'] = {
                'guests': len(guests),
                'libvirt_ms': (described - started) * 1000.0,
                'guest_agent_ms': (sampled - described) * 1000.0,
                'sharing_ms': sharing_ms,
                'total_ms': (finished - started) * 1000.0}
            self.timeline.add(view, report['timestamp'])
            self._last = (finished, report, view, account)
            return report, domains, view, account

    def get_report(self):
        return self.collect()[0]

    def get_overview(self, since=None):
        """The operators' overview (:mod:`watcher_cams.agent.overview`).

        From the newest collection if the background loop made it less
        than ``collect_interval`` ago: a page view should not cost a round
        of guest-agent calls.
        """
        last = self._last
        if last is None or (time.monotonic() - last[0]
                            > self.opts.collect_interval):
            self._collect()
            last = self._last
        _, report, view, account = last
        return overview.build(report, view, account, self.cfg,
                              self.timeline, since)

    # -- changes ---------------------------------------------------------
    def _require_enabled(self):
        if not self.opts.enabled:
            raise controllers.Refused(
                'changes are disabled on %s ([watcher_cams_compute] enabled '
                '= False)' % self.opts.host)

    def _lookup(self, instance):
        """(report, Domain, GuestView, HostAccount) of a running instance."""
        report, domains, view, account = self._collect()
        # A change follows: the next overview must not show this collection.
        self._last = None
        domain = domains.get(instance)
        if domain is None:
            raise UnknownInstance('instance %s does not run on %s'
                                  % (instance, self.opts.host))
        return report, domain, view.guest(instance), account

    def set_balloon(self, instance, target_mb, reason='', change_id=None):
        self._require_enabled()
        with self._change_lock:
            _, domain, guest, account = self._lookup(instance)
            return self.balloon.set(domain.dom, guest, account, target_mb,
                                    reason, domain.qemu_pid, change_id)

    def set_affinity(self, instance, cpus, reason='', change_id=None):
        self._require_enabled()
        with self._change_lock:
            _, domain, _, _ = self._lookup(instance)
            return self.pinning.set(domain, cpus, reason, change_id)

    def revert(self, instance, kind, change_id=None):
        with self._change_lock:
            _, domain, guest, account = self._lookup(instance)
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

    # -- background work -------------------------------------------------
    def reconcile(self, domains):
        """Re-apply recorded targets to guests whose QEMU was restarted.

        A reboot, a migration back or Nova regenerating the domain XML gives
        the guest its full size and default affinity again; the persisted
        target says what the last audit decided.
        """
        with self._change_lock:
            for domain, entry in self._recorded(domains):
                uuid = domain.uuid
                try:
                    self._reapply(domain, entry)
                except (controllers.Refused, controllers.ChangeFailed,
                        UnknownInstance) as exc:
                    self.problems.update(uuid, 're-applying: %s' % exc)

    def _reapply(self, domain, entry):
        entry = self._drop_stale(domain, entry)
        recorded = entry.get(balloon.KIND)
        if recorded and recorded.get('qemu_pid') != domain.qemu_pid:
            target = recorded['target_mb']
            if abs(domain.actual_mb - target) > self.opts.balloon_tolerance_mb:
                _, _, guest, account = self._lookup(domain.uuid)
                self.balloon.check(guest, account, target, step=False)
                LOG.info('Guest %s restarted: re-applying balloon %d MiB',
                         domain.uuid, target)
                self.balloon.resize(domain.dom, target)
            recorded['qemu_pid'] = domain.qemu_pid
            self.state.record(domain.uuid, balloon.KIND, recorded)
        recorded = entry.get(pinning.KIND)
        if recorded and recorded.get('qemu_pid') != domain.qemu_pid:
            pinned = recorded['pinned']
            if pinned['vcpus'] != domain.vcpu_cpus:
                LOG.info('Guest %s restarted: re-applying affinity %s',
                         domain.uuid, pinned['emulator'])
                self.pinning.apply(domain.dom, pinned['vcpus'],
                                   pinned['emulator'], domain.host_cpus)
            recorded['qemu_pid'] = domain.qemu_pid
            self.state.record(domain.uuid, pinning.KIND, recorded)

    def _drop_stale(self, domain, entry):
        """``entry`` without records a flavor change made stale.

        A resize gives the guest another size or vCPU count; a target chosen
        for the old flavor must not be applied to the new one. (The Nova
        driver extension forgets them itself; this covers nodes without it.)
        """
        entry = dict(entry)
        recorded = entry.get(balloon.KIND)
        if recorded and recorded.get('max_mb', domain.max_mb) \
                != domain.max_mb:
            LOG.info('Guest %s now has %d MiB, not %d: forgetting its '
                     'balloon target %d MiB', domain.uuid, domain.max_mb,
                     recorded['max_mb'], recorded['target_mb'])
            self.state.forget(domain.uuid, balloon.KIND)
            del entry[balloon.KIND]
        recorded = entry.get(pinning.KIND)
        if recorded and len(recorded['pinned']['vcpus']) != domain.vcpus:
            LOG.info('Guest %s now has %d vCPUs: forgetting its affinity',
                     domain.uuid, domain.vcpus)
            self.state.forget(domain.uuid, pinning.KIND)
            del entry[pinning.KIND]
        return entry

    def _recorded(self, domains):
        """(Domain, record) of running guests the agent has a record of.

        Records of instances libvirt no longer knows are dropped on the way.
        """
        for uuid, entry in self.state.all().items():
            domain = domains.get(uuid)
            if domain is None:
                self._forget_if_gone(uuid)
            else:
                yield domain, entry

    def _forget_if_gone(self, uuid):
        try:
            self.conn.lookupByUUIDString(uuid)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                LOG.info('Instance %s no longer exists; forgetting its '
                         'state', uuid)
                self.state.forget(uuid)

    def restore_all(self):
        """Give every guest the agent changed its full size and affinity."""
        with self._change_lock:
            for domain, entry in self._recorded(self._describe_all()):
                uuid = domain.uuid
                try:
                    if entry.get(balloon.KIND):
                        self.balloon.restore(domain.dom, uuid, domain.max_mb)
                    if entry.get(pinning.KIND):
                        self.pinning.restore(domain)
                except (controllers.ChangeFailed, libvirt.libvirtError) as exc:
                    LOG.error('Restoring %s failed: %s', uuid, exc)

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
            try:
                self.cycle()
            except Exception:  # keep collecting; the next cycle may work
                LOG.exception('Collection cycle failed')
            self._stop.wait(self.opts.collect_interval)

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
