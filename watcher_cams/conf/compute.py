"""Options of the compute-node agent (watcher-cams-agent)."""

import socket

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'watcher_cams_compute',
    title='watcher-cams-agent',
    help='The daemon on each compute node that collects guest memory '
         'counters and applies balloon and vCPU affinity changes. It listens '
         'on [watcher_cams_agent] topic; guards come from '
         '[watcher_cams_guards].')

OPTS = [
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<hostname>',
               help='RPC server name: the compute host name as Nova knows it '
                    '(the same value as nova.conf [DEFAULT] host).'),
    cfg.StrOpt('connection_uri', default='qemu:///system',
               help='libvirt connection URI.'),
    cfg.StrOpt('state_dir', default='/var/lib/watcher-cams',
               help='Directory of the persisted state (targets, originals, '
                    'policy state), written atomically.'),
    cfg.BoolOpt('enabled', default=True,
                help='Apply balloon and affinity changes. When False the '
                     'agent still reports but refuses every change.'),
    cfg.BoolOpt('restore_on_disable', default=True,
                help='When the agent starts with enabled = False, give every '
                     'guest it changed back its full (maximum) memory and '
                     'its original vCPU affinity, then forget the state.'),
    cfg.IntOpt('collect_interval', default=30, min=1,
               help='Seconds between background collections. A report is '
                    'the newest of them (its age in the report\'s age_s); '
                    'the agent also collects right after each change it '
                    'makes.'),
    cfg.FloatOpt('report_wait', default=20.0, min=0.0,
                 help='Seconds a report request waits for a collection '
                      'when none is at hand (the agent just started, or it '
                      'changed a guest since its last one). Past that it '
                      'is refused and the audit leaves this host alone.'),
    cfg.IntOpt('min_rate_interval', default=10, min=1,
               help='A guest\'s rates are computed against its newest '
                    'earlier sample at least this many seconds old.'),
    cfg.IntOpt('touched_window', default=600, min=0,
               help='Seconds over which the agent measures the guest '
                    'memory each guest emulated by TCG touches, from its '
                    'QEMU process\'s referenced bits (/proc/<pid>/'
                    'clear_refs and smaps): reported as host_io.touched '
                    'with the window, and utility mode lets a guest that '
                    'reads nothing from disk give what it did not touch. '
                    'The agent clears the bits at the start of each window, '
                    'so the host\'s own reclaim sees those pages as not '
                    'recently used. KVM guests touch their memory through '
                    'page tables clear_refs does not see and are not '
                    'measured. 0 disables.'),
    cfg.IntOpt('timeline_points', default=240, min=1,
               help='Points of memory and disk reads kept per instance for '
                    'the operators\' overview (get_overview, the '
                    'dashboard\'s charts): at most one per '
                    'min_rate_interval, one per collection otherwise; 240 '
                    'collections at the default collect_interval are two '
                    'hours. Kept in memory only.'),
    cfg.IntOpt('host_cache_min_read_mb', default=16, min=1,
               help='Least a guest must read (MiB) through its disks that '
                    'keep the host\'s page cache (cache modes writeback, '
                    'writethrough, unsafe, default) in one rate window for '
                    'the report to give the share of those reads the host '
                    'cache served and to flag the guest as double caching.'),
    cfg.FloatOpt('guest_agent_timeout', default=3.0, min=0.1,
                 help='Seconds to wait for one guest-agent command. A guest '
                      'that does not answer is reported as such and left '
                      'alone.'),
    cfg.FloatOpt('guest_sample_timeout', default=15.0, min=1.0,
                 help='Seconds every guest-agent command of one guest\'s '
                      'sample may take together (about a dozen commands '
                      'read three files). A guest that answers slowly or '
                      'without end (a byte at a time) is reported as timed '
                      'out and left alone; the other guests are collected. '
                      'Guests are sampled guest_workers at a time, so one '
                      'slow guest delays only its own sample.'),
    cfg.IntOpt('guest_workers', default=8, min=1,
               help='Guests sampled at once (their guest-agent commands in '
                    'parallel). A collection of N guests takes about N / '
                    'guest_workers times one guest\'s sample; the guest '
                    'agents answer through libvirtd, which serves them '
                    'concurrently.'),
    cfg.IntOpt('guest_file_max_bytes', default=65536, min=4096,
               help='Largest amount read from one guest file (/proc/meminfo, '
                    '/proc/vmstat, /proc/pressure/memory). Guests are '
                    'untrusted: larger output is refused.'),
    cfg.IntOpt('balloon_timeout', default=60, min=1,
               help='Seconds to wait for a guest\'s balloon to reach its '
                    'target before the change is reported as failed.'),
    cfg.IntOpt('balloon_tolerance_mb', default=4, min=0,
               help='A balloon within this many MiB of its target has '
                    'reached it.'),
    cfg.BoolOpt('collect_sharing', default=True,
                help='Compute the exact pairwise KSM sharing matrix from '
                     '/proc/<pid>/pagemap and /proc/kpageflags (needs root).'),
    cfg.IntOpt('sharing_interval', default=120, min=0,
               help='Seconds a computed sharing matrix is reused before it '
                    'is computed again (0: every report).'),
    cfg.ListOpt('dedicated_cpus', default=[],
                help='Host CPUs of Nova\'s [compute] cpu_dedicated_set, as a '
                     'list of CPU numbers or ranges (e.g. 4-7,12). Guests '
                     'pinned inside it are never re-pinned.'),
    cfg.ListOpt('shared_cpus', default=[],
                help='Host CPUs of Nova\'s [compute] cpu_shared_set (CPU '
                     'numbers or ranges); empty means every online CPU not '
                     'in dedicated_cpus. Affinity changes stay inside it.'),
    cfg.StrOpt('llc_cpus', default='',
               help='The host CPUs of each last-level cache, caches '
                    'separated by ";" (e.g. 0-7,16-23;8-15,24-31). Empty: '
                    'read from sysfs. For hosts whose sysfs does not show '
                    'the real caches (nested virtualization, some '
                    'hypervisors), and test beds that split one cache to '
                    'exercise placement.'),
    cfg.IntOpt('reserved_host_memory_mb', default=512, min=0,
               help='Host memory never promised to guests (Nova\'s '
                    'reserved_host_memory_mb).'),
]


PROMETHEUS_GROUP = cfg.OptGroup(
    'watcher_cams_prometheus',
    title='The agent\'s Prometheus metrics',
    help='The agent serves its host\'s and instances\' figures for '
         'Prometheus to scrape (doc/source/prometheus.rst), from its newest '
         'collection. Off unless a port is set.')

PROMETHEUS_OPTS = [
    cfg.PortOpt('port', default=0,
                help='TCP port of the agent\'s /metrics page. 0 (the '
                     'default): no metrics are served.'),
    cfg.HostAddressOpt('listen_address', default='127.0.0.1',
                       help='Address the /metrics page listens on: the '
                            'address Prometheus scrapes (0.0.0.0 for '
                            'every interface). The page shows instance '
                            'UUIDs and sizes, never names; keep it on a '
                            'management network.'),
]


def register_opts(conf):
    for group, opts in list_opts():
        conf.register_group(group)
        conf.register_opts(opts, group=group)


def list_opts():
    return [(GROUP, OPTS), (PROMETHEUS_GROUP, PROMETHEUS_OPTS)]
