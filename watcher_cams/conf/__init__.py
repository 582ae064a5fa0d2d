"""oslo.config options, one module per component."""

from oslo_config import cfg

from watcher_cams.conf import agent_rpc
from watcher_cams.conf import compute
from watcher_cams.conf import guards

CONF = cfg.CONF

compute.register_opts(CONF)
agent_rpc.register_opts(CONF)
guards.register_opts(CONF)


def isolated(**overrides):
    """A ConfigOpts of its own with every watcher-cams option.

    For tests and the lab, which run several agents in one process.
    ``overrides`` maps ``group.name`` (or ``name`` for the agent's own
    group, watcher_cams_compute) to a value.
    """
    conf = cfg.ConfigOpts()
    for module in (agent_rpc, compute, guards):
        # By group name: register_group() shallow-copies an OptGroup, so
        # sharing the module's group object would share overrides too.
        for group, opts in module.list_opts():
            conf.register_opts(opts, group=group.name)
    conf([], project='watcher-cams')
    for key, value in overrides.items():
        group, _, name = key.rpartition('.')
        conf.set_override(name, value, group or 'watcher_cams_compute')
    return conf
