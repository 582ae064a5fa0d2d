"""The panel: admins only, where watcher-cams-api is in the catalog.

It shows every tenant's instances on a host.
"""

from django.utils.translation import gettext_lazy as _
import horizon

from watcher_cams_dashboard import api


class MemoryPanel(horizon.Panel):
    name = _('Memory (watcher-cams)')
    slug = 'watcher_cams'
    permissions = ('openstack.roles.admin',
                   'openstack.services.%s' % api.REPORTS_SERVICE)
