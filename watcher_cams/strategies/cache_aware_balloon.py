"""Strategy ``cache_aware_balloon``: memory to where page cache pays off."""

from oslo_log import log

from watcher_cams.policy import cams
from watcher_cams.policy import host_cache
from watcher_cams.policy import utility
from watcher_cams.strategies import base

LOG = log.getLogger(__name__)
PAPER, UTILITY = 'paper', 'utility'
# Watcher's own action that only logs its message.
NOP_ACTION = 'nop'


class CacheAwareBalloon(base.MemoryStrategy):
    """Cache-aware balloon

    *Description*

    Moves memory with the virtio balloon, inside each compute node, from
    guests whose page cache does not save disk reads to guests where it
    does. ``mode=paper`` reproduces CAMS: fixed steps from the guest with
    the lowest cache utilization (Active(file) over the file LRU) to the
    highest. ``mode=utility`` estimates each guest's marginal value of memory
    from its refault counters and moves memory toward equal marginal value;
    it keeps each guest's measured values, per size, in the agent's policy
    state, so that shrinking a guest back over memory it was seen to use
    is priced at what was measured there.

    It also finds double caching: instances that read through a disk the
    host caches too (writeback and similar cache modes) while the host
    cache serves less than ``lfu_hit_ratio`` of those reads. The efficacy
    indicator ``lfu_candidates`` counts them; with ``recommend_lfu`` each
    gets a ``nop`` action whose message recommends an LFU hot set in the
    guest (cams-lfu).

    *Requirements*

    watcher-cams-agent on every compute node; instances with a virtio
    balloon (stats period set) and the QEMU guest agent.

    *Limitations*

    Memory moves within a host only; guests without guest-agent data are
    left alone.
    """

    NAME = 'cache_aware_balloon'
    DISPLAY_NAME = 'Cache-aware balloon'

    @classmethod
    def get_schema(cls):
        # One data literal (Watcher's parameter schema), longer than a
        # function should be: it reads as the audit template's documentation.
        return {
            'type': 'object',
            'properties': {
                'mode': {'type': 'string', 'enum': [PAPER, UTILITY],
                         'default': UTILITY,
                         'description': 'paper: CAMS fixed steps; utility: '
                                        'equal marginal value.'},
                'pages_per_step': {'type': 'integer', 'minimum': 1,
                                   'default': 64,
                                   'description': 'paper mode: N pages per '
                                                  'step.'},
                'page_mb': {'type': 'integer', 'minimum': 1, 'default': 2,
                            'description': 'paper mode: MiB per page.'},
                'max_steps': {'type': 'integer', 'minimum': 0, 'default': 4,
                              'description': 'paper mode: steps per audit '
                                             'cycle.'},
                'tolerance': {'type': 'number', 'minimum': 0, 'maximum': 1,
                              'default': 0.05,
                              'description': 'paper mode: utilizations '
                                             'this close count as equal.'},
                'psi_protect': {'type': 'number', 'minimum': 0,
                                'maximum': 100, 'default': 10.0,
                                'description': 'utility mode: guests with '
                                               'memory PSI some avg10 at or '
                                               'above this never give.'},
                'value_band': {'type': 'number', 'minimum': 0,
                               'maximum': 0.99,
                               'default': utility.UtilityParams.value_band,
                               'description': 'utility mode: share by which '
                                              'the gain must beat the loss '
                                              '(the counters are noisy).'},
                'memory_s': {'type': 'number', 'minimum': 0,
                             'default': utility.UtilityParams.memory_s,
                             'description': 'utility mode: seconds a '
                                            'guest\'s measured value at a '
                                            'size is remembered after it '
                                            'was taken or last borne out '
                                            'by the same workload\'s '
                                            'reads; nor does a guest '
                                            'take a tie whose free '
                                            'memory lasts longer at '
                                            'its read rate.'},
                'settle_s': {'type': 'number', 'minimum': 0,
                             'default': utility.UtilityParams.settle_s,
                             'description': 'utility mode: seconds after a '
                                            'balloon change during which '
                                            'a rate window that starts is '
                                            'still its echo.'},
                'idle_cpu_s': {'type': 'number', 'minimum': 0,
                               'default': utility.UtilityParams.idle_cpu_s,
                               'description': 'utility mode: CPU seconds '
                                              'per second (host-measured) '
                                              'at or below which a guest '
                                              'that reads nothing from '
                                              'disk counts as idle and '
                                              'gives a quarter of its '
                                              'cache per cycle.'},
                **base.value_properties('moved', utility.UtilityParams()),
                **base.reserve_properties(),
                'lfu_hit_ratio': {'type': 'number', 'minimum': 0,
                                  'maximum': 1, 'default': 0.5,
                                  'description': 'instances reading through '
                                                 'a host-cached disk whose '
                                                 'host cache serves less '
                                                 'than this share of the '
                                                 'reads are LFU candidates.'},
                'recommend_lfu': {'type': 'boolean', 'default': False,
                                  'description': 'add a nop action naming '
                                                 'each LFU candidate.'},
            },
            'additionalProperties': False,
        }

    def policy_params(self):
        if self.param('mode') not in (PAPER, UTILITY):
            raise base.InvalidAuditParameter(
                name='mode', reason='%r is not paper or utility'
                % (self.param('mode'),))
        if self.param('mode') == PAPER:
            return base.check_params(
                cams.CamsParams, pages_per_step=self.param('pages_per_step'),
                page_mb=self.param('page_mb'),
                max_steps=self.param('max_steps'),
                tolerance=self.param('tolerance'))
        return base.check_params(
            utility.UtilityParams, granule_mb=self.param('granule_mb'),
            min_value=self.param('min_value'),
            psi_protect=self.param('psi_protect'),
            value_band=self.param('value_band'),
            memory_s=self.param('memory_s'),
            settle_s=self.param('settle_s'),
            idle_cpu_s=self.param('idle_cpu_s'))

    def lfu_candidates(self):
        """[(host, uuid, name, HostCacheService)]: host cache serves few."""
        below = self.param('lfu_hit_ratio')
        return [(p.plan.host, uuid, name, svc) for p in self.planned
                for uuid, name, svc in p.host_caches
                if host_cache.lfu_candidate(svc, below)]

    def do_execute(self, audit=None):
        super().do_execute(audit)
        for host, uuid, name, svc in self.lfu_candidates():
            message = (
                'watcher-cams: instance %s (%s) on %s reads %.1f MiB/s '
                'through host-cached disks %s and the host cache served '
                '%.0f%% of it: both caches hold its data. An LFU hot set '
                'in the guest (cams-lfu) lets the host cache serve the '
                'rest.' % (uuid, name, host,
                           svc.guest_read_mb / svc.window_s,
                           ','.join(svc.disks), 100 * svc.hit_ratio))
            LOG.info(message)
            if self.param('recommend_lfu'):
                self.solution.add_action(
                    action_type=NOP_ACTION,
                    input_parameters={'message': message[:255]})

    def indicators(self):
        result = super().indicators()
        result['lfu_candidates'] = len(self.lfu_candidates())
        return result
