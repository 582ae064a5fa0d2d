"""The real machine the functional tests run on: libvirt guests, KSM, config.

tools/host-setup.sh (run by tools/test.sh) installs and starts libvirt and
RabbitMQ and builds the guest image. Two guests with the guest agent are
booted once per test process and shared by the tests; every test leaves
them as it found them (sizes, pinning). When something is missing the
tests fail with the reason: they are never skipped.
"""

import atexit
import os
import tempfile
import threading

import libvirt
from watcher_cams import conf as cams_conf
from watcher_cams.lab import guests as lab_guests

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PREFIX = 'cams-ft-'
URI = os.environ.get('CAMS_LIBVIRT_URI', 'qemu:///system')
DOMAIN_TYPE = os.environ.get('CAMS_DOMAIN_TYPE', 'qemu')
GUEST_MB = 512
RABBIT_URL = os.environ.get('CAMS_TRANSPORT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')

libvirt.registerErrorHandler(lambda *args: None, None)

_lock = threading.Lock()
_lab = None
_lab_error = None


class Lab:
    """Two booted guests (a, b) with their agents up."""

    def __init__(self):
        self.conn = libvirt.open(URI)
        self.image = lab_guests.GuestImage(os.environ.get(
            'CAMS_GUEST_DIR', os.path.join(TOP, '.cache', 'guest')))
        self.workdir = tempfile.mkdtemp(prefix='cams-ft-')
        # QEMU runs as libvirt-qemu and must reach the overlays.
        os.chmod(self.workdir, 0o755)
        lab_guests.destroy_all(self.conn, PREFIX)  # leftovers of a killed run
        atexit.register(self.close)
        self.a = self.boot('a')
        self.b = self.boot('b')
        for dom in (self.a, self.b):
            lab_guests.wait_for_agent(dom, timeout=180)

    def boot(self, name, agent=True, uuid=None, disk_cache='none'):
        return lab_guests.boot(self.conn, PREFIX + name, self.image,
                               self.workdir, memory_mb=GUEST_MB,
                               dtype=DOMAIN_TYPE, agent=agent, uuid=uuid,
                               disk_cache=disk_cache)

    def close(self):
        lab_guests.destroy_all(self.conn, PREFIX)

    def uuids(self):
        return [self.a.UUIDString(), self.b.UUIDString()]


def lab():
    """The shared guests, booted on first use (a failure is remembered)."""
    global _lab, _lab_error
    with _lock:
        if _lab_error is not None:
            raise RuntimeError('the lab guests did not boot: %s' % _lab_error)
        if _lab is None:
            try:
                _lab = Lab()
            except Exception as exc:
                _lab_error = exc
                raise
        return _lab


def agent_conf(state_dir, **overrides):
    """A fresh ConfigOpts with the agent's options, for one test."""
    settings = {'state_dir': state_dir, 'host': 'functional',
                'connection_uri': URI, 'reserved_host_memory_mb': 512}
    settings.update(overrides)
    return cams_conf.isolated(**settings)


def guest(report, uuid):
    return next(g for g in report['guests'] if g['uuid'] == uuid)
