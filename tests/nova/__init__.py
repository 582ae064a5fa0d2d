"""Tests of the Nova driver extension, with Nova 34's real LibvirtDriver.

They run in their own test process (tools/test.sh): nova-compute 34 runs on
native threads and forbids importing eventlet, which Watcher's modules
import unconditionally, so the two cannot share one process. Choose
threads here, before anything imports eventlet, as nova/cmd/compute.py
does; Nova's test fixtures would otherwise choose eventlet.
"""

import os

os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')

from nova import monkey_patch  # noqa: E402

monkey_patch.patch(backend='threading')
