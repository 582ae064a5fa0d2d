"""watcher-cams-agent: the compute-node daemon."""

import signal
import sys
import threading

import libvirt
from oslo_log import log

from watcher_cams.agent import manager as agent_manager
from watcher_cams.agent import metrics
from watcher_cams.agent import rpc
from watcher_cams import conf as cams_conf

LOG = log.getLogger(__name__)
CONF = cams_conf.CONF


def main(argv=None):
    log.register_options(CONF)
    CONF(sys.argv[1:] if argv is None else argv, project='watcher-cams',
         prog='watcher-cams-agent')
    log.setup(CONF, 'watcher-cams-agent')
    # libvirt prints every failed call to stderr by default (a guest without
    # an agent would print on each poll); errors are handled where they
    # occur instead.
    libvirt.registerErrorHandler(lambda *args: None, None)

    manager = agent_manager.AgentManager(CONF)
    manager.start()
    if metrics.serve(CONF, manager) is not None:
        LOG.info('Prometheus metrics on http://%s:%d/metrics',
                 CONF.watcher_cams_prometheus.listen_address,
                 CONF.watcher_cams_prometheus.port)
    server = rpc.get_server(CONF, manager)
    server.start()
    LOG.info('watcher-cams-agent serving topic %s as %s',
             CONF.watcher_cams_agent.topic, CONF.watcher_cams_compute.host)

    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *args: stopped.set())
    while not stopped.wait(3600):
        pass
    LOG.info('watcher-cams-agent stopping')
    server.stop()
    server.wait()
    manager.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
