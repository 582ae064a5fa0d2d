"""The watcher-cams commands: the agent daemon and the lab.

Both run on native threads: the agent serves RPC with oslo.messaging's
threading executor beside its collector thread, and the real-guest labs run
the agent in-process. Importing oslo.messaging selects oslo.service's
backend (eventlet unless one was chosen), so the commands' package chooses
threading before any command module imports it, as Nova's and Watcher's
command packages choose theirs. Nothing else in watcher_cams chooses: a
process that loads the plugins (Watcher's services, nova-compute with the
driver extension) keeps its own choice.
"""

import warnings

from oslo_service import backend

with warnings.catch_warnings():
    # The threading backend imports futurist, which imports eventlet when it
    # is installed (Watcher needs it); eventlet's deprecation warning would
    # be printed by every command although none of them uses it.
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
    backend.init_backend(backend.BackendType.THREADING)
