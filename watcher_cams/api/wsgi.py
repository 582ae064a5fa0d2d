"""WSGI entry point: ``watcher_cams.api.wsgi:application`` (uwsgi,
mod_wsgi).

The configuration is read from ``$WATCHER_CAMS_API_CONFIG`` (a file, or
several separated by commas) or /etc/watcher-cams/watcher-cams-api.conf.
"""

import os

from oslo_log import log

from watcher_cams.api import app
from watcher_cams import conf as cams_conf

DEFAULT_CONFIG = '/etc/watcher-cams/watcher-cams-api.conf'


def init_application():
    conf = cams_conf.CONF
    log.register_options(conf)
    files = os.environ.get('WATCHER_CAMS_API_CONFIG', DEFAULT_CONFIG)
    conf([], project='watcher-cams',
         default_config_files=[f for f in files.split(',') if f])
    log.setup(conf, 'watcher-cams-api')
    return app.build(conf)


application = init_application()
