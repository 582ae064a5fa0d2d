"""The tempest plugin of watcher-cams (entry point tempest.test_plugins)."""

import os

from tempest import config
from tempest.test_discover import plugins

from watcher_cams_tempest_plugin import config as cams_config


class WatcherCamsTempestPlugin(plugins.TempestPlugin):

    def load_tests(self):
        base_path = os.path.split(os.path.dirname(
            os.path.abspath(__file__)))[0]
        test_dir = os.path.join('watcher_cams_tempest_plugin', 'tests')
        return os.path.join(base_path, test_dir), base_path

    def register_opts(self, conf):
        config.register_opt_group(conf, config.service_available_group,
                                  [cams_config.service_option])
        config.register_opt_group(conf, cams_config.group,
                                  cams_config.opts)

    def get_opt_lists(self):
        return [(cams_config.group.name, cams_config.opts),
                ('service_available', [cams_config.service_option])]
