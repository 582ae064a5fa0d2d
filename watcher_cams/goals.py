"""The two Watcher goals of watcher-cams and their efficacy indicators."""

from watcher.decision_engine.goal import base
from watcher.decision_engine.goal.efficacy import base as efficacy_base
from watcher.decision_engine.goal.efficacy import indicators
from watcher.decision_engine.solution import efficacy


class _Indicator(indicators.IndicatorSpecification):
    """An indicator described by class attributes."""

    NAME = DESCRIPTION = UNIT = None
    SCHEMA = {'type': 'number', 'minimum': 0}

    def __init__(self):
        super().__init__(name=self.NAME, description=self.DESCRIPTION,
                         unit=self.UNIT, required=False)

    @property
    def schema(self):
        return self.SCHEMA


class MemoryMoved(_Indicator):
    NAME = 'memory_moved_mb'
    DESCRIPTION = 'Memory moved between instances by balloon resizes.'
    UNIT = 'MB'
    SCHEMA = {'type': 'integer', 'minimum': 0}


class ReadsAvoided(_Indicator):
    NAME = 'predicted_disk_reads_avoided'
    DESCRIPTION = ('Disk reads the plan is predicted to avoid, from the '
                   'guests\' refault counters.')
    UNIT = 'MB/s'


class LfuCandidates(_Indicator):
    NAME = 'lfu_candidates'
    DESCRIPTION = ('Instances that read through a disk cached by the host '
                   'too, whose host cache serves few of those reads: an LFU '
                   'hot set in the guest (cams-lfu) would help.')
    SCHEMA = {'type': 'integer', 'minimum': 0}


class InstancesChanged(_Indicator):
    NAME = 'instances_changed'
    DESCRIPTION = 'Instances whose memory or vCPU placement changes.'
    SCHEMA = {'type': 'integer', 'minimum': 0}


class AuditedInstances(_Indicator):
    NAME = 'audited_instances'
    DESCRIPTION = 'Instances with usable data in the audit.'
    SCHEMA = {'type': 'integer', 'minimum': 0}


class HostsWithoutReport(_Indicator):
    NAME = 'hosts_without_report'
    DESCRIPTION = ('Hosts in the audit scope left out because their agent '
                   'did not answer within the report timeout, or answered '
                   'with an error.')
    SCHEMA = {'type': 'integer', 'minimum': 0}


class KsmReturned(_Indicator):
    NAME = 'ksm_memory_returned_mb'
    DESCRIPTION = 'Memory saved by KSM that the plan hands to instances.'
    UNIT = 'MB'
    SCHEMA = {'type': 'integer', 'minimum': 0}


class SharingInLlc(_Indicator):
    NAME = 'sharing_kept_in_llc'
    DESCRIPTION = ('Share of the KSM-merged pages shared between instances '
                   'that run on the same last-level cache.')
    UNIT = '%'
    SCHEMA = {'type': 'number', 'minimum': 0, 'maximum': 100}


class MemoryCacheEfficiencySpec(efficacy_base.EfficacySpecification):
    def get_indicators_specifications(self):
        return [MemoryMoved(), ReadsAvoided(), InstancesChanged(),
                AuditedInstances(), HostsWithoutReport(), KsmReturned(),
                LfuCandidates()]

    def get_global_efficacy_indicator(self, indicators_map=None):
        m = indicators_map or {}
        changed = m.get('instances_changed') or 0
        audited = m.get('audited_instances') or 0
        return [
            efficacy.Indicator(
                name='disk_reads_avoided',
                description='Predicted disk reads avoided per second.',
                unit='MB/s',
                value=m.get('predicted_disk_reads_avoided') or 0.0),
            efficacy.Indicator(
                name='instances_changed_ratio',
                description='Audited instances whose memory changes.',
                unit='%',
                value=100.0 * changed / audited if audited else 0.0),
        ]


class CpuCacheAffinitySpec(efficacy_base.EfficacySpecification):
    def get_indicators_specifications(self):
        return [InstancesChanged(), AuditedInstances(),
                HostsWithoutReport(), SharingInLlc()]

    def get_global_efficacy_indicator(self, indicators_map=None):
        m = indicators_map or {}
        return [efficacy.Indicator(
            name='sharing_kept_in_llc',
            description='Merged pages shared inside one last-level cache.',
            unit='%', value=m.get('sharing_kept_in_llc') or 0.0)]


class MemoryCacheEfficiency(base.Goal):
    """Use each host's memory where its page cache saves the most reads.

    Strategies for this goal resize instances' virtio balloons: moving
    memory from guests whose cache does not pay off to guests where it does,
    sizing guests by committed memory plus a learned margin, and handing
    memory that KSM saves back to guests.
    """

    @classmethod
    def get_name(cls):
        return 'memory_cache_efficiency'

    @classmethod
    def get_display_name(cls):
        return 'Memory cache efficiency'

    @classmethod
    def get_translatable_display_name(cls):
        return 'Memory cache efficiency'

    @classmethod
    def get_efficacy_specification(cls):
        return MemoryCacheEfficiencySpec()


class CpuCacheAffinity(base.Goal):
    """Run instances that share many merged pages on one last-level cache."""

    @classmethod
    def get_name(cls):
        return 'cpu_cache_affinity'

    @classmethod
    def get_display_name(cls):
        return 'CPU cache affinity'

    @classmethod
    def get_translatable_display_name(cls):
        return 'CPU cache affinity'

    @classmethod
    def get_efficacy_specification(cls):
        return CpuCacheAffinitySpec()
