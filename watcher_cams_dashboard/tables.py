"""The panel's tables (Horizon DataTables; rows are plain objects)."""

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from horizon import tables
from horizon.utils import filters


def _mb(value):
    return '-' if value is None else '%s MiB' % format(round(value), ',')


def _number(value, unit=''):
    return '-' if value is None else ('%.4g%s' % (value, unit))


def host_link(row):
    return reverse('horizon:admin:watcher_cams:host', args=[row.host])


class HostsTable(tables.DataTable):
    host = tables.Column('host', verbose_name=_('Compute host'),
                         link=host_link)
    service = tables.Column('service', verbose_name=_('Nova compute'))
    ram = tables.Column(lambda r: _mb(r.ram_mb), verbose_name=_('RAM'))
    guests = tables.Column(
        lambda r: r.guests and '%s of %s' % (_mb(r.guests_actual_mb),
                                             _mb(r.guests_max_mb)),
        verbose_name=_('Guests: balloons of flavor memory'))
    ksm = tables.Column(lambda r: _mb(r.ksm_saved_mb),
                        verbose_name=_('KSM saves'))
    instances = tables.Column('instances', verbose_name=_('Instances'))
    no_data = tables.Column('no_data',
                            verbose_name=_('Without guest figures'))
    error = tables.Column('error', verbose_name=_('Agent'))

    class Meta:
        name = 'hosts'
        verbose_name = _('Compute hosts')


class InstancesTable(tables.DataTable):
    name = tables.Column('name', verbose_name=_('Instance'))
    project = tables.Column('project', verbose_name=_('Project'))
    flavor = tables.Column(lambda r: _mb(r.max_mb),
                           verbose_name=_('Flavor memory'))
    balloon = tables.Column(lambda r: _mb(r.actual_mb),
                            verbose_name=_('Balloon size'))
    floor = tables.Column(lambda r: _mb(r.floor_mb),
                          verbose_name=_('Floor'))
    cache = tables.Column(lambda r: _mb(r.cache_mb),
                          verbose_name=_('Page cache'))
    active = tables.Column(lambda r: _mb(r.active_file_mb),
                           verbose_name=_('Active file'))
    refaults = tables.Column(lambda r: _number(r.refault_s, '/s'),
                             verbose_name=_('Refaults'))
    reads = tables.Column(lambda r: _number(r.disk_read_mb_s, ' MiB/s'),
                          verbose_name=_('Disk reads (guest says)'))
    host_reads = tables.Column(
        lambda r: _number(r.host_read_mb_s, ' MiB/s'),
        verbose_name=_('Disk reads (host-measured)'))
    host_cpu = tables.Column(
        lambda r: _number(r.host_cpu_s, ' CPU s/s'),
        verbose_name=_('CPU time (host-measured)'))
    host_touched = tables.Column(
        lambda r: _mb(r.host_touched_mb),
        verbose_name=_('Memory touched (host-measured)'))
    usable = tables.Column(lambda r: _mb(r.balloon_usable_mb),
                           verbose_name=_('Usable (balloon driver)'))
    host_cache = tables.Column(
        lambda r: ('-' if r.host_hit_ratio is None
                   else '%.0f%%' % (100 * r.host_hit_ratio)),
        verbose_name=_('Host cache hits'))
    value = tables.Column(lambda r: r.value or '-',
                          verbose_name=_('Value estimate (last plan)'))
    agent = tables.Column('agent_text', verbose_name=_('Guest agent'))

    class Meta:
        name = 'instances'
        verbose_name = _('Instances')


class LlcTable(tables.DataTable):
    name = tables.Column('name', verbose_name=_('Last-level cache'))
    cpus = tables.Column('cpus', verbose_name=_('CPUs'))
    members = tables.Column('members',
                            verbose_name=_('Instances pinned inside'))

    class Meta:
        name = 'llc'
        verbose_name = _('Last-level caches')


class ActionsTable(tables.DataTable):
    created = tables.Column('created_at', verbose_name=_('Created'),
                            filters=(filters.parse_isotime,))
    action_type = tables.Column('action_type', verbose_name=_('Action'))
    host = tables.Column('host', verbose_name=_('Host'))
    instance = tables.Column('instance_name', verbose_name=_('Instance'))
    change = tables.Column('change', verbose_name=_('Change'))
    state = tables.Column('state', verbose_name=_('State'))
    plan = tables.Column(
        lambda a: '%s (%s)' % ((a.plan or '-')[:8], a.plan_state or '?'),
        verbose_name=_('Action plan'))
    strategy = tables.Column('strategy', verbose_name=_('Strategy'))
    signal = tables.Column(lambda a: a.signal or '-',
                           verbose_name=_('Decided by'))
    reason = tables.Column(
        lambda a: (a.reason + (' [%s]' % a.status_message
                               if a.status_message else '')),
        verbose_name=_('Reason'))

    class Meta:
        name = 'actions'
        verbose_name = _('Recent watcher-cams actions')
        # Pages of actions by the uuid of the last/first one shown
        # (views.page); named apart from Horizon's default 'marker'.
        pagination_param = 'actions_marker'
        prev_pagination_param = 'actions_prev_marker'
