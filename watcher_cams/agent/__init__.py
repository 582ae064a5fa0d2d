"""Compute-node agent: collectors gather, controllers act, manager serves."""

from oslo_service import backend

# The agent runs on threads (oslo.messaging's threading executor and a
# collector thread). Importing oslo.messaging otherwise selects oslo.service's
# eventlet backend; choose before anything imports it. Watcher's own
# services choose threading too, so both can share one process in tests.
try:
    backend.init_backend(backend.BackendType.THREADING)
except backend.exceptions.BackendAlreadySelected:
    # A process that chose already: nova-compute loading the driver
    # extension, which uses the state file and collectors but no threads.
    pass
