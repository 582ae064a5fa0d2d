"""The DevStack plugin's phases, run by bash against a stubbed DevStack.

DevStack's functions the plugin calls are replaced by small stand-ins that
record their arguments (setup_develop, run_process, openstack, ...) or do
the real thing on temporary files (iniset). The plugin runs as DevStack
runs it: settings sourced, then plugin.sh sourced once per phase.
"""

import configparser
import os
import shutil
import subprocess
import sys

import fixtures
import testtools

from watcher_cams import deploy

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
DEVSTACK = os.path.join(TOP, 'devstack')

STUBS = r'''
function _record { echo "$*" >> "$CALLS"; }
function define_plugin { _record define_plugin "$@"; }
function plugin_requires { _record plugin_requires "$@"; }
function setup_develop { _record setup_develop "$@"; }
function run_process { _record run_process "$1" "|$2|" "$3" "$4"; }
function stop_process { _record stop_process "$@"; }
function echo_summary { :; }
function die { echo "die: $*" >&2; exit 1; }
function sudo { "$@"; }
function get_transport_url { echo rabbit://stackrabbit:secret@10.0.0.1:5672/; }
function get_python_exec_prefix { echo /usr/local/bin; }
function create_service_user { _record create_service_user "$@"; }
function get_or_create_service { _record get_or_create_service "$@"; }
function get_or_create_endpoint { _record get_or_create_endpoint "$@"; }
function restart_apache_server { _record restart_apache_server; }
function remove_uwsgi_config { _record remove_uwsgi_config "$@"; }
function which { echo "/usr/local/bin/$1"; }
function configure_keystone_authtoken_middleware {
    _record configure_keystone_authtoken_middleware "$@"
    iniset "$1" keystone_authtoken username "$2"
}
function write_uwsgi_config {
    _record write_uwsgi_config "$@"
    iniset "$1" uwsgi module "$2"
}
function openstack {
    _record openstack "$@"
    if [[ "$*" == *"image list"* ]]; then printf 'img-a\nimg-b\n'; fi
    if [[ "$*" == *"image show"* ]]; then echo "id-of-${*: -1}"; fi
}
function trueorfalse {
    local default=$1 value=${!2:-$1}
    case "$value" in
        [Tt]rue|1|yes) echo True ;;
        [Ff]alse|0|no) echo False ;;
        *) echo "$default" ;;
    esac
}
function is_service_enabled {
    local s
    for s in "$@"; do
        [[ ",$ENABLED_SERVICES," == *",$s,"* ]] && return 0
        [[ $s == glance && ",$ENABLED_SERVICES" == *",g-"* ]] && return 0
    done
    return 1
}
function enable_service { ENABLED_SERVICES+=",$1"; }
function iniset {
    "$PYTHON" - "$@" <<'EOF'
import configparser, os, sys
path, section, option, value = sys.argv[1:5]
p = configparser.ConfigParser(interpolation=None)
p.optionxform = str
p.read(path)
if section != 'DEFAULT' and not p.has_section(section):
    p.add_section(section)
p.set(section, option, value)
with open(path, 'w') as f:
    p.write(f)
EOF
}
'''


class DevStackRun:
    """One node: its variables, and the plugin's phases run in order."""

    def __init__(self, tmp, services, **env):
        self.tmp = tmp
        self.calls = os.path.join(tmp, 'calls')
        self.etc = os.path.join(tmp, 'etc')
        for service in ('nova', 'tempest'):
            os.makedirs(os.path.join(self.etc, service), exist_ok=True)
        # Horizon's tree: its local/enabled, and a manage.py that records.
        self.horizon = os.path.join(tmp, 'horizon')
        os.makedirs(os.path.join(self.horizon, 'openstack_dashboard',
                                 'local', 'enabled'))
        with open(os.path.join(self.horizon, 'manage.py'), 'w') as f:
            f.write('import os, sys\n'
                    'with open(os.environ["CALLS"], "a") as f:\n'
                    '    f.write("manage.py %s\\n" % " ".join('
                    'sys.argv[1:]))\n')
        self.env = {
            'PATH': os.environ['PATH'], 'HOME': tmp,
            'CALLS': self.calls, 'PYTHON': sys.executable,
            'DEST': os.path.join(tmp, 'opt'),
            'DATA_DIR': os.path.join(tmp, 'data'),
            'STACK_USER': subprocess.run(
                ['id', '-un'], capture_output=True, text=True,
                check=True).stdout.strip(),
            'NOVA_CONF': os.path.join(self.etc, 'nova', 'nova.conf'),
            'ENABLED_SERVICES': ','.join(services),
            'WATCHER_CAMS_DIR': TOP,
            'WATCHER_CAMS_CONF_DIR': os.path.join(self.etc, 'watcher-cams'),
            'WATCHER_CAMS_WATCHER_CONF_D': os.path.join(
                self.etc, 'watcher', 'watcher.conf.d'),
            'WATCHER_CAMS_HOST': 'cmp-1',
            'TEMPEST_CONFIG': os.path.join(self.etc, 'tempest',
                                           'tempest.conf'),
            'HORIZON_DIR': self.horizon, 'REGION_NAME': 'RegionOne',
            'SERVICE_PROTOCOL': 'http', 'SERVICE_HOST': '10.0.0.1',
            'HOST_IP': '10.0.0.2',
        }
        self.env.update(env)
        self.stubs = os.path.join(tmp, 'stubs.sh')
        with open(self.stubs, 'w') as f:
            f.write(STUBS)

    def run(self, *phases):
        script = ['set -e', 'source %s' % self.stubs,
                  'source %s/settings' % DEVSTACK]
        script += ['source %s/plugin.sh %s' % (DEVSTACK, phase)
                   for phase in phases]
        proc = subprocess.run(['bash', '-c', '\n'.join(script)],
                              env=self.env, capture_output=True, text=True)
        if proc.returncode:
            raise AssertionError('plugin failed (%d): %s'
                                 % (proc.returncode, proc.stderr))
        return proc

    def recorded(self):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls) as f:
            return f.read().splitlines()

    def ini(self, *parts):
        parser = configparser.ConfigParser(interpolation=None)
        parser.optionxform = str
        path = os.path.join(self.etc, *parts)
        if not parser.read(path):
            raise AssertionError('%s was not written' % path)
        return parser


ALL_IN_ONE = ['key', 'g-api', 'n-api', 'n-cpu', 'watcher-api',
              'watcher-decision-engine', 'watcher-applier']
STACK = ('stack install', 'stack post-config', 'stack extra')


class TestDevStackPlugin(testtools.TestCase):

    def node(self, services, **env):
        tmp = self.useFixture(fixtures.TempDir()).path
        return DevStackRun(tmp, services, **env)

    def test_all_in_one_node(self):
        node = self.node(ALL_IN_ONE)
        node.run(*STACK)
        calls = node.recorded()
        self.assertIn('plugin_requires watcher-cams watcher', calls)
        # The agent is enabled on a compute node and gets its extra.
        self.assertIn('setup_develop %s agent' % TOP, calls)
        # Watcher: the drop-in file holds what the aio harness merges.
        watcher = node.ini('watcher', 'watcher.conf.d',
                           '50-watcher-cams.conf')
        self.assertEqual(deploy.watcher(),
                         {s: dict(watcher[s]) for s in watcher.sections()})
        # The agent's file.
        agent = node.ini('watcher-cams', 'watcher-cams-agent.conf')
        self.assertEqual('rabbit://stackrabbit:secret@10.0.0.1:5672/',
                         agent['DEFAULT']['transport_url'])
        compute = agent['watcher_cams_compute']
        self.assertEqual(('cmp-1', 'qemu:///system', '512'),
                         (compute['host'], compute['connection_uri'],
                          compute['reserved_host_memory_mb']))
        state_dir = compute['state_dir']
        self.assertTrue(os.path.isdir(state_dir))
        self.assertNotIn('llc_cpus', compute)
        # Prometheus metrics on the node's address.
        metrics = agent['watcher_cams_prometheus']
        self.assertEqual(('10.0.0.2', '9465'),
                         (metrics['listen_address'], metrics['port']))
        # Nova: the agent's state, not the driver (off by default).
        nova = node.ini('nova', 'nova.conf')
        self.assertEqual(state_dir, nova['watcher_cams_nova'][
            'agent_state_dir'])
        self.assertNotIn('compute_driver', nova['DEFAULT'])
        # The agent runs as root, every image gets the guest agent.
        [run] = [c for c in calls
                 if c.startswith('run_process watcher-cams-agent')]
        self.assertEqual(
            'run_process watcher-cams-agent |/usr/local/bin/'
            'watcher-cams-agent --config-file %s|  root'
            % os.path.join(node.etc, 'watcher-cams',
                           'watcher-cams-agent.conf'), run)
        marks = [c for c in calls if 'image set' in c]
        self.assertEqual(
            ['openstack --os-cloud devstack-admin image set --property '
             'hw_qemu_guest_agent=yes img-%s' % n for n in 'ab'], marks)

    def test_reports_api_beside_watchers(self):
        node = self.node(ALL_IN_ONE)
        node.run(*STACK)
        calls = node.recorded()
        self.assertIn('create_service_user watcher-cams admin', calls)
        self.assertIn('get_or_create_service watcher-cams '
                      'memory-optimization watcher-cams reports API', calls)
        self.assertIn('get_or_create_endpoint memory-optimization RegionOne '
                      'http://10.0.0.1/memory-optimization', calls)
        api = node.ini('watcher-cams', 'watcher-cams-api.conf')
        self.assertEqual('rabbit://stackrabbit:secret@10.0.0.1:5672/',
                         api['DEFAULT']['transport_url'])
        self.assertEqual('watcher-cams',
                         api['keystone_authtoken']['username'])
        uwsgi = node.ini('watcher-cams', 'watcher-cams-api-uwsgi.ini')
        self.assertEqual('watcher_cams.api.wsgi:application',
                         uwsgi['uwsgi']['module'])
        self.assertEqual('WATCHER_CAMS_API_CONFIG=%s' % os.path.join(
            node.etc, 'watcher-cams', 'watcher-cams-api.conf'),
            uwsgi['uwsgi']['env'])
        [run] = [c for c in calls
                 if c.startswith('run_process watcher-cams-api')]
        self.assertIn('/usr/local/bin/uwsgi --procname-prefix '
                      'watcher-cams-api --ini %s' % os.path.join(
                          node.etc, 'watcher-cams',
                          'watcher-cams-api-uwsgi.ini'), run)
        # Without Horizon, nothing of the panel.
        self.assertFalse([c for c in calls if 'manage.py' in c])

        node = self.node(ALL_IN_ONE, WATCHER_CAMS_API='False')
        node.run(*STACK)
        self.assertFalse([c for c in node.recorded()
                          if 'watcher-cams-api' in c])

    def test_horizon_panel(self):
        node = self.node(ALL_IN_ONE + ['horizon'])
        node.run(*STACK)
        calls = node.recorded()
        self.assertIn('setup_develop %s agent,dashboard' % TOP, calls)
        enabled = os.path.join(node.horizon, 'openstack_dashboard', 'local',
                               'enabled', '_2290_admin_watcher_cams.py')
        with open(enabled) as f:
            self.assertIn("ADD_PANEL = 'watcher_cams_dashboard.panel."
                          "MemoryPanel'", f.read())
        self.assertEqual(['manage.py collectstatic --noinput',
                          'manage.py compress --force',
                          'restart_apache_server'],
                         [c for c in calls if 'manage.py' in c
                          or c == 'restart_apache_server'])
        node.run('unstack', 'clean')
        self.assertFalse(os.path.exists(enabled))

        node = self.node(ALL_IN_ONE + ['horizon'],
                         WATCHER_CAMS_DASHBOARD='False')
        node.run(*STACK)
        self.assertIn('setup_develop %s agent' % TOP, node.recorded())
        self.assertFalse([c for c in node.recorded() if 'manage.py' in c])

    def test_driver_extension_llc_and_named_images(self):
        node = self.node(ALL_IN_ONE, WATCHER_CAMS_NOVA_DRIVER='True',
                         WATCHER_CAMS_LLC_CPUS='0;1',
                         WATCHER_CAMS_GUEST_AGENT_IMAGES='cirros,ubuntu',
                         WATCHER_CAMS_METRICS_PORT='0')
        node.run(*STACK)
        self.assertNotIn('watcher_cams_prometheus', node.ini(
            'watcher-cams', 'watcher-cams-agent.conf'))
        self.assertIn('setup_develop %s agent,nova' % TOP, node.recorded())
        self.assertEqual('watcher_cams.CamsLibvirtDriver', node.ini(
            'nova', 'nova.conf')['DEFAULT']['compute_driver'])
        self.assertEqual('0;1', node.ini(
            'watcher-cams', 'watcher-cams-agent.conf')[
            'watcher_cams_compute']['llc_cpus'])
        marks = [c.split()[-1] for c in node.recorded() if 'image set' in c]
        self.assertEqual(['cirros', 'ubuntu'], marks)
        self.assertFalse([c for c in node.recorded() if 'image list' in c])

    def test_controller_without_compute_runs_no_agent(self):
        node = self.node(['key', 'g-api', 'watcher-decision-engine',
                          'watcher-applier'],
                         WATCHER_CAMS_GUEST_AGENT_IMAGES='none')
        node.run(*STACK)
        calls = node.recorded()
        self.assertIn('setup_develop %s' % TOP, calls)
        self.assertFalse([c for c in calls if c.startswith(
            ('run_process', 'openstack'))])
        self.assertFalse(os.path.exists(os.path.join(node.etc,
                                                     'watcher-cams')))
        self.assertTrue(node.ini('watcher', 'watcher.conf.d',
                                 '50-watcher-cams.conf').sections())

    def test_compute_node_with_the_agent_off(self):
        node = self.node(['n-cpu'], WATCHER_CAMS_AGENT='False')
        node.run(*STACK)
        self.assertFalse([c for c in node.recorded()
                          if c.startswith('run_process')])
        self.assertFalse(os.path.exists(os.path.join(
            node.etc, 'watcher', 'watcher.conf.d')))

    def test_tempest_config(self):
        node = self.node(ALL_IN_ONE + ['tempest'])
        node.run(*STACK + ('stack test-config',))
        tempest = node.ini('tempest', 'tempest.conf')
        self.assertEqual('True',
                         tempest['service_available']['watcher_cams'])
        # Without the lab's image the scenarios are skipped.
        self.assertFalse(tempest.has_section('watcher_cams'))

        node.env['WATCHER_CAMS_TEMPEST_IMAGE'] = 'cams-tiny'
        node.run('stack test-config')
        self.assertEqual(
            {'image_ref': 'id-of-cams-tiny', 'compute_host': 'cmp-1',
             'libvirt_uri': 'qemu:///system'},
            dict(node.ini('tempest', 'tempest.conf')['watcher_cams']))

    def test_no_tempest_config_without_tempest(self):
        node = self.node(ALL_IN_ONE)
        node.run(*STACK + ('stack test-config',))
        self.assertFalse(os.path.exists(os.path.join(node.etc, 'tempest',
                                                     'tempest.conf')))

    def test_a_missing_tempest_image_stops_the_phase(self):
        node = self.node(ALL_IN_ONE + ['tempest'],
                         WATCHER_CAMS_TEMPEST_IMAGE='nope')
        with open(node.stubs, 'a') as f:
            f.write('function openstack { return 1; }\n')
        exc = self.assertRaises(AssertionError, node.run,
                                'stack test-config')
        self.assertIn('no image nope for tempest', str(exc))

    def test_unstack_and_clean(self):
        node = self.node(ALL_IN_ONE)
        node.run(*STACK)
        node.run('unstack', 'clean')
        self.assertIn('stop_process watcher-cams-agent', node.recorded())
        self.assertIn('stop_process watcher-cams-api', node.recorded())
        self.assertIn('remove_uwsgi_config %s watcher-cams-api'
                      % os.path.join(node.etc, 'watcher-cams',
                                     'watcher-cams-api-uwsgi.ini'),
                      node.recorded())
        for path in (('watcher-cams',),
                     ('watcher', 'watcher.conf.d', '50-watcher-cams.conf')):
            self.assertFalse(os.path.exists(os.path.join(node.etc, *path)))

    def test_a_failed_image_mark_stops_the_phase(self):
        node = self.node(ALL_IN_ONE)
        with open(node.stubs, 'a') as f:
            f.write('function openstack { return 1; }\n')
        node.env['WATCHER_CAMS_GUEST_AGENT_IMAGES'] = 'cirros'
        exc = self.assertRaises(AssertionError, node.run, *STACK)
        self.assertIn('cannot mark image cirros', str(exc))

    def test_shellcheck_clean(self):
        shellcheck = shutil.which('shellcheck')
        if shellcheck is None:
            if os.environ.get('CI'):
                self.fail('shellcheck is missing (tools/host-setup.sh '
                          'installs it)')
            self.skipTest('shellcheck is not installed')
        proc = subprocess.run(
            [shellcheck, '-x', 'plugin.sh', 'settings'], cwd=DEVSTACK,
            capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
