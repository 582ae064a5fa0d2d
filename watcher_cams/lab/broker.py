"""A private RabbitMQ node for benchmarks: its own name, ports and files.

bench-cloud puts thousands of queues and hundreds of megabytes through a
broker. On a machine that also runs the all-in-one cloud or the functional
tests, that must not be their broker: this node runs from a temporary
directory, listens on free ports, loads no plugin (so it takes no port of
another node's management plugin), and is stopped and removed afterwards.
"""

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

NODE_PREFIX = 'cams-bench'
# rabbitmq-server started by root runs the node as this user.
BROKER_USER = 'rabbitmq'


class BrokerError(RuntimeError):
    """The private RabbitMQ node could not be started."""


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _port_open(port):
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(('127.0.0.1', port)) == 0


def _give_to_broker_user(path):
    """Let the node, run as ``rabbitmq`` when started by root, write here."""
    if os.geteuid() != 0:
        return
    try:
        user = pwd.getpwnam(BROKER_USER)
    except KeyError:
        return
    os.chmod(path, 0o755)
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.chown(name, user.pw_uid, user.pw_gid)


def _environment(workdir, node, port):
    paths = {name: os.path.join(workdir, name)
             for name in ('mnesia', 'log', 'enabled_plugins', 'pid')}
    os.makedirs(paths['mnesia'])
    os.makedirs(paths['log'])
    with open(paths['enabled_plugins'], 'w') as f:
        f.write('[].\n')
    return dict(os.environ, RABBITMQ_NODENAME=node,
                RABBITMQ_NODE_PORT=str(port),
                RABBITMQ_DIST_PORT=str(_free_port()),
                RABBITMQ_MNESIA_BASE=paths['mnesia'],
                RABBITMQ_LOG_BASE=paths['log'],
                RABBITMQ_ENABLED_PLUGINS_FILE=paths['enabled_plugins'],
                RABBITMQ_PID_FILE=paths['pid'])


def _wait_listening(proc, port, timeout, log_path):
    deadline = time.monotonic() + timeout
    while not _port_open(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            with open(log_path, errors='replace') as f:
                tail = f.read()[-2000:]
            raise BrokerError('the private RabbitMQ node did not start '
                              '(%s):\n%s' % ('exited' if proc.poll()
                                             is not None else 'timed out',
                                             tail))
        time.sleep(0.2)


def _stop(proc, env, node):
    subprocess.run(['rabbitmqctl', '-n', node, 'stop'], env=env,
                   capture_output=True, timeout=120, check=False)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def private_rabbitmq(start_timeout=90):
    """Yields the transport URL of a RabbitMQ node of its own."""
    server = shutil.which('rabbitmq-server')
    if server is None:
        raise BrokerError('rabbitmq-server is not installed '
                          '(tools/host-setup.sh test installs it)')
    workdir = tempfile.mkdtemp(prefix='cams-rabbitmq-')
    port = _free_port()
    node = '%s-%d@localhost' % (NODE_PREFIX, os.getpid())
    env = _environment(workdir, node, port)
    _give_to_broker_user(workdir)
    log_path = os.path.join(workdir, 'server.out')
    try:
        with open(log_path, 'w') as log_file:
            proc = subprocess.Popen([server], env=env, stdout=log_file,
                                    stderr=subprocess.STDOUT,
                                    start_new_session=True)
        try:
            _wait_listening(proc, port, start_timeout, log_path)
            yield 'rabbit://guest:guest@127.0.0.1:%d/' % port
        finally:
            _stop(proc, env, node)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
