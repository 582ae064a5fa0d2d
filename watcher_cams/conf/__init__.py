"""oslo.config options, one module per component."""

from oslo_config import cfg

from watcher_cams.conf import agent_rpc
from watcher_cams.conf import compute
from watcher_cams.conf import guards

CONF = cfg.CONF

compute.register_opts(CONF)
agent_rpc.register_opts(CONF)
guards.register_opts(CONF)
