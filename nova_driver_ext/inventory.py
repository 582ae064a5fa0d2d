"""MEMORY_MB inventory that counts the memory KSM saves now.

What may be promised comes from ``watcher_cams.accounting`` (the savings
less the guards' safety factor), as for the agent's capacity check. Two
rules keep Placement from flapping without ever promising savings that are
gone: the savings are counted in whole steps, and a rise is reported only
after it held for a while, a fall at once.
"""

import time

from oslo_log import log

from watcher_cams import accounting
from watcher_cams.agent.collectors import ksm as ksm_collector
from watcher_cams.policy import model

LOG = log.getLogger(__name__)


def safe_savings_mb(ram_mb, reserved_mb, guard_cfg, root='/'):
    """KSM savings that may be promised now (0 when the host has no KSM)."""
    counters = ksm_collector.host_counters(root)
    if not counters:
        return 0
    ksm = model.KsmStats(**{name: counters.get(name, 0) for name in (
        'pages_shared', 'pages_sharing', 'pages_unshared', 'pages_volatile',
        'page_size', 'run')})
    host = model.HostView(name='', ram_mb=ram_mb, reserved_mb=reserved_mb,
                          ksm=ksm)
    return accounting.account(host, guard_cfg).ksm_promisable_mb


class KsmSavings:
    """The savings to add to MEMORY_MB, in steps, rising only when stable."""

    def __init__(self, step_mb, rise_after_s, clock=time.monotonic):
        self.step_mb = step_mb
        self.rise_after_s = rise_after_s
        self.clock = clock
        self.reported_mb = 0
        self._rising_since = None
        self._rising_to = None

    def update(self, safe_mb):
        """The amount to report now, given the safe savings ``safe_mb``."""
        level = max(0, int(safe_mb)) // self.step_mb * self.step_mb
        now = self.clock()
        if level <= self.reported_mb:
            if level < self.reported_mb:
                LOG.info('KSM savings fell: MEMORY_MB counts %d MiB of them '
                         '(was %d)', level, self.reported_mb)
            self.reported_mb = level
            self._rising_since = self._rising_to = None
            return self.reported_mb
        if self._rising_since is None:
            self._rising_since, self._rising_to = now, level
        # Rise to the lowest level seen while waiting: it held throughout.
        self._rising_to = min(self._rising_to, level)
        if now - self._rising_since >= self.rise_after_s:
            LOG.info('KSM savings held for %.0f s: MEMORY_MB counts %d MiB '
                     'of them (was %d)', now - self._rising_since,
                     self._rising_to, self.reported_mb)
            self.reported_mb = self._rising_to
            self._rising_since = self._rising_to = None
        return self.reported_mb


def add_savings(memory, extra_mb):
    """MEMORY_MB inventory ``memory`` with ``extra_mb`` more in total.

    max_unit stays physical RAM: one instance never gets savings that
    exist only across instances.
    """
    memory = dict(memory)
    memory['total'] = memory['total'] + extra_mb
    return memory
