"""The settings the all-in-one harness and the DevStack plugin write."""

import configparser
import os

import fixtures
import testtools

from watcher_cams import conf as cams_conf
from watcher_cams import deploy


class TestDeploy(testtools.TestCase):

    def test_watcher_settings_are_the_shipped_conf_d_file(self):
        settings = deploy.watcher()
        weights = settings['watcher_planners.weight']['weights']
        self.assertIn('cams_balloon:', weights)
        self.assertIn('cams_pin_vcpus:', weights)
        self.assertIn('cams_host_pin:', weights)
        # The plugin's engine reverts; Watcher's own rollback stays off so
        # nothing is reverted twice.
        self.assertEqual(
            ('cams_taskflow', 'False'),
            (settings['watcher_applier']['workflow_engine'],
             settings['watcher_applier']['rollback_when_actionplan_failed']))

    def test_compute_node_with_and_without_the_extension(self):
        with_ext = deploy.nova_compute('/var/lib/watcher-cams')
        self.assertEqual('watcher_cams.CamsLibvirtDriver',
                         with_ext['DEFAULT']['compute_driver'])
        self.assertEqual('/var/lib/watcher-cams',
                         with_ext['watcher_cams_nova']['agent_state_dir'])
        self.assertNotIn('DEFAULT', deploy.nova_compute(
            '/s', driver_extension=False))

    def test_written_file_reads_back_and_iniset_lines(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'agent.conf')
        settings = deploy.merge(
            deploy.agent('cmp-a', 'qemu:///system', '/s', 'rabbit://x'),
            {'watcher_cams_compute': {'state_dir': '/t'}})
        deploy.write(path, settings)
        parser = configparser.ConfigParser()
        parser.read(path)
        self.assertEqual('cmp-a', parser['watcher_cams_compute']['host'])
        self.assertEqual('/t', parser['watcher_cams_compute']['state_dir'])
        self.assertEqual('rabbit://x', parser['DEFAULT']['transport_url'])
        self.assertIn('%s watcher_cams_compute host cmp-a' % path,
                      deploy.iniset_lines(path, settings))

    def test_agent_settings_load_as_the_agent_s_options(self):
        settings = deploy.agent('cmp-a', 'qemu:///system', '/s',
                                'rabbit://x', llc_cpus='0;1')
        conf = cams_conf.isolated(**settings['watcher_cams_compute'])
        self.assertEqual(('cmp-a', '0;1', 512),
                         (conf.watcher_cams_compute.host,
                          conf.watcher_cams_compute.llc_cpus,
                          conf.watcher_cams_compute.reserved_host_memory_mb))
        self.assertNotIn('llc_cpus', deploy.agent(
            'cmp-a', 'qemu:///system', '/s', 'rabbit://x')[
            'watcher_cams_compute'])

    def test_agent_metrics_settings_load_as_the_agent_s_options(self):
        settings = deploy.agent('cmp-a', 'qemu:///system', '/s',
                                'rabbit://x', metrics=('0.0.0.0', 9465))
        conf = cams_conf.isolated(**{
            'watcher_cams_prometheus.' + k: v
            for k, v in settings['watcher_cams_prometheus'].items()})
        self.assertEqual((9465, '0.0.0.0'),
                         (conf.watcher_cams_prometheus.port,
                          conf.watcher_cams_prometheus.listen_address))
        self.assertNotIn('watcher_cams_prometheus', deploy.agent(
            'cmp-a', 'qemu:///system', '/s', 'rabbit://x'))
