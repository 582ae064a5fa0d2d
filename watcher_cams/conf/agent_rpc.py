"""How the strategies and actions reach the compute-node agents."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'watcher_cams_agent',
    title='watcher-cams agent RPC',
    help='How Watcher (decision engine and applier) reaches the '
         'watcher-cams-agent on each compute node over oslo.messaging.')

OPTS = [
    cfg.StrOpt('topic', default='watcher-cams-agent',
               help='RPC topic the agents listen on; the server name is the '
                    'compute host name as Nova knows it.'),
    cfg.IntOpt('report_timeout', default=30, min=1,
               help='Seconds to wait for an agent\'s report, state or '
                    'overview. An audit waits this long for all its hosts\' '
                    'reports together: a host whose agent has not answered '
                    'by then is left out of the audit (logged once per '
                    'audit with a count, and counted in the '
                    'hosts_without_report efficacy indicator).'),
    cfg.IntOpt('report_concurrency', default=64, min=1,
               help='Reports an audit asks for at once. Each waits on its '
                    'agent over RPC, so more in flight shortens an audit of '
                    'many hosts; fewer bounds the threads and the burst on '
                    'the message bus. Each call holds one of '
                    'oslo.messaging\'s pooled connections: at most '
                    '[DEFAULT] rpc_conn_pool_size (30) are in flight, so '
                    'raise both together.'),
    cfg.IntOpt('report_max_age', default=300, min=1,
               help='Seconds old an agent\'s report may be (its age_s: the '
                    'agent answers from its last background collection). '
                    'An older one means the agent\'s collection has '
                    'stalled (libvirt hung, say): the host is left out of '
                    'the audit as if it had not answered.'),
    cfg.IntOpt('action_timeout', default=120, min=1,
               help='Seconds to wait for an agent to apply or revert one '
                    'action (a balloon resize waits for the guest to reach '
                    'its target).'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
