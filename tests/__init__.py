"""The test suites; each chooses how its process runs in its __init__."""

from oslo_service import backend


def use_native_threads():
    """Choose oslo.service's threading backend, as the agent's command does.

    Importing oslo.messaging selects a backend (eventlet unless one was
    chosen), and watcher_cams.cmd chooses threading when imported: a suite
    that imports either calls this first, as Watcher's own test packages
    do. Not here for every suite: loading the threading backend imports
    eventlet (through futurist), which Nova's suite (tests/nova) must not.
    """
    backend.init_backend(backend.BackendType.THREADING)
