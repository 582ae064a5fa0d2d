"""An all-in-one OpenStack on this machine, with watcher-cams installed.

    python3 tools/aio/aio.py prepare|up|down|status|openrc|tempest [REGEX]
    python3 tools/aio/aio.py fake-computes COUNT|remove-fake-computes

``prepare`` installs what ``up`` needs (host packages, the services' venv)
and starts nothing: tools/test.sh runs it beside the functional tests.
``openrc`` prints shell exports: admin credentials for the openstack CLI
and ``watcher-cams-lab cloud`` (with cmp-a and its libvirt as the lab's
node): ``eval "$(python3 tools/aio/aio.py openrc)"``. ``tempest`` runs the
project's tempest plugin (or the tests REGEX selects) against the cloud in
a fresh workspace (.cache/aio/tempest, its tempest.conf written from the
cloud), with KSM merging fast on the host meanwhile, as the pinning
scenario needs; its exit code is tempest's. ``fake-computes`` adds COUNT
compute hosts on Nova's fake driver, in one process
(tools/aio/fake_computes.py), for tests at scale; ``remove-fake-computes``
stops and deletes them.

MariaDB, RabbitMQ, Keystone, Placement, Glance, Neutron (neutron-server's
API with ML2 and no agents: enough for servers created with --nic none),
Nova (API, conductor, scheduler, two nova-compute on libvirt under TCG, each
with a libvirtd of its own; cmp-a uses the project's driver extension),
Watcher (API, decision engine, applier) with the plugin, and
watcher-cams-agent beside each nova-compute. Every package is pinned
(tools/aio/requirements.txt and constraints.txt). No systemd here: each
service runs in the background with a pid file under the state directory
(.cache/aio, or $CAMS_AIO_DIR); `down` stops them by pid. The facts this
rests on are in ../shared/aio-notes.md of the project's workspace.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, TOP)

from watcher_cams import deploy  # noqa: E402
from watcher_cams.lab import ksm_tuning  # noqa: E402
from watcher_cams.lab import prometheus as lab_prometheus  # noqa: E402

AIO = os.path.abspath(os.environ.get('CAMS_AIO_DIR',
                                     os.path.join(TOP, '.cache', 'aio')))
VENV = os.path.join(AIO, 'venv')
BIN = os.path.join(VENV, 'bin')
TOOLS = os.path.join(AIO, 'bin')  # the root-only sudo of privsep/rootwrap
RUN = os.path.join(AIO, 'run')
LOG = os.path.join(AIO, 'log')
ETC = os.path.join(AIO, 'etc')
DATA = os.path.join(AIO, 'data')
GUEST = os.environ.get('CAMS_GUEST_DIR', os.path.join(TOP, '.cache', 'guest'))
PASSWORD = 'secret'
DB = 'mysql+pymysql://cams:%s@127.0.0.1/%%s' % PASSWORD
RABBIT = 'rabbit://openstack:%s@127.0.0.1:5672/' % PASSWORD
KEYSTONE = 'http://127.0.0.1:5000/v3'
SERVICES = {  # name: (catalog type, port and path)
    'placement': ('placement', '8778'),
    'glance': ('image', '9292'),
    'neutron': ('network', '9696'),
    'nova': ('compute', '8774/v2.1'),
    'watcher': ('infra-optim', '9322'),
    # watcher-cams-api: the agents' overviews, read only (the dashboard's).
    'watcher-cams': ('memory-optimization', '9330'),
}
DATABASES = ('keystone', 'placement', 'glance', 'neutron', 'nova_api',
             'nova', 'nova_cell0', 'watcher')
# Two compute nodes; names must not contain each other (Watcher matches
# node names by substring).
COMPUTES = (('cmp-a', 16610, True), ('cmp-b', 16611, False))
# ``fake-computes``: extra compute hosts on Nova's fake driver, all in one
# process (fake_computes.py); names of one length, none containing another.
FAKE_COMPUTES = 'nova-fake-computes'
FAKE_PREFIX = 'sim-'
# Each agent's Prometheus page, and the cloud's Prometheus scraping both.
METRICS_PORTS = {'cmp-a': 9465, 'cmp-b': 9466}
PROMETHEUS_PORT = 9091
PROMETHEUS = 'http://127.0.0.1:%d' % PROMETHEUS_PORT
TEMPEST = os.path.join(AIO, 'tempest')
HORIZON = 'http://127.0.0.1:8080'
HORIZON_STATIC = os.path.join(AIO, 'horizon-static')

STARTED = time.monotonic()


def say(message):
    print('[%4.0fs] %s' % (time.monotonic() - STARTED, message), flush=True)


def path():
    return '%s:%s:%s' % (TOOLS, BIN, os.environ['PATH'])


def run(*argv, env=None, quiet=True, **kwargs):
    environ = dict(os.environ, PATH=path(), PYTHONWARNINGS='ignore',
                   **(env or {}))
    out = subprocess.run(argv, env=environ, text=True, capture_output=quiet,
                         **kwargs)
    if out.returncode:
        raise RuntimeError('%s failed (%d): %s' % (
            ' '.join(argv), out.returncode,
            (out.stderr or out.stdout or '')[-2000:]))
    return out.stdout


def wait(what, check, timeout=120.0, every=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # noqa: B902 (retried until the timeout)
            pass
        time.sleep(every)
    raise RuntimeError('%s: not ready after %.0f s (logs in %s)'
                       % (what, timeout, LOG))


def http_up(url):
    try:
        urllib.request.urlopen(url, timeout=3).read()
        return True
    except urllib.error.HTTPError as exc:
        return exc.code in (300, 401)
    except OSError:
        return False


# -- processes -----------------------------------------------------------
def pidfile(name):
    return os.path.join(RUN, name + '.pid')


def alive(name):
    try:
        with open(pidfile(name)) as f:
            pid = int(f.read())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def daemon(name, argv, env=None, namespace_of=None):
    """Start ``argv`` in the background; in a libvirtd's mount namespace."""
    if alive(name):
        return
    if namespace_of:
        argv = ['nsenter', '-t', str(libvirtd_pid(namespace_of)), '-m',
                '--'] + list(argv)
    environ = dict(os.environ, PATH=path(), PYTHONWARNINGS='ignore',
                   **(env or {}))
    with open(os.path.join(LOG, name + '.out'), 'ab') as out:
        proc = subprocess.Popen(argv, env=environ, stdout=out,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                start_new_session=True)
    with open(pidfile(name), 'w') as f:
        f.write(str(proc.pid))


def uwsgi(name, port, module, env, extra=()):
    daemon(name, [
        os.path.join(BIN, 'uwsgi'), '--http-socket', '127.0.0.1:%s' % port,
        '--module', module, '--home', VENV, '--master', '--processes', '1',
        '--threads', '4', '--enable-threads', '--lazy-apps',
        '--die-on-term', '--buffer-size', '65535',
        # Without it clients see random connection resets (aio-notes.md).
        '--add-header', 'Connection: close'] + list(extra), env=env)


def signal_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop(*names, timeout=10.0):
    """SIGTERM to all, then SIGKILL to what is left after ``timeout``.

    Nova's and Watcher's services often take longer than that to stop.
    """
    pids = {name: alive(name) for name in names}
    for pid in filter(None, pids.values()):
        signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(map(alive, names)):
        time.sleep(0.3)
    for name, pid in pids.items():
        if pid and alive(name):
            signal_group(pid, signal.SIGKILL)
        # A service may remove its own pid file as it exits.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pidfile(name))


# -- host ----------------------------------------------------------------
def host_packages():
    run(os.path.join(TOP, 'tools', 'host-setup.sh'), quiet=False)
    if not shutil.which('mariadbd'):
        say('installing mariadb-server')
        run('apt-get', 'install', '-y', '-qq', 'mariadb-server',
            env={'DEBIAN_FRONTEND': 'noninteractive'})


def venv():
    stamp = os.path.join(VENV, '.cams-aio')
    want = ''.join(open(os.path.join(TOP, p)).read() for p in (
        'tools/aio/requirements.txt', 'constraints.txt', 'setup.cfg'))
    if os.path.exists(stamp) and open(stamp).read() == want:
        return
    say('installing the pinned services into %s (about 2 minutes)' % VENV)
    if not os.path.exists(os.path.join(BIN, 'python')):
        run(sys.executable, '-m', 'venv', VENV)
    pip = os.path.join(BIN, 'pip')
    run(pip, 'install', '-q', '--upgrade', 'pip', 'setuptools', 'wheel')
    run(pip, 'install', '-q', '-c', os.path.join(TOP, 'constraints.txt'),
        '-r', os.path.join(TOP, 'tools', 'aio', 'requirements.txt'))
    run(pip, 'install', '-q', '--no-deps', '-e', TOP,
        env={'PBR_VERSION': os.environ.get('PBR_VERSION', '0.1.0')})
    virt = run(os.path.join(BIN, 'python'), '-c',
               'import os, nova.virt; print(os.path.dirname('
               'nova.virt.__file__))').strip()
    link = os.path.join(virt, 'watcher_cams')
    if not os.path.islink(link):
        os.symlink(os.path.join(TOP, 'nova', 'virt', 'watcher_cams'), link)
    with open(stamp, 'w') as f:
        f.write(want)


def mariadb():
    def ping():
        return subprocess.run(['mysqladmin', 'ping'], capture_output=True
                              ).returncode == 0
    if not ping():
        os.makedirs('/run/mysqld', exist_ok=True)
        shutil.chown('/run/mysqld', 'mysql', 'mysql')
        daemon('mariadb', ['/usr/sbin/mariadbd', '--user=mysql',
                           '--max-connections=500'])
        wait('MariaDB', ping)
    sql = ['CREATE USER IF NOT EXISTS \'cams\'@\'127.0.0.1\' IDENTIFIED BY '
           '\'%s\'' % PASSWORD,
           'GRANT ALL ON *.* TO \'cams\'@\'127.0.0.1\'', 'FLUSH PRIVILEGES']
    for db in DATABASES:
        sql[:0] = ['DROP DATABASE IF EXISTS %s' % db,
                   'CREATE DATABASE %s' % db]
    run('mysql', '-e', '; '.join(sql))


def rabbitmq():
    subprocess.run(['rabbitmqctl', 'add_user', 'openstack', PASSWORD],
                   capture_output=True)
    run('rabbitmqctl', 'set_permissions', 'openstack', '.*', '.*', '.*')


# -- configuration -------------------------------------------------------
def auth(user):
    return {'auth_url': KEYSTONE, 'auth_type': 'password',
            'project_domain_name': 'Default', 'user_domain_name': 'Default',
            'project_name': 'service', 'username': user,
            'password': PASSWORD}


def authtoken(user):
    return dict(auth(user), www_authenticate_uri=KEYSTONE)


def libvirt_dir(node):
    return os.path.join(AIO, 'libvirt-' + node)


def libvirt_socket(node):
    return os.path.join(libvirt_dir(node), 'run', 'libvirt-sock')


def libvirt_uri(node):
    """The URI of ``node``'s own libvirtd, from outside its namespace."""
    return 'qemu+unix:///system?socket=' + libvirt_socket(node)


def configs():
    """Every service's config file: path -> settings.

    One piece on purpose (140 lines): it is a data literal, the whole
    cloud's configuration in one place, read top to bottom like the files
    it writes.
    """
    nova_common = {
        'DEFAULT': {
            'transport_url': RABBIT, 'my_ip': '127.0.0.1',
            'state_path': os.path.join(DATA, 'nova'),
            'instances_path': os.path.join(DATA, 'nova', 'instances'),
            'rootwrap_config': os.path.join(ETC, 'nova', 'rootwrap.conf'),
            'compute_driver': 'libvirt.LibvirtDriver',
            'enabled_apis': 'osapi_compute', 'osapi_compute_workers': '1',
            # Nova formats ephemeral disks as vfat unless told; the guest
            # mounts ext4 (and the host has no mkfs.vfat).
            'default_ephemeral_format': 'ext4'},
        'api': {'auth_strategy': 'keystone'},
        'api_database': {'connection': DB % 'nova_api'},
        'database': {'connection': DB % 'nova'},
        'conductor': {'workers': '1'}, 'scheduler': {'workers': '1'},
        'keystone_authtoken': authtoken('nova'),
        'service_user': dict(auth('nova'), send_service_user_token='true'),
        'placement': dict(auth('placement'), region_name='RegionOne'),
        'glance': {'region_name': 'RegionOne'},
        'neutron': dict(auth('nova'), region_name='RegionOne'),
        'libvirt': {'virt_type': 'qemu', 'cpu_mode': 'none',
                    'connection_uri': 'qemu:///system',
                    'live_migration_inbound_addr': '127.0.0.1'},
        'vnc': {'enabled': 'false'},
        'oslo_concurrency': {'lock_path': os.path.join(DATA, 'nova',
                                                       'locks')},
        'oslo_messaging_notifications': {'driver': 'messagingv2'},
        # Watcher's compute model follows instance events.
        'notifications': {'notification_format': 'both'},
        # Nova's image check rejects the tiny guest's kernel image.
        'workarounds': {'disable_deep_image_inspection': 'true'},
    }
    files = {
        'keystone/keystone.conf': {
            'DEFAULT': {'log_file': os.path.join(LOG, 'keystone.log')},
            'database': {'connection': DB % 'keystone'},
            'token': {'provider': 'fernet'},
            # Every CLI call and every service's first request asks for a
            # token: bcrypt's default cost (2^12) made each take half a
            # second of Keystone's one process. A test bed's passwords
            # need no such strength.
            'identity': {'password_hash_rounds': '4'},
            'fernet_tokens': {'key_repository': os.path.join(
                DATA, 'keystone', 'fernet-keys')},
            'credential': {'key_repository': os.path.join(
                DATA, 'keystone', 'credential-keys')}},
        'placement/placement.conf': {
            'DEFAULT': {'log_file': os.path.join(LOG, 'placement.log')},
            'placement_database': {'connection': DB % 'placement'},
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': authtoken('placement')},
        'glance/glance-api.conf': {
            'DEFAULT': {'log_file': os.path.join(LOG, 'glance-api.log'),
                        'enabled_backends': 'fs:file',
                        'worker_self_reference_url':
                            'http://127.0.0.1:9292'},
            'database': {'connection': DB % 'glance'},
            'glance_store': {'default_backend': 'fs'},
            'fs': {'filesystem_store_datadir': os.path.join(
                DATA, 'glance', 'images')},
            'os_glance_staging_store': {'filesystem_store_datadir':
                                        os.path.join(DATA, 'glance',
                                                     'staging')},
            'os_glance_tasks_store': {'filesystem_store_datadir':
                                      os.path.join(DATA, 'glance', 'tasks')},
            'paste_deploy': {'flavor': 'keystone'},
            'keystone_authtoken': authtoken('glance')},
        'neutron/neutron.conf': {
            'DEFAULT': {'log_file': os.path.join(LOG, 'neutron.log'),
                        'core_plugin': 'ml2',
                        # port_forwarding defines the Port model's
                        # relation every port query loads.
                        'service_plugins': 'router,port_forwarding',
                        'transport_url': RABBIT,
                        'api_paste_config': os.path.join(
                            VENV, 'etc', 'neutron', 'api-paste.ini')},
            'database': {'connection': DB % 'neutron'},
            'keystone_authtoken': authtoken('neutron'),
            'nova': dict(auth('nova'), region_name='RegionOne'),
            'oslo_concurrency': {'lock_path': os.path.join(DATA,
                                                           'neutron')}},
        'neutron/ml2_conf.ini': {
            # No agents: no network is bound, servers use --nic none.
            'ml2': {'type_drivers': 'flat', 'tenant_network_types': '',
                    'mechanism_drivers': '', 'extension_drivers': ''}},
        'nova/nova.conf': deploy.merge(nova_common, {
            'DEFAULT': {'log_dir': LOG}}),
        'nova/rootwrap.conf': {'DEFAULT': {
            'filters_path': os.path.join(VENV, 'etc', 'nova', 'rootwrap.d'),
            'exec_dirs': '%s,/usr/sbin,/usr/bin,/sbin,/bin' % BIN,
            'use_syslog': 'False'}},
        'nova/nova-fake-computes.conf': {
            'DEFAULT': {'compute_driver': 'fake.FakeDriver',
                        'log_file': os.path.join(LOG, FAKE_COMPUTES + '.log'),
                        'state_path': os.path.join(DATA, 'nova-fake'),
                        # Each host's RPC server takes a thread per request
                        # in flight: these hosts get few.
                        'executor_thread_pool_size': '2',
                        # Heartbeats of hundreds of hosts, within the
                        # scheduler's 60 s service_down_time.
                        'report_interval': '30'},
            'oslo_concurrency': {'lock_path': os.path.join(
                DATA, 'nova-fake', 'locks')}},
        'nova/nova-api.conf': {
            'DEFAULT': {'log_file': os.path.join(LOG, 'nova-api.log')}},
        'watcher/watcher.conf': deploy.merge({
            'DEFAULT': {'log_dir': LOG, 'transport_url': RABBIT},
            'database': {'connection': DB % 'watcher'},
            'api': {'host': '127.0.0.1', 'port': '9322'},
            'keystone_authtoken': authtoken('watcher'),
            'watcher_clients_auth': auth('watcher'),
            'oslo_messaging_notifications': {'driver': 'messagingv2'},
            'oslo_concurrency': {'lock_path': os.path.join(DATA,
                                                           'watcher')},
            # A tiny guest's balloon settles in seconds; a dead agent
            # should fail an action in half a minute, not two.
            'watcher_cams_agent': {'action_timeout': '30'},
        }, deploy.watcher()),
        'watcher-cams/api.conf': {
            'DEFAULT': {'log_file': os.path.join(LOG,
                                                 'watcher-cams-api.log'),
                        'transport_url': RABBIT},
            'keystone_authtoken': authtoken('watcher-cams'),
            # A page of the dashboard waits at most this for an agent.
            'watcher_cams_agent': {'report_timeout': '20'}},
    }
    # These machines have one L3, where vCPU placement has nothing to
    # gain; cmp-a's agent treats each CPU as a cache of its own, so that
    # sharing_aware_pinning has a choice to make (and the test bed shows
    # its actions). cmp-b reports the real topology.
    split_llc = ';'.join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))
    for n, (node, port, extension) in enumerate(COMPUTES):
        state = os.path.join(DATA, 'agent-' + node)
        other = COMPUTES[1 - n][1]
        files['nova/nova-compute-%s.conf' % node] = deploy.merge(
            nova_common, {
                'DEFAULT': {'host': node, 'log_file': os.path.join(
                    LOG, 'nova-compute-%s.log' % node),
                    'state_path': os.path.join(DATA, 'nova-' + node)},
                'libvirt': {'live_migration_uri':
                            'qemu+tcp://%%s:%d/system' % other},
                'oslo_concurrency': {'lock_path': os.path.join(
                    DATA, 'nova-' + node, 'locks')}},
            deploy.nova_compute(state, driver_extension=extension),
            # cmp-b keeps the host's page cache under its guests' disks
            # (double caching, doc/source/lfu.rst); cmp-a bypasses it, as
            # Nova does by default where O_DIRECT works.
            {} if extension else
            {'libvirt': {'disk_cachemodes': 'file=writeback'}})
        files['watcher-cams/agent-%s.conf' % node] = deploy.merge(
            deploy.agent(node, 'qemu:///system', state, RABBIT,
                         llc_cpus=split_llc if extension else None,
                         metrics=('127.0.0.1', METRICS_PORTS[node])),
            {'DEFAULT': {'log_file': os.path.join(
                LOG, 'watcher-cams-agent-%s.log' % node)},
             # Audits get the newest collection; tests boot a guest and
             # audit it, and should not wait the default 30 s for it.
             'watcher_cams_compute': {'collect_interval': '10'}})
    return files


def write_configs():
    # Nova's privsep and rootwrap call sudo; these machines run everything
    # as root and have none.
    os.makedirs(TOOLS, exist_ok=True)
    sudo = os.path.join(TOOLS, 'sudo')
    with open(sudo, 'w') as f:
        f.write('#!/bin/sh\nexec "$@"\n')
    os.chmod(sudo, 0o755)
    for name, settings in configs().items():
        path = os.path.join(ETC, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        deploy.write(path, settings)
    for src, dst in (('nova/api-paste.ini', 'nova/api-paste.ini'),
                     ('glance/glance-api-paste.ini',
                      'glance/glance-api-paste.ini')):
        shutil.copy(os.path.join(VENV, 'etc', src), os.path.join(ETC, dst))


# -- services ------------------------------------------------------------
def conf(name):
    return os.path.join(ETC, name)


def keystone():
    manage = [os.path.join(BIN, 'keystone-manage'), '--config-file',
              conf('keystone/keystone.conf')]
    run(*manage, 'db_sync')
    for step in ('fernet_setup', 'credential_setup'):
        run(*manage, step, '--keystone-user', 'root', '--keystone-group',
            'root')
    run(*manage, 'bootstrap', '--bootstrap-password', PASSWORD,
        '--bootstrap-admin-url', KEYSTONE, '--bootstrap-internal-url',
        KEYSTONE, '--bootstrap-public-url', KEYSTONE,
        '--bootstrap-region-id', 'RegionOne')
    uwsgi('keystone', 5000, 'keystone.wsgi.api:application',
          {'OS_KEYSTONE_CONFIG_FILES': conf('keystone/keystone.conf')})
    wait('keystone', lambda: http_up(KEYSTONE))
    run(os.path.join(BIN, 'python'),
        os.path.join(TOP, 'tools', 'aio', 'catalog.py'),
        input=json.dumps({'password': PASSWORD, 'auth_url': KEYSTONE,
                          'services': SERVICES}))
    say('keystone and the catalog are up')


def admin_env():
    return {'OS_AUTH_URL': KEYSTONE, 'OS_USERNAME': 'admin',
            'OS_PASSWORD': PASSWORD, 'OS_PROJECT_NAME': 'admin',
            'OS_USER_DOMAIN_NAME': 'Default',
            'OS_PROJECT_DOMAIN_NAME': 'Default',
            'OS_IDENTITY_API_VERSION': '3', 'OS_REGION_NAME': 'RegionOne'}


class _OpenstackShell:
    """One osc_shell.py process as admin: the CLI without its start-up.

    Started at the first command, restarted if it died; commands from
    several threads take turns.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.proc = None

    def __call__(self, *argv):
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = subprocess.Popen(
                    [os.path.join(BIN, 'python'),
                     os.path.join(TOP, 'tools', 'aio', 'osc_shell.py')],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                    env=dict(os.environ, PYTHONWARNINGS='ignore',
                             **admin_env()))
            self.proc.stdin.write(json.dumps(argv) + '\n')
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('openstack %s: the CLI process died'
                               % ' '.join(argv))
        done = json.loads(line)
        if done['rc']:
            raise RuntimeError('openstack %s failed (%d): %s' % (
                ' '.join(argv), done['rc'],
                (done['err'] or done['out'])[-2000:]))
        return done['out']


# The openstack CLI as admin: openstack('server', 'list') is its stdout.
openstack = _OpenstackShell()


def placement_glance_neutron():
    run(os.path.join(BIN, 'placement-manage'), '--config-file',
        conf('placement/placement.conf'), 'db', 'sync')
    uwsgi('placement', 8778, 'placement.wsgi.api:application',
          {'OS_PLACEMENT_CONFIG_DIR': conf('placement')})
    run(os.path.join(BIN, 'glance-manage'), '--config-file',
        conf('glance/glance-api.conf'), 'db_sync')
    uwsgi('glance-api', 9292, 'glance.wsgi.api:application',
          {'OS_GLANCE_CONFIG_DIR': conf('glance')})
    run(os.path.join(BIN, 'neutron-db-manage'), '--config-file',
        conf('neutron/neutron.conf'), '--config-file',
        conf('neutron/ml2_conf.ini'), 'upgrade', 'heads')
    uwsgi('neutron-api', 9696, 'neutron.wsgi.api:application',
          {'OS_NEUTRON_CONFIG_DIR': conf('neutron'),
           'OS_NEUTRON_CONFIG_FILES': 'neutron.conf;ml2_conf.ini'})
    for url in ('http://127.0.0.1:8778/', 'http://127.0.0.1:9292/',
                'http://127.0.0.1:9696/'):
        wait(url, lambda: http_up(url))
    # The Port model's port_forwardings relation exists only once SQLAlchemy
    # configured its mappers, which the first query does; a port listing
    # first (Nova's) fails without it in an API-only neutron.
    openstack('network', 'list')
    say('placement, glance and neutron are up')


def libvirtd_pid(node):
    with open(os.path.join(libvirt_dir(node), 'libvirtd.pid')) as f:
        return int(f.read())


def libvirtds():
    for n, (node, port, _) in enumerate(COMPUTES):
        base = libvirt_dir(node)
        if alive('libvirtd-' + node):
            continue
        shutil.rmtree(base, ignore_errors=True)
        for sub in ('run', 'cache/qemu', 'log/qemu', 'lib/boot',
                    'lib/images', 'lib/qemu/channel/target', 'lib/qemu/nvram',
                    'lib/qemu/ram', 'lib/qemu/save', 'lib/qemu/snapshot',
                    'lib/qemu/dump', 'lib/qemu/checkpoint'):
            os.makedirs(os.path.join(base, sub))
        shutil.copytree('/etc/libvirt', os.path.join(base, 'etc'))
        for stale in ('qemu/networks/autostart', 'qemu/networks'):
            shutil.rmtree(os.path.join(base, 'etc', stale),
                          ignore_errors=True)
        run('chown', '-R', 'libvirt-qemu:libvirt-qemu',
            os.path.join(base, 'lib', 'qemu'))
        with open(os.path.join(base, 'etc', 'libvirtd.conf'), 'a') as f:
            f.write('\nlisten_tls = 0\nlisten_tcp = 1\nlisten_addr = '
                    '"127.0.0.1"\ntcp_port = "%d"\nauth_tcp = "none"\n'
                    % port)
        instances = os.path.join(DATA, 'nova', 'instances')
        bind = []
        if n:  # the second node: its own storage under the same path
            private = os.path.join(DATA, 'nova-' + node, 'instances')
            os.makedirs(private, exist_ok=True)
            bind = ['%s:%s' % (private, instances)]
        daemon('libvirtd-' + node, [
            'unshare', '-m', '-u', '--propagation', 'private',
            os.path.join(TOP, 'tools', 'aio', 'libvirtd-ns.sh'), base,
            str(port), node] + bind)
        wait('libvirtd of ' + node, lambda: os.path.exists(
            libvirt_socket(node)))


def nova():
    manage = [os.path.join(BIN, 'nova-manage'), '--config-file',
              conf('nova/nova.conf')]
    run(*manage, 'api_db', 'sync')
    run(*manage, 'cell_v2', 'map_cell0', '--database_connection',
        DB % 'nova_cell0')
    run(*manage, 'cell_v2', 'create_cell', '--name', 'cell1')
    run(*manage, 'db', 'sync')
    uwsgi('nova-api', 8774, 'nova.wsgi.osapi_compute:application',
          {'OS_NOVA_CONFIG_DIR': conf('nova'),
           'OS_NOVA_CONFIG_FILES': 'api-paste.ini;nova.conf;nova-api.conf'})
    for service in ('conductor', 'scheduler'):
        daemon('nova-' + service, [os.path.join(BIN, 'nova-' + service),
                                   '--config-file', conf('nova/nova.conf')])
    libvirtds()
    for node, _, _ in COMPUTES:
        os.makedirs(os.path.join(DATA, 'nova-' + node, 'locks'),
                    exist_ok=True)
        daemon('nova-compute-' + node, [
            os.path.join(BIN, 'nova-compute'), '--config-file',
            conf('nova/nova.conf'), '--config-file',
            conf('nova/nova-compute-%s.conf' % node)], namespace_of=node)
    wait('nova-api', lambda: http_up('http://127.0.0.1:8774/'))
    wait('both nova-compute services', lambda: list(
        nova_compute_hosts().values()).count('up') == len(COMPUTES),
        timeout=180, every=3)
    run(*manage, 'cell_v2', 'discover_hosts')
    say('nova is up with %d computes' % len(COMPUTES))


def nova_compute_services(prefix=''):
    """Nova's nova-compute services whose host has ``prefix``: CLI rows."""
    out = openstack('compute', 'service', 'list', '--service',
                    'nova-compute', '-f', 'json')
    return [s for s in json.loads(out) if s['Host'].startswith(prefix)]


def nova_compute_hosts(prefix=''):
    """{host: state} of the nova-compute services whose host has ``prefix``."""
    return {s['Host']: s['State'] for s in nova_compute_services(prefix)}


def fake_computes(count):
    """``count`` more compute hosts, sim-000..., on Nova's fake driver.

    For tests of the decision engine at scale (tests/cloud/test_scale.py):
    Watcher's model and the audits see them as nodes like any other; their
    agents are simulated (watcher_cams.lab.sim_agents).
    """
    count = int(count)
    os.makedirs(os.path.join(DATA, 'nova-fake', 'locks'), exist_ok=True)
    daemon(FAKE_COMPUTES, [
        os.path.join(BIN, 'python'),
        os.path.join(TOP, 'tools', 'aio', 'fake_computes.py'), FAKE_PREFIX,
        str(count), '--config-file', conf('nova/nova.conf'),
        '--config-file', conf('nova/nova-fake-computes.conf')])
    # Its log says when all have started (cheaper than asking Nova).
    wait('%d fake compute services' % count, fake_computes_started,
         timeout=60 + 2 * count, every=2)
    up = list(nova_compute_hosts(FAKE_PREFIX).values()).count('up')
    if up != count:
        raise RuntimeError('%d of %d fake compute services are up (logs in '
                           '%s)' % (up, count, LOG))
    run(os.path.join(BIN, 'nova-manage'), '--config-file',
        conf('nova/nova.conf'), 'cell_v2', 'discover_hosts')
    say('%d fake compute hosts are up' % count)


def fake_computes_started():
    pid = alive(FAKE_COMPUTES)
    with open(os.path.join(LOG, FAKE_COMPUTES + '.log')) as f:
        return pid and any(' %d INFO fake_computes ' % pid in line
                           for line in f)


def remove_fake_computes():
    """Stop the fake compute hosts and delete them from Nova.

    Their servers must be gone first: Nova keeps a service that hosts any.
    """
    stop(FAKE_COMPUTES)
    ids = [str(s['ID']) for s in nova_compute_services(FAKE_PREFIX)]
    if ids:
        openstack('compute', 'service', 'delete', *ids)
    say('%d fake compute hosts removed' % len(ids))


def start_agent(node):
    """watcher-cams-agent of ``node``, inside its libvirtd's namespace."""
    daemon('watcher-cams-agent-' + node, [
        os.path.join(BIN, 'watcher-cams-agent'), '--config-file',
        conf('watcher-cams/agent-%s.conf' % node)], namespace_of=node)


def prometheus_server():
    """Prometheus on PROMETHEUS_PORT, scraping both agents every 5 s."""
    workdir = os.path.join(DATA, 'prometheus')
    os.makedirs(workdir, exist_ok=True)
    daemon('prometheus', lab_prometheus.command(
        workdir, ['127.0.0.1:%d' % METRICS_PORTS[n] for n, _, _ in COMPUTES],
        PROMETHEUS_PORT, interval_s=5))
    wait('prometheus', lambda: lab_prometheus.ready(PROMETHEUS))
    say('prometheus is up at %s' % PROMETHEUS)


def watcher_and_agents():
    watcher_conf = conf('watcher/watcher.conf')
    run(os.path.join(BIN, 'watcher-db-manage'), '--config-file',
        watcher_conf, 'upgrade')
    uwsgi('watcher-api', 9322, 'watcher.wsgi.api:application',
          {'UWSGI_PYARGV': '--config-file %s' % watcher_conf})
    for service in ('decision-engine', 'applier'):
        daemon('watcher-' + service, [
            os.path.join(BIN, 'watcher-' + service), '--config-file',
            watcher_conf])
    for node, _, _ in COMPUTES:
        start_agent(node)
    uwsgi('watcher-cams-api', 9330, 'watcher_cams.api.wsgi:application',
          {'WATCHER_CAMS_API_CONFIG': conf('watcher-cams/api.conf')})
    wait('watcher-api', lambda: http_up('http://127.0.0.1:9322/'))
    wait('watcher-cams-api', lambda: http_up('http://127.0.0.1:9330/'))
    say('watcher, watcher-cams-api and the agents are up')


def horizon():
    """The dashboard, with the project's panel enabled, on port 8080.

    Horizon reads its settings from its own tree (openstack_dashboard/
    local), as DevStack sets it up: the harness owns this venv. The static
    files are collected and compressed once per Horizon version (about a
    minute), since the panel ships none of its own.
    """
    python = os.path.join(BIN, 'python')
    dash = run(python, '-c', 'import os, openstack_dashboard; print('
               'os.path.dirname(openstack_dashboard.__file__))').strip()
    version = run(python, '-c', 'import importlib.metadata as m; '
                  'print(m.version("horizon"))').strip()
    with open(os.path.join(dash, 'local', 'local_settings.py'), 'w') as f:
        f.write(HORIZON_SETTINGS.format(
            keystone=KEYSTONE, static=HORIZON_STATIC,
            # A new key each time: sessions do not outlive the cloud.
            secret=secrets.token_urlsafe(32)))
    enabled = '_2290_admin_watcher_cams.py'
    shutil.copy(os.path.join(TOP, 'watcher_cams_dashboard', 'enabled',
                             enabled),
                os.path.join(dash, 'local', 'enabled', enabled))
    stamp = os.path.join(HORIZON_STATIC, '.horizon-version')
    if not os.path.exists(stamp) or open(stamp).read() != version:
        shutil.rmtree(HORIZON_STATIC, ignore_errors=True)
        env = {'DJANGO_SETTINGS_MODULE': 'openstack_dashboard.settings'}
        run(python, '-m', 'django', 'collectstatic', '--noinput', env=env)
        run(python, '-m', 'django', 'compress', '--force', env=env)
        with open(stamp, 'w') as f:
            f.write(version)
    uwsgi('horizon', 8080, 'openstack_dashboard.wsgi:application', {},
          ['--static-map', '/static=' + HORIZON_STATIC])
    wait('horizon', lambda: http_up(HORIZON + '/auth/login/'), timeout=180)
    say('horizon is up at %s with the watcher-cams panel' % HORIZON)


HORIZON_SETTINGS = """# Written by tools/aio/aio.py for the all-in-one cloud.
DEBUG = False
ALLOWED_HOSTS = ['127.0.0.1', 'localhost']
SECRET_KEY = '{secret}'
OPENSTACK_HOST = '127.0.0.1'
OPENSTACK_KEYSTONE_URL = '{keystone}'
OPENSTACK_KEYSTONE_DEFAULT_ROLE = 'member'
STATIC_ROOT = '{static}'
COMPRESS_OFFLINE = True
CACHES = {{'default': {{
    'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}}}}
SESSION_ENGINE = 'django.contrib.sessions.backends.signed_cookies'
# A host's page waits this long for watcher-cams-api (which waits up to
# its report_timeout, 20 s here, for an agent).
WATCHER_CAMS_TIMEOUT = 30
"""


def images():
    def create(*args):
        return openstack('image', 'create', '--public', '-f', 'value', '-c',
                         'id', *args).strip()
    kernel = create('--disk-format', 'aki', '--container-format', 'aki',
                    '--file', os.path.join(GUEST, 'vmlinuz'), 'cams-kernel')
    ramdisk = create('--disk-format', 'ari', '--container-format', 'ari',
                     '--file', os.path.join(GUEST, 'initrd.gz'),
                     'cams-ramdisk')
    root = os.path.join(DATA, 'root-1m.img')
    with open(root, 'wb') as f:
        f.truncate(1 << 20)
    create('--disk-format', 'ami', '--container-format', 'ami', '--file',
           root, '--property', 'kernel_id=' + kernel, '--property',
           'ramdisk_id=' + ramdisk, '--property', 'hw_qemu_guest_agent=yes',
           '--property', 'os_command_line=console=ttyS0 quiet psi=1',
           'cams-tiny')
    openstack('flavor', 'create', '--vcpus', '1', '--ram', '512', '--disk',
              '1', 'cams.tiny')
    say('image cams-tiny and flavor cams.tiny are ready')


def prepare():
    """Install what ``up`` needs; no service is started or stopped."""
    host_packages()
    venv()
    say('the host packages and the venv are ready')


def cloud_ports():
    """Every TCP port on 127.0.0.1 a service of this cloud listens on."""
    return sorted({urllib.parse.urlsplit(url).port
                   for url in (KEYSTONE, HORIZON, PROMETHEUS)}
                  | {int(p.split('/')[0]) for _, p in SERVICES.values()}
                  | {port for _, port, _ in COMPUTES}
                  | set(METRICS_PORTS.values()))


def held_ports():
    """The cloud's ports something still listens on after ``down``.

    The pid files are per checkout (``RUN``): a cloud another checkout
    started is invisible to ``down`` here, and starting a second set of
    services beside it fails much later with errors that do not say why.
    """
    held = []
    for port in cloud_ports():
        with contextlib.closing(socket.socket()) as probe:
            probe.settimeout(2.0)
            if probe.connect_ex(('127.0.0.1', port)) == 0:
                held.append(port)
    return held


def up():
    host_packages()
    down(quiet=True)
    held = held_ports()
    if held:
        raise RuntimeError(
            'ports %s are in use by services this checkout did not start '
            '(pid files in %s): another all-in-one cloud, from another '
            'checkout? Run tools/aio/aio.py down there, or stop what '
            'listens (ss -ltnp)' % (', '.join(map(str, held)), RUN))
    for d in (RUN, LOG, ETC):
        os.makedirs(d, exist_ok=True)
    shutil.rmtree(DATA, ignore_errors=True)
    for d in ('keystone', 'glance/images', 'glance/staging', 'glance/tasks',
              'nova/instances', 'nova/locks', 'neutron', 'watcher'):
        os.makedirs(os.path.join(DATA, d))
    os.chmod(DATA, 0o755)
    venv()
    say('the venv is ready')
    mariadb()
    rabbitmq()
    say('MariaDB and RabbitMQ are ready')
    write_configs()
    keystone()
    placement_glance_neutron()
    nova()
    watcher_and_agents()
    prometheus_server()
    horizon()
    images()
    with open(os.path.join(AIO, 'admin-openrc'), 'w') as f:
        f.write(exports())
        f.write('export PATH=%s:$PATH\n' % BIN)
    say('all up; source %s/admin-openrc to use it' % AIO)


SERVICE_NAMES = (
    ['keystone', 'placement', 'glance-api', 'neutron-api', 'nova-api',
     'nova-conductor', 'nova-scheduler']
    + ['libvirtd-%s' % n for n, _, _ in COMPUTES]
    + ['nova-compute-%s' % n for n, _, _ in COMPUTES]
    + ['watcher-api', 'watcher-decision-engine', 'watcher-applier']
    + ['watcher-cams-agent-%s' % n for n, _, _ in COMPUTES]
    + ['watcher-cams-api', 'prometheus', 'horizon'])


def status():
    bad = 0
    for name in SERVICE_NAMES:
        pid = alive(name)
        print('%-28s %s' % (name, 'running (pid %d)' % pid if pid
                            else 'STOPPED'))
        bad += not pid
    return 1 if bad else 0


def down(quiet=False):
    for node, _, _ in COMPUTES:
        if os.path.exists(libvirt_socket(node)) and alive('libvirtd-' + node):
            uri = libvirt_uri(node)
            names = subprocess.run(['virsh', '-c', uri, 'list', '--name'],
                                   capture_output=True, text=True).stdout
            for name in names.split():
                subprocess.run(['virsh', '-c', uri, 'destroy', name],
                               capture_output=True)
    running = [name for name in SERVICE_NAMES if alive(name)]
    if running and not quiet:
        say('stopping %s' % ', '.join(running))
    stop(*running, FAKE_COMPUTES)
    for node, _, _ in COMPUTES:
        for helper in ('virtlogd', 'libvirtd'):
            path = os.path.join(libvirt_dir(node), helper + '.pid')
            try:
                with open(path) as f:
                    os.kill(int(f.read()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
    # privsep helpers detach from the services that started them.
    subprocess.run(['pkill', '-f', 'privsep-helper --config-file ' + ETC],
                   capture_output=True)
    return 0


def tempest_conf():
    """tempest.conf for the cloud: admin, no networks, the plugin's node."""
    def resource_id(kind, name):
        return openstack(kind, 'show', '-f', 'value', '-c', 'id',
                         name).strip()
    return {
        'DEFAULT': {'log_file': os.path.join(TEMPEST, 'tempest.log')},
        'auth': {'admin_username': 'admin', 'admin_password': PASSWORD,
                 'admin_project_name': 'admin',
                 'admin_domain_name': 'Default',
                 'use_dynamic_credentials': 'true',
                 'create_isolated_networks': 'false'},
        'identity': {'uri_v3': KEYSTONE, 'auth_version': 'v3',
                     'region': 'RegionOne'},
        'identity-feature-enabled': {'api_v2': 'false'},
        'compute': {'image_ref': resource_id('image', 'cams-tiny'),
                    'flavor_ref': resource_id('flavor', 'cams.tiny')},
        'service_available': {'watcher_cams': 'true', 'nova': 'true',
                              'glance': 'true', 'neutron': 'false',
                              'cinder': 'false', 'swift': 'false'},
        'watcher_cams': {'compute_host': COMPUTES[0][0],
                         'libvirt_uri': libvirt_uri(COMPUTES[0][0])},
    }


def tempest(regex='watcher_cams_tempest_plugin'):
    shutil.rmtree(TEMPEST, ignore_errors=True)
    # A workspace registry of its own: ~/.tempest's refuses a reused name.
    run(os.path.join(BIN, 'tempest'), 'init', '--workspace-path',
        TEMPEST + '-workspaces.yaml', '--name',
        'cams-aio-%d' % os.getpid(), TEMPEST)
    deploy.write(os.path.join(TEMPEST, 'etc', 'tempest.conf'),
                 tempest_conf())
    env = dict(os.environ, PATH=path(), PYTHONWARNINGS='ignore')
    with ksm_tuning.fast():
        returncode = subprocess.run(
            [os.path.join(BIN, 'tempest'), 'run', '--serial', '--regex',
             regex], cwd=TEMPEST, env=env).returncode
    if returncode:
        # Last, so the tail a CI report keeps names each failed test and
        # its traceback rather than the cleanup log of the last test run.
        print('== failed tempest tests', flush=True)
        subprocess.run([os.path.join(BIN, 'stestr'), 'failing'],
                       cwd=TEMPEST, env=env)
    return returncode


def exports():
    """Shell exports for the CLI and the cloud lab (cmp-a as its node)."""
    lines = dict(admin_env(), CAMS_LAB_HOST='cmp-a',
                 CAMS_LAB_LIBVIRT_URI=libvirt_uri('cmp-a'))
    return ''.join("export %s='%s'\n" % kv for kv in sorted(lines.items()))


def openrc():
    print(exports(), end='')


def main(argv):
    commands = {'prepare': prepare, 'up': up, 'down': down,
                'status': status, 'openrc': openrc, 'tempest': tempest,
                'fake-computes': fake_computes,
                'remove-fake-computes': remove_fake_computes}
    if not argv or argv[0] not in commands or len(argv) > (
            2 if argv[0] in ('tempest', 'fake-computes') else 1):
        print(__doc__)
        return 2
    return commands[argv[0]](*argv[1:]) or 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
