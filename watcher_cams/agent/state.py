"""The agent's persisted state: what it changed, and what was there before.

One JSON file per host, replaced atomically (write a temporary file, fsync,
rename, fsync the directory), so a crash leaves the old or the new state,
never half of one. Per instance::

    {"balloon": {"target_mb": 1536, "previous_mb": 2048,
                 "original_mb": 2048, "reason": "...", "time": 1.7e9},
     "affinity": {"cpus": [0, 1], "previous": {"vcpus": [[0, 1]],
                  "emulator": [0, 1]}, "original": {...}, "time": 1.7e9},
     "policy_state": {...}}

``previous`` is what revert restores (the value before the last change);
``original`` is what the guest had before the agent first touched it, which
is what restoring on disable gives back.
"""

import copy
import json
import os
import tempfile
import threading

from oslo_log import log

LOG = log.getLogger(__name__)

FORMAT = 1
FILENAME = 'agent-state.json'


class StateStore:
    def __init__(self, directory):
        self.directory = directory
        self.path = os.path.join(directory, FILENAME)
        self._lock = threading.RLock()
        self._instances = self._load()

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
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
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

    def get(self, uuid, kind=None):
        with self._lock:
            entry = self._instances.get(uuid, {})
            return copy.deepcopy(entry.get(kind) if kind else entry)

    def all(self):
        with self._lock:
            return copy.deepcopy(self._instances)

    def record(self, uuid, kind, value):
        """Set ``kind`` of ``uuid`` and persist before returning."""
        with self._lock:
            before = copy.deepcopy(self._instances)
            self._instances.setdefault(uuid, {})[kind] = value
            try:
                self._save()
            except OSError:
                self._instances = before
                raise

    def forget(self, uuid, kind=None):
        with self._lock:
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
