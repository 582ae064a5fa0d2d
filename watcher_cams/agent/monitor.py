"""The agent's monitor: one report of this host from the collectors.

The split follows oVirt MoM: collectors gather one kind of counter each,
this monitor assembles them into the version-1 report (built by
:mod:`watcher_cams.policy.report`, which also parses it), the controllers
act and the policy decides elsewhere. The monitor holds what the report
needs between cycles (the previous samples for rates, the pairwise sharing
matrix it refreshes less often) and nothing that changes a guest.
"""

from concurrent import futures
import logging
import time
import typing

import libvirt
from oslo_log import log

from watcher_cams import accounting
from watcher_cams.agent.collectors import domains as domains_collector
from watcher_cams.agent.collectors import guest_agent
from watcher_cams.agent.collectors import host as host_collector
from watcher_cams.agent.collectors import ksm as ksm_collector
from watcher_cams.agent.collectors import process_io
from watcher_cams.agent.collectors import sharing as sharing_collector
from watcher_cams.agent.collectors import touched
from watcher_cams.policy import claims
from watcher_cams.policy import distrust
from watcher_cams.policy import host_cache
from watcher_cams.policy import host_io
from watcher_cams.policy import report as report_format

LOG = log.getLogger(__name__)
SHARING_PROBLEM = 'host:sharing'
HOST_ONLY = ('no guest agent: managed from its balloon statistics and '
             'host-measured reads only')


class Topology(typing.NamedTuple):
    """The CPUs guests may use and the last-level caches they sit in."""

    shared_cpus: list
    dedicated_cpus: list
    llc_domains: list


def host_topology(opts, root='/'):
    """The configured or discovered :class:`Topology`, read once.

    The cache topology does not change while the agent runs (after CPU
    hotplug, restart the agent).
    """
    dedicated = host_collector.parse_cpu_list(','.join(opts.dedicated_cpus))
    shared = host_collector.parse_cpu_list(','.join(opts.shared_cpus))
    if not shared:
        shared = [c for c in host_collector.online_cpus(root)
                  if c not in set(dedicated)]
    if opts.llc_cpus.strip():
        llc = host_collector.configured_llc_domains(
            opts.llc_cpus, host_collector.online_cpus(root))
    else:
        llc = host_collector.llc_domains(root)
    return Topology(shared, dedicated, llc)


class Collection(typing.NamedTuple):
    """One report, the guests it describes and what the policy reads."""

    report: dict
    domains: dict  # {uuid: domains_collector.Domain}
    view: object  # policy.model.HostView
    account: object  # accounting.HostAccount


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
        if problem == HOST_ONLY:
            LOG.info('Guest %s: %s', uuid, problem)
            self._current[uuid] = problem
        elif problem:
            # A guest without an agent is a normal (if unhelpful) setup,
            # and one whose claims the host disproves is its tenant's
            # doing; anything else is an error worth an operator's look.
            level = (logging.WARNING
                     if problem.startswith((guest_agent.MISSING,
                                            claims.DISAGREE,
                                            claims.BACKWARDS))
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


class HostMonitor:
    """Assembles this host's report; see the module docstring."""

    def __init__(self, opts, cfg, state, pinning, topology, problems,
                 root='/', clock=time.time):
        self.opts = opts
        self.cfg = cfg
        self.state = state
        self.pinning = pinning  # asked which guests have dedicated CPUs
        self.topology = topology
        self.problems = problems
        self.root = root
        self.clock = clock
        self.history = report_format.SampleHistory(opts.min_rate_interval)
        # The host-side I/O counters of each guest, for host_cache windows.
        self.io_history = report_format.SampleHistory(opts.min_rate_interval)
        # QEMU's block and balloon counters of each guest, for host_io.
        self.block_history = report_format.SampleHistory(
            opts.min_rate_interval)
        self._sharing = (0.0, [], {})  # (time, pairs, ram pages per uuid)
        self.touched = touched.TouchedMemory(opts.touched_window, root)

    def describe_all(self, conn):
        """{uuid: Domain} of the running guests; vanished ones skipped."""
        found = {}
        for dom in domains_collector.running(conn):
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

    def collect(self, conn):
        """A :class:`Collection` of this host, collected now."""
        started = time.monotonic()
        domains = self.describe_all(conn)
        described = time.monotonic()
        guests = self._guest_entries(domains)
        sampled = time.monotonic()
        pairs, sharing_ms = self._add_sharing(domains, guests)
        for history in (self.history, self.io_history, self.block_history,
                        self.touched):
            history.keep_only(domains)
        self.problems.keep_only(list(domains) + [SHARING_PROBLEM])
        report = self._host_report(guests, pairs)
        view = report_format.parse_host(report)
        self._note_problems(report['guests'], view)
        account = accounting.account(
            view, self.cfg, {g['uuid']: g['ksm_merging_pages'] or 0
                             for g in guests})
        report['accounting'] = account.as_dict()
        report['collection'] = {
            'guests': len(guests),
            'libvirt_ms': (described - started) * 1000.0,
            'guest_agent_ms': (sampled - described) * 1000.0,
            'sharing_ms': sharing_ms,
            'total_ms': (time.monotonic() - started) * 1000.0}
        return Collection(report, domains, view, account)

    def _host_report(self, guests, pairs):
        meminfo = host_collector.meminfo_kb(self.root)
        topology = self.topology
        return report_format.host_report(
            self.opts.host, self.clock(), meminfo['MemTotal'] // 1024,
            self.opts.reserved_host_memory_mb, guests,
            available_mb=meminfo.get('MemAvailable', 0) // 1024,
            ksm=ksm_collector.host_counters(self.root),
            llc=topology.llc_domains, shared_cpus=topology.shared_cpus,
            dedicated_cpus=topology.dedicated_cpus, sharing=pairs,
            enabled=self.opts.enabled)

    def _note_problems(self, entries, view):
        """Log each guest's problem once; flag claims the host disproves.

        The parser drops a guest's samples when what it says it read
        disagrees with what QEMU read for it (:mod:`policy.claims`); the
        report says so in the guest's ``claims``, as it says when the
        guest's counters went backwards, or when utility mode holds a
        guest whose counters the host's reads belied (:mod:`policy.distrust`).
        """
        for entry in entries:
            guest = view.guest(entry['uuid'])
            problem = None
            if guest.host_only:
                problem = HOST_ONLY
            elif entry['error'] is not None:
                problem = '%s: %s' % (entry['agent'], entry['error'])
            else:
                why = (guest.problem if guest.problem and
                       guest.problem.startswith(claims.DISAGREE)
                       else claims.went_backwards(guest)
                       or distrust.flag(guest))
                if why:
                    entry['claims'] = why
                    problem = why.partition(':')[0]
            self.problems.update(entry['uuid'], problem)

    def _guest_entries(self, domains):
        """The report's guest entries; guests that vanish meanwhile go.

        ``domains`` loses them too: a guest deleted while its agent was
        read is not in this report, and nothing else is lost.
        """
        recorded = self.state.all()
        uuids = sorted(domains)

        def entry(uuid):
            try:
                return self._guest_entry(domains[uuid],
                                         recorded.get(uuid, {}))
            except libvirt.libvirtError as exc:
                if exc.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                    raise
                LOG.info('Guest %s vanished while it was sampled; it is '
                         'left out of this report', uuid)
                return None

        # One slow guest agent delays its own sample, not the others'.
        with futures.ThreadPoolExecutor(
                max_workers=max(1, min(self.opts.guest_workers, len(uuids))),
                thread_name_prefix='cams-guest') as pool:
            found = list(pool.map(entry, uuids))
        for uuid, one in zip(uuids, found):
            if one is None:
                del domains[uuid]
        return [one for one in found if one is not None]

    def _guest_entry(self, domain, recorded):
        now = self.clock()  # of the host-side counters
        entry = report_format.guest_entry(
            domain.uuid, domain.name, domain.max_mb, domain.actual_mb,
            base_mb=(domain.flavor_mb if domain.flavor_mb
                     and domain.flavor_mb < domain.max_mb else None),
            vcpus=domain.vcpus, dedicated=self.pinning.dedicated(domain),
            cpus=domain.vcpu_cpus, ram_pages=domain.max_mb * 256,
            policy_state=recorded.get('policy_state'),
            host_cache=self._host_cache(domain, now),
            host_io=self._host_io(domain, now),
            domain_name=domain.domain_name,
            emulator_cpus=domain.emulator_cpus, qemu_pid=domain.qemu_pid,
            ksm_merging_pages=ksm_collector.process_merging_pages(
                domain.qemu_pid, self.root),
            balloon=domain.balloon, disks=domain.disks)
        self._add_sample(entry, domain)
        return entry

    def _add_sample(self, entry, domain):
        """The guest's own counters in ``entry``, or why there are none."""
        opts = self.opts
        try:
            sample = guest_agent.collect(
                domain.dom, opts.guest_agent_timeout,
                opts.guest_file_max_bytes, self.clock,
                total_s=opts.guest_sample_timeout)
            # Parse it as the strategies will, so nonsense that is well
            # formed (MemAvailable > MemTotal...) is caught here as well.
            report_format.parse_sample(sample, domain.max_mb)
        except guest_agent.GuestAgentError as exc:
            entry.update(agent=exc.status, error=str(exc)[:200])
            if exc.status == guest_agent.MISSING:
                self._add_balloon_sample(entry, domain)
        except report_format.ReportError as exc:
            entry.update(agent=guest_agent.BAD_DATA, error=str(exc)[:200])
        else:
            entry['sample'] = sample
            entry['previous'] = self.history.add(domain.uuid, sample)

    def _add_balloon_sample(self, entry, domain):
        """A sample from host-side signals for a guest without an agent.

        Its balloon's statistics and QEMU's reads (report.balloon_sample);
        none when its balloon reports no statistics (no stats period) or
        they are nonsense, and the guest is then left alone as before.
        """
        sample = report_format.balloon_sample(
            self.clock(), domain.balloon,
            sum(d.get('rd_bytes', 0) for d in domain.disks))
        if sample is None:
            return
        try:
            report_format.parse_sample(sample, domain.max_mb)
        except report_format.ReportError as exc:
            entry['error'] = ('%s; balloon statistics unusable: %s'
                              % (entry['error'], exc))[:200]
            return
        entry['sample'] = sample
        entry['previous'] = self.history.add(domain.uuid, sample)

    def _host_cache(self, domain, now):
        """The guest's reads through host-cached disks since a window ago."""
        sample = host_cache.io_sample(
            now, domain.qemu_pid, domain.disks,
            process_io.read_bytes(domain.qemu_pid, self.root))
        if sample is None:
            return None
        svc = host_cache.service(
            sample, self.io_history.add(domain.uuid, sample),
            self.opts.host_cache_min_read_mb)
        return svc.as_dict() if svc else None

    def _host_io(self, domain, now):
        """QEMU's reads for the guest over a rate window, as a dict.

        With its balloon's counters and the CPU time it ran
        (HostIo.as_dict); None before a window exists.
        """
        window = self.touched.update(
            domain.uuid, domain.qemu_pid, domain.actual_mb,
            now) if domain.tcg else None
        sample = host_io.io_sample(now, domain.qemu_pid,
                                   domain.actual_mb, domain.disks,
                                   domain.balloon, domain.cpu_ns,
                                   touched=window)
        found = host_io.window(sample,
                               self.block_history.add(domain.uuid, sample))
        return found.as_dict() if found else None

    def _add_sharing(self, domains, guests):
        """(pairs, ms spent); each guest's ``ram_pages`` from the matrix."""
        pairs, ram_pages, sharing_ms = self._sharing_pairs(
            domains, {g['uuid']: g['ksm_merging_pages'] for g in guests})
        for guest in guests:
            if guest['uuid'] in ram_pages:
                guest['ram_pages'] = ram_pages[guest['uuid']]
        return pairs, sharing_ms

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
            self.problems.update(SHARING_PROBLEM,
                                 'pairwise sharing: %s' % exc)
            return [], {}, 0.0
        self.problems.update(SHARING_PROBLEM, None)
        pairs = [{'a': a, 'b': b, 'pages': n}
                 for a, b, n in sharing_collector.pairwise(frames)]
        pages = {u: ram for u, (ram, _) in frames.items()}
        self._sharing = (now, pairs, pages)
        return pairs, pages, (time.monotonic() - start) * 1000.0
