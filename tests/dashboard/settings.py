"""Horizon's test settings with the watcher-cams panel enabled."""

from openstack_dashboard import enabled as dashboard_enabled
from openstack_dashboard.test.settings import *  # noqa: F401,F403
from openstack_dashboard.test.settings import HORIZON_CONFIG
from openstack_dashboard.test.settings import INSTALLED_APPS
from openstack_dashboard.utils import settings as settings_utils

from watcher_cams_dashboard import enabled as cams_enabled

# No database is used; Django's TestCase still wants a connection.
DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3',
                         'NAME': ':memory:'}}

# Horizon's test settings enabled its own panels already: enable them
# again together with the panel's enabled/ file, as Horizon does with an
# operator's local/enabled.
INSTALLED_APPS = [a for a in INSTALLED_APPS
                  if a not in HORIZON_CONFIG.get('plugins', ())]
for key in ('plugins', 'angular_modules', 'js_files', 'js_spec_files',
            'scss_files', 'xstatic_modules'):
    HORIZON_CONFIG[key] = []
HORIZON_CONFIG.pop('dashboards', None)
HORIZON_CONFIG.pop('default_dashboard', None)
settings_utils.update_dashboards([dashboard_enabled, cams_enabled],
                                 HORIZON_CONFIG, INSTALLED_APPS)
