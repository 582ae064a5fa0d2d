"""What the agent changes, and its record of each change.

The kinds of change (``BALLOON``, ``AFFINITY``) are the keys of the record
and the ``kind`` a revert names over RPC. The agent, the RPC client and the
Nova driver extension all use this module, which imports none of them.

The record is the agent's persisted state: what it changed, and what was
there before.

One JSON file per host, replaced atomically (write a temporary file, fsync,
rename, fsync the directory), so a crash leaves the old or the new state,
never half of one. Per instance::

    {"balloon": {"target_mb": 1536, "previous_mb": 2048,
                 "earlier_mb": [2048], "original_mb": 2048,
                 "max_mb": 2048, "reason": "...", "time": 1.7e9,
                 "qemu_pid": 4242},
     "affinity": {"cpus": [0, 1], "previous": {"vcpus": [[0, 1]],
                  "emulator": [0, 1]}, "earlier": [{...}],
                  "original": {...}, "time": 1.7e9},
     "policy_state": {...}}

``previous`` is what revert restores (the value before the last change);
``original`` is what the guest had before the agent first touched it, which
is what restoring on disable gives back.

Two processes share the file: the agent, and the Nova driver extension in
nova-compute, which forgets a record when Nova moves or resizes the
instance. Every access takes an exclusive lock (flock on a lock file beside
the state) and re-reads the file if another process replaced it.
"""

import contextlib
import copy
import fcntl
import json
import os
import tempfile
import threading

from oslo_log import log

LOG = log.getLogger(__name__)

BALLOON = 'balloon'
AFFINITY = 'affinity'
KINDS = (BALLOON, AFFINITY)

FORMAT = 1
FILENAME = 'agent-state.json'
LOCKNAME = 'agent-state.lock'


class StateStore:
    def __init__(self, directory):
        self.directory = directory
        self.path = os.path.join(directory, FILENAME)
        self.lock_path = os.path.join(directory, LOCKNAME)
        self._lock = threading.RLock()
        self._instances = {}
        self._loaded = None  # identity of the file last read or written
        with self._locked():
            pass

    def _identity(self):
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        # Every save replaces the file, so a new inode means a new state.
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    @contextlib.contextmanager
    def _locked(self, create=False):
        """Hold the thread lock and the file lock, with the state current.

        Readers of a state that was never written need no directory; a
        writer (``create``) makes it.
        """
        with self._lock:
            if not create and not os.path.isdir(self.directory):
                self._instances, self._loaded = {}, None
                yield
                return
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                identity = self._identity()
                if identity is None:
                    self._instances, self._loaded = {}, None
                elif identity != self._loaded:
                    self._instances = self._load()
                    self._loaded = self._identity()
                yield
            finally:
                os.close(fd)  # releases the flock

    def _load(self):
        try:
            with open(self.path) as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # Keep the unreadable file for the operator, start empty: the
            # guests keep their current sizes, only revert history is lost.
            aside = self.path + '.corrupt'
            LOG.error('State file %s is unreadable (%s); moved to %s and '
                      'starting with an empty state', self.path, exc, aside)
            os.replace(self.path, aside)
            return {}
        if not isinstance(data, dict) or data.get('format') != FORMAT \
                or not isinstance(data.get('instances'), dict):
            LOG.error('State file %s has an unknown format; ignoring it',
                      self.path)
            return {}
        return data['instances']

    def _save(self):
        payload = json.dumps({'format': FORMAT, 'instances': self._instances},
                             sort_keys=True, indent=1)
        fd, tmp = tempfile.mkstemp(prefix='.state-', dir=self.directory)
        try:
            with os.fdopen(fd, 'w') as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._loaded = self._identity()

    def get(self, uuid, kind=None):
        with self._locked():
            entry = self._instances.get(uuid, {})
            return copy.deepcopy(entry.get(kind) if kind else entry)

    def all(self):
        with self._locked():
            return copy.deepcopy(self._instances)

    def record(self, uuid, kind, value):
        """Set ``kind`` of ``uuid`` and persist before returning."""
        with self._locked(create=True):
            before = copy.deepcopy(self._instances)
            self._instances.setdefault(uuid, {})[kind] = value
            try:
                self._save()
            except OSError:
                self._instances = before
                raise

    def forget(self, uuid, kind=None):
        with self._locked():
            before = copy.deepcopy(self._instances)
            if kind is None:
                self._instances.pop(uuid, None)
            elif uuid in self._instances:
                self._instances[uuid].pop(kind, None)
                if not self._instances[uuid]:
                    del self._instances[uuid]
            if before != self._instances:
                try:
                    self._save()
                except OSError:
                    self._instances = before
                    raise
