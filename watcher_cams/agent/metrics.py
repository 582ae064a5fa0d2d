"""The agent's figures for Prometheus: its host and instances, on /metrics.

Operators of large clouds watch Prometheus and Grafana, which Watcher itself
reads too. Each scrape renders the agent's newest collection (the one
``get_report`` answers from): a scrape never reads libvirt or a guest agent,
and an instance that is gone is gone from the page. Units are bytes and
seconds; every series has ``host`` (the compute host name as Nova knows
it, as in Watcher's host metrics) and each instance's ``resource`` (its
UUID: Watcher's default ``instance_uuid_label``). A guest's name is tenant
data and is never a label. doc/source/prometheus.rst lists the series.
"""

import re
import time

from prometheus_client import core
from prometheus_client import exposition
from prometheus_client import registry

from watcher_cams.agent import overview

PREFIX = 'watcher_cams_'
MIB = 2 ** 20
# The value a utility move was sized by, from the reason it recorded
# (policy/utility.py writes "value X MiB/s per GiB" or "measured up to X").
VALUE = re.compile(r'(?:value|measured up to) ([0-9.]+) MiB/s per GiB')
# MiB/s per GiB in bytes/s per byte.
VALUE_UNIT = MIB / 2 ** 30
# An instance's state, for "instances by state": the first that holds.
STATES = ('untrusted', 'error', 'host_only', 'ok')


def gauge(name, doc, labels=('host',)):
    return core.GaugeMetricFamily(PREFIX + name, doc, labels=list(labels))


def counter(name, doc, labels=('host',)):
    return core.CounterMetricFamily(PREFIX + name, doc, labels=list(labels))


def state_of(instance):
    """One of STATES for an overview INSTANCE."""
    if instance['claims']:
        return 'untrusted'
    if instance['problem'] and not instance['host_only']:
        return 'error'
    return 'host_only' if instance['host_only'] else 'ok'


def value_of(reason):
    """Bytes/s of disk reads a byte of memory saves, from a reason."""
    found = VALUE.search(reason or '')
    return float(found.group(1)) * VALUE_UNIT if found else None


class AgentMetrics:
    """A prometheus_client collector over an AgentManager's collections."""

    def __init__(self, manager):
        self.manager = manager

    def describe(self):
        return []  # registering must not render a page

    def collect(self):
        manager = self.manager
        host = manager.opts.host
        yield from self._agent_families(host)
        newest = manager.newest()
        if newest is None:
            return
        taken, report, view, account = newest
        yield from _host_families(host, report, account, time.monotonic()
                                  - taken)
        yield from _instance_families(
            host, report, overview.instances(report, view, manager.cfg),
            manager.state.all())

    def _agent_families(self, host):
        failed = counter('collection_failures',
                         'Collection cycles that failed (logged).')
        failed.add_metric([host], self.manager.failed_cycles)
        enabled = gauge('agent_enabled', '1 when the agent applies '
                        'changes, 0 when it only reports.')
        enabled.add_metric([host], int(self.manager.opts.enabled))
        return [failed, enabled]


def _host_families(host, report, account, age_s):
    """The host's memory, KSM savings and its newest collection."""
    collection = report.get('collection') or {}
    figures = [
        ('memory_bytes', 'Host RAM.', account.ram_mb * MIB),
        ('memory_reserved_bytes', 'Host memory never promised to guests.',
         account.reserved_mb * MIB),
        ('memory_promisable_bytes', 'Memory the guards let guests be '
         'promised: RAM less the reserve, plus safe KSM savings.',
         account.capacity_mb * MIB),
        ('guests_actual_bytes', 'Memory the guests\' balloons hold.',
         account.guests_actual_mb * MIB),
        ('ksm_saved_bytes', 'Memory KSM saves on this host now.',
         account.ksm_saved_mb * MIB),
        ('ksm_promisable_bytes', 'KSM savings counted as promisable.',
         account.ksm_promisable_mb * MIB),
        ('collection_duration_seconds', 'How long the newest collection '
         'took.', collection.get('total_ms', 0.0) / 1000.0),
        ('collection_age_seconds', 'Seconds since the newest collection.',
         age_s),
        ('collection_timestamp_seconds', 'When the newest collection was '
         'made (Unix time).', report['timestamp'])]
    for name, doc, value in figures:
        family = gauge(name, doc)
        family.add_metric([host], value)
        yield family


INSTANCE_LABELS = ('host', 'resource')


def _instance_families(host, report, instances, recorded):
    """Per instance: sizes, cache, host-measured reads, trust, last change."""
    families = {name: gauge(name, doc, INSTANCE_LABELS) for name, doc in (
        ('instance_memory_actual_bytes', 'Balloon size now.'),
        ('instance_memory_max_bytes', 'Flavor maximum.'),
        ('instance_memory_floor_bytes', 'Least the agent\'s guards let '
         'the balloon take it to.'),
        ('instance_page_cache_bytes', 'Page cache the guest reports.'),
        ('instance_claims_agree', '1 unless the guest\'s own counters '
         'disagree with what the host measured for it.'))}
    states = gauge('instances', 'Instances by state: ok, host_only (no '
                   'guest agent), untrusted (claims disagree with '
                   'host-measured reads), error.', ('host', 'state'))
    counts = dict.fromkeys(STATES, 0)
    for instance in instances:
        labels = [host, instance['uuid']]
        counts[state_of(instance)] += 1
        for name, mb in (('instance_memory_actual_bytes',
                          instance['actual_mb']),
                         ('instance_memory_max_bytes', instance['max_mb']),
                         ('instance_memory_floor_bytes',
                          instance['floor_mb']),
                         ('instance_page_cache_bytes',
                          instance['cache_mb'])):
            if mb is not None:
                families[name].add_metric(labels, mb * MIB)
        families['instance_claims_agree'].add_metric(
            labels, 0 if instance['claims'] else 1)
    for state, count in counts.items():
        states.add_metric([host, state], count)
    yield from families.values()
    yield states
    yield from _read_families(host, report)
    yield from _change_families(host, instances, recorded)


def _read_families(host, report):
    """What QEMU read for each guest's disks, since it started."""
    read_bytes = counter('instance_host_read_bytes', 'Bytes QEMU read '
                         'from the instance\'s disks (all disks).',
                         INSTANCE_LABELS)
    read_requests = counter('instance_host_read_requests', 'Read '
                            'requests QEMU served for the instance\'s '
                            'disks.', INSTANCE_LABELS)
    for entry in report['guests']:
        disks = [d for d in entry.get('disks') or () if 'rd_bytes' in d]
        if disks:
            labels = [host, entry['uuid']]
            read_bytes.add_metric(labels, sum(d['rd_bytes'] for d in disks))
            read_requests.add_metric(labels, sum(d['rd_req'] for d in disks))
    return [read_bytes, read_requests]


def _change_families(host, instances, recorded):
    """The agent's last balloon change of each instance, and its value."""
    target = gauge('instance_memory_target_bytes', 'Balloon target the '
                   'agent last set.', INSTANCE_LABELS)
    moved = gauge('instance_memory_change_bytes', 'What the agent\'s '
                  'standing balloon change gave the instance: its target '
                  'less its size before (negative: took).',
                  INSTANCE_LABELS)
    when = gauge('instance_last_change_timestamp_seconds', 'When the '
                 'agent last changed the balloon (Unix time).',
                 INSTANCE_LABELS)
    value = gauge('instance_memory_value', 'Bytes per second of disk reads '
                  'a byte of memory saves, as the last plan estimated '
                  '(utility mode).', INSTANCE_LABELS)
    why = core.InfoMetricFamily(PREFIX + 'instance_last_change',
                                'Why the agent last changed the balloon.',
                                labels=list(INSTANCE_LABELS))
    for instance in instances:
        change = (recorded.get(instance['uuid']) or {}).get('balloon')
        if not change:
            continue
        labels = [host, instance['uuid']]
        target.add_metric(labels, change['target_mb'] * MIB)
        moved.add_metric(labels, (change['target_mb']
                                  - change['previous_mb']) * MIB)
        when.add_metric(labels, change['time'])
        why.add_metric(labels, {'reason': change.get('reason') or ''})
        estimate = value_of(change.get('reason'))
        if estimate is not None:
            value.add_metric(labels, estimate)
    return [target, moved, when, value, why]


def serve(conf, manager):
    """Start the /metrics page if ``[watcher_cams_prometheus] port`` is set.

    Returns the server (None when off); it runs in a daemon thread.
    """
    opts = conf.watcher_cams_prometheus
    if not opts.port:
        return None
    own = registry.CollectorRegistry()
    own.register(AgentMetrics(manager))
    server, _ = exposition.start_http_server(
        opts.port, opts.listen_address, registry=own)
    return server
