"""Many nova-compute services in one process, on Nova's fake driver.

    python fake_computes.py PREFIX COUNT --config-file nova.conf ...

Run by ``aio.py fake-computes`` with the all-in-one cloud's venv: COUNT
compute services named PREFIX000, PREFIX001, ..., each with one node of
the same name, so Nova, Placement and Watcher's compute model see COUNT
more hosts (Watcher names a node by its service's host: one service with
many fake nodes would be one node to it). A nova-compute process per host
would not fit on a small machine; these share one process, as Nova's own
functional tests run several computes. Periodic tasks are off: each host
reports its resources once, at start, and its heartbeat every
``report_interval``. Stopped, they stay in Nova's service list (down)
until deleted.
"""

# autopep8: off
from nova import monkey_patch; monkey_patch.patch(backend='threading')  # noqa
# autopep8: on

import concurrent.futures
import sys
import threading

from oslo_log import log as logging

from nova.compute import rpcapi as compute_rpcapi
from nova.conductor import rpcapi as conductor_rpcapi
import nova.conf
from nova import config
import nova.db.main.api
from nova import objects
from nova.objects import base as objects_base
from nova.scheduler.client import report
from nova import service
from nova import utils

CONF = nova.conf.CONF
LOG = logging.getLogger('fake_computes')
# Services started at once: each start is a few calls to the conductor
# and Placement, which serve them one or two at a time anyway.
STARTING = 8


def share_one_placement_token():
    """Every Placement client of this process on one adapter (and token).

    Each ComputeManager makes a Placement client of its own, which asks
    Keystone for a token of its own while it is made: hundreds of hosts
    starting would keep Keystone busy for minutes. Here each still has a
    client of its own (its provider tree cache), on the one adapter.
    """
    shared = utils.get_sdk_adapter('placement', admin=True)

    class OneTokenReportClient(report.SchedulerReportClient):
        def __init__(self, adapter=None):
            super().__init__(adapter or shared)

    report.SchedulerReportClient = OneTokenReportClient


def start(host):
    server = service.Service.create(
        host=host, binary='nova-compute', topic=compute_rpcapi.RPC_TOPIC,
        topic_alt=compute_rpcapi.RPC_TOPIC_ALT, periodic_enable=False)
    server.start()
    return server


def main(argv):
    prefix, count = argv[1], int(argv[2])
    config.parse_args([argv[0]] + argv[3:])
    logging.setup(CONF, 'nova')
    objects.register_all()
    # As nova-compute: the database only through the conductor.
    nova.db.main.api.DISABLE_DB_ACCESS = True
    objects_base.NovaObject.indirection_api = conductor_rpcapi.ConductorAPI()
    objects.Service.enable_min_version_cache()
    share_one_placement_token()
    hosts = ['%s%03d' % (prefix, i) for i in range(count)]
    with concurrent.futures.ThreadPoolExecutor(STARTING) as pool:
        servers = list(pool.map(start, hosts))
    LOG.info('%d fake compute services started: %s..%s', len(servers),
             hosts[0], hosts[-1])
    # Until SIGTERM (aio.py stop): nothing to save, the cloud's database
    # keeps the services.
    threading.Event().wait()


if __name__ == '__main__':
    main(sys.argv)
