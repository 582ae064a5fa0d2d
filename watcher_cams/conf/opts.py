"""Entry point for oslo-config-generator (namespace ``watcher_cams``)."""

from watcher_cams.conf import agent_rpc
from watcher_cams.conf import compute
from watcher_cams.conf import guards


def list_opts():
    return compute.list_opts() + agent_rpc.list_opts() + guards.list_opts()
