"""Strategy ``sharing_aware_pinning``: co-locate sharing guests on an LLC."""

from watcher_cams.policy import affinity
from watcher_cams.strategies import base


class SharingAwarePinning(base.CamsStrategy):
    """Sharing-aware pinning

    *Description*

    Measures, per compute node, how many KSM-merged pages each pair of
    guests shares and pins the vCPUs of guests that share the most onto the
    same last-level cache, keeping each cache's vCPU load within its shared
    CPUs times the allocation ratio.

    *Requirements*

    KSM running, watcher-cams-agent, compute nodes with more than one LLC.

    *Limitations*

    Instances with dedicated CPUs (hw:cpu_policy=dedicated) are never
    re-pinned; only shared-policy instances move, inside cpu_shared_set.
    """

    NAME = 'sharing_aware_pinning'
    DISPLAY_NAME = 'Sharing-aware pinning'
    GOAL = 'cpu_cache_affinity'

    @classmethod
    def get_schema(cls):
        return {
            'type': 'object',
            'properties': {
                'cpu_allocation_ratio': {
                    'type': ['number', 'null'], 'exclusiveMinimum': 0,
                    'default': None,
                    'description': 'vCPUs per shared host CPU on one LLC; '
                                   'null uses the node\'s Nova ratio.'},
                'exact_limit': {
                    'type': 'integer', 'minimum': 0, 'maximum': 12,
                    'default': 8,
                    'description': 'Hosts with at most this many movable '
                                   'guests are solved exactly.'},
            },
            'additionalProperties': False,
        }

    def policy_params(self):
        ratio = self.param('cpu_allocation_ratio')
        # Checked now so a bad value fails the audit before any RPC; a null
        # ratio is filled in per host from the node's Nova ratio.
        base.check_params(
            affinity.AffinityParams, exact_limit=self.param('exact_limit'),
            cpu_allocation_ratio=affinity.AffinityParams(
            ).cpu_allocation_ratio if ratio is None else ratio)
        return ratio, self.param('exact_limit')

    def host_params(self, node, params):
        ratio, exact_limit = params
        if ratio is None:
            ratio = node.vcpu_ratio or affinity.AffinityParams(
            ).cpu_allocation_ratio
        return base.check_params(affinity.AffinityParams,
                                 cpu_allocation_ratio=ratio,
                                 exact_limit=exact_limit)

    def indicators(self):
        result = super().indicators()
        total = sum(p.sharing_total_pages for p in self.plans)
        kept = sum(p.sharing_kept_pages for p in self.plans)
        result['sharing_kept_in_llc'] = round(100.0 * kept / total, 2) \
            if total else 0.0
        return result
