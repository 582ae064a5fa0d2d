"""Entry points for oslo-config-generator (namespaces ``watcher_cams``,
``watcher_cams.api``)."""

from watcher_cams.conf import agent_rpc
from watcher_cams.conf import compute
from watcher_cams.conf import guards


def list_opts():
    return compute.list_opts() + agent_rpc.list_opts() + guards.list_opts()


def list_api_opts():
    """watcher-cams-api's own: how it reaches the agents."""
    return agent_rpc.list_opts()
