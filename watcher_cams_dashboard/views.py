"""The panel's pages: the compute hosts, and one host in detail."""

import types

from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import messages
from horizon import tables as horizon_tables
from novaclient import exceptions as nova_exceptions
from openstack_dashboard.api import keystone
from openstack_dashboard.api import nova

from watcher_cams_dashboard import api
from watcher_cams_dashboard import charts
from watcher_cams_dashboard import tables

# Actions per page of an actions table; Horizon's "Next"/"Prev" links
# page through the newest api.ACTIONS_LIMIT actions of Watcher.
ACTIONS_PAGE = 20


def _actions(request):
    """The newest cams_* actions; a failure is told, the page still shows."""
    try:
        return api.cams_actions(request)
    except api.ApiError as exc:
        messages.error(request, _('Unable to list actions: %s') % exc)
        return []


def page(rows, request, table_meta, size=ACTIONS_PAGE):
    """The page of ``rows`` that Horizon's marker links ask for.

    Returns (rows on the page, whether rows come before it, after it).
    A marker that is no longer in ``rows`` (the action aged out of the
    newest ones) gives the first page.
    """
    ids = [row.id for row in rows]
    before = request.GET.get(table_meta.prev_pagination_param)
    after = request.GET.get(table_meta.pagination_param)
    start = 0
    if before in ids:
        start = max(0, ids.index(before) - size)
    elif after in ids:
        start = ids.index(after) + 1
    return rows[start:start + size], start > 0, start + size < len(rows)


def server_names(request, uuids, known=None):
    """{uuid: server name} for ``uuids``, from ``known`` or else Nova.

    A deleted server keeps its uuid; if Nova fails, the page says so once
    and the rest keep theirs.
    """
    names = dict(known or {})
    for uuid in sorted({u for u in uuids if u} - set(names)):
        try:
            names[uuid] = nova.server_get(request, uuid).name
        except nova_exceptions.NotFound:
            names[uuid] = uuid
        except Exception:
            exceptions.handle(request, _('Unable to name the instances.'))
            break
    return {uuid: names.get(uuid, uuid) for uuid in uuids}


class ActionsPageMixin:
    """An actions table shown a page at a time, instances by name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._actions_prev = self._actions_more = False

    def all_actions(self):
        raise NotImplementedError()

    def known_names(self):
        """{uuid: name} the view knows already (no Nova call needed)."""
        return {}

    def get_actions_data(self):
        rows, self._actions_prev, self._actions_more = page(
            self.all_actions(), self.request, tables.ActionsTable._meta)
        names = server_names(self.request, [a.instance for a in rows],
                             self.known_names())
        for action in rows:
            action.instance_name = names[action.instance]
        return rows

    def has_prev_data(self, table):
        return table.name == 'actions' and self._actions_prev

    def has_more_data(self, table):
        return table.name == 'actions' and self._actions_more


class IndexView(ActionsPageMixin, horizon_tables.MultiTableView):
    table_classes = (tables.HostsTable, tables.ActionsTable)
    template_name = 'watcher_cams/index.html'
    page_title = _('Memory (watcher-cams)')

    def get_hosts_data(self):
        try:
            services = nova.service_list(self.request, binary='nova-compute')
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to list the compute hosts.'))
            return []
        rows = []
        for service in sorted(services, key=lambda s: s.host):
            row = types.SimpleNamespace(
                id=service.host, host=service.host,
                service='%s, %s' % (service.status, service.state),
                guests=False, ram_mb=None, ksm_saved_mb=None,
                instances='-', no_data='-', error='')
            try:
                ov = api.overview(self.request, service.host)
            except api.ApiError as exc:
                row.error = str(exc)
            else:
                mem = ov.get('memory') or {}
                found = ov.get('instances') or []
                row.__dict__.update(
                    guests=True, ram_mb=mem.get('ram_mb'),
                    guests_actual_mb=mem.get('guests_actual_mb'),
                    guests_max_mb=mem.get('guests_max_mb'),
                    ksm_saved_mb=mem.get('ksm_saved_mb'),
                    instances=len(found),
                    no_data=sum(1 for i in found if i.get('problem')),
                    error=_('answers') if ov.get('enabled', True)
                    else _('answers; changes disabled'))
            rows.append(row)
        return rows

    def all_actions(self):
        return _actions(self.request)


class HostView(ActionsPageMixin, horizon_tables.MultiTableView):
    table_classes = (tables.InstancesTable, tables.LlcTable,
                     tables.ActionsTable)
    template_name = 'watcher_cams/host.html'
    page_title = _('Memory of {{ host }}')

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._overview = self._names = self._all_actions = None
        self._error = None

    @property
    def host(self):
        return self.kwargs['host']

    def overview(self):
        if self._overview is None and self._error is None:
            try:
                self._overview = api.overview(self.request, self.host)
            except api.ApiError as exc:
                self._error = str(exc)
        return self._overview

    def names(self):
        """{instance uuid: (server name, project name)}.

        From Nova and Keystone; the project's id where Keystone does not
        say.
        """
        if self._names is None:
            self._names = {}
            try:
                servers, _more = nova.server_list(
                    self.request, search_opts={'all_tenants': True,
                                               'host': self.host})
            except Exception:
                exceptions.handle(self.request,
                                  _('Unable to list the servers.'))
                return self._names
            try:
                projects, _more = keystone.tenant_list(self.request)
                project_names = {p.id: p.name for p in projects}
            except Exception:
                exceptions.handle(self.request,
                                  _('Unable to list the projects.'))
                project_names = {}
            self._names = {s.id: (s.name, project_names.get(s.tenant_id,
                                                            s.tenant_id))
                           for s in servers}
        return self._names

    def all_actions(self):
        """This host's cams_* actions, newest first."""
        if self._all_actions is None:
            self._all_actions = [a for a in _actions(self.request)
                                 if a.host == self.host]
        return self._all_actions

    def known_names(self):
        return {uuid: name for uuid, (name, _project) in
                self.names().items()}

    def get_instances_data(self):
        ov = self.overview() or {}
        names = self.names()
        last_value = {}
        for action in self.all_actions():  # newest first
            if action.value and action.resizes:
                last_value.setdefault(action.instance, action.value)
        rows = []
        for inst in ov.get('instances') or []:
            name, project = names.get(inst['uuid'],
                                      (inst.get('name'), None))
            host_cache = inst.get('host_cache') or {}
            rows.append(types.SimpleNamespace(**dict(
                inst, id=inst['uuid'], name=name, project=project or '-',
                host_hit_ratio=host_cache.get('hit_ratio'),
                # Agents before host_io give neither figure.
                host_read_mb_s=inst.get('host_read_mb_s'),
                host_cpu_s=inst.get('host_cpu_s'),
                host_touched_mb=inst.get('host_touched_mb'),
                balloon_usable_mb=(inst.get('balloon') or {}).get(
                    'usable_mb'),
                value=last_value.get(inst['uuid']),
                agent_text=_agent_text(inst))))
        return rows

    def get_llc_data(self):
        ov = self.overview() or {}
        names = self.names()
        rows = []
        for group in ov.get('llc') or []:
            members = [names.get(u, (u, None))[0]
                       for u in group.get('instances') or ()]
            rows.append(types.SimpleNamespace(
                id=group['name'], name=group['name'],
                cpus=','.join(str(c) for c in group.get('cpus') or ()),
                members=', '.join(members) or '-'))
        return rows

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        ov = self.overview()
        context['host'] = self.host
        context['error'] = self._error
        context['overview'] = ov
        if ov:
            names = self.names()
            timeline = ov.get('timeline') or {}
            start = min((p['t'] for line in timeline.values()
                         for p in line), default=0)

            def series(key):
                return {names.get(u, (u, None))[0] or u:
                        [(p['t'] - start, p.get(key)) for p in line]
                        for u, line in timeline.items()}
            context['charts'] = [
                charts.line_chart(_('Balloon size'), 'MiB',
                                  series('actual_mb')),
                charts.line_chart(_('Page cache'), 'MiB',
                                  series('cache_mb')),
                charts.line_chart(_('Disk reads, as the guests say'),
                                  'MiB/s', series('disk_read_mb_s')),
                charts.line_chart(_('Disk reads, measured on the host'),
                                  'MiB/s', series('host_read_mb_s'))]
        return context


def _agent_text(inst):
    """The guest agent's state, and why the figures are what they are."""
    why = inst.get('problem') or inst.get('claims')
    if inst.get('host_only'):
        why = 'managed from host signals only (balloon, disk reads)'
    return (inst.get('agent') or '-') + (': %s' % why if why else '')
