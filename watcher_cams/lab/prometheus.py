"""A private Prometheus server scraping agents, and PromQL through its API.

For the functional tests, the all-in-one cloud and the dashboard's picture:
Debian's ``prometheus`` package (tools/host-setup.sh installs it), its own
port, data directory and scrape list, so a Prometheus already running on
the machine is left alone. The dashboard's queries come from
``etc/watcher-cams/grafana/watcher-cams.json``.
"""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

BINARY = 'prometheus'
JOB = 'watcher-cams'
DASHBOARD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'etc', 'watcher-cams', 'grafana',
    'watcher-cams.json')
CONFIG = """global:
  scrape_interval: {interval}s
  evaluation_interval: {interval}s
scrape_configs:
  - job_name: {job}
    static_configs:
      - targets: [{targets}]
"""


class PrometheusError(Exception):
    """Prometheus did not start, or refused a query (its message)."""


def free_port():
    """A TCP port nothing listens on now, on the loopback address."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def write_config(workdir, targets, interval_s):
    """Its configuration file under ``workdir``: scrape ``targets``."""
    path = os.path.join(workdir, 'prometheus.yml')
    with open(path, 'w') as f:
        f.write(CONFIG.format(interval=interval_s, job=JOB,
                              targets=', '.join("'%s'" % t for t in targets)))
    return path


def command(workdir, targets, port, interval_s=1):
    """The argv of a server whose files live under ``workdir``."""
    if shutil.which(BINARY) is None:
        raise PrometheusError('no %s binary: run tools/host-setup.sh '
                              '(Debian package prometheus)' % BINARY)
    return [BINARY, '--config.file',
            write_config(workdir, targets, interval_s),
            '--storage.tsdb.path', os.path.join(workdir, 'data'),
            '--web.listen-address', '127.0.0.1:%d' % port,
            '--log.level', 'warn']


def ready(url):
    try:
        with urllib.request.urlopen(url + '/-/ready', timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


class Prometheus:
    """``prometheus`` scraping ``targets`` (host:port) every ``interval_s``.

    Its files live under ``workdir``; ``close`` stops it. With ``url``
    (of a server running already) it only queries.
    """

    def __init__(self, workdir=None, targets=(), interval_s=1, url=None):
        self.process = None
        self.url = url
        if url:
            return
        port = free_port()
        self.url = 'http://127.0.0.1:%d' % port
        argv = command(workdir, targets, port, interval_s)
        self.log_path = os.path.join(workdir, 'prometheus.log')
        with open(self.log_path, 'w') as log:
            self.process = subprocess.Popen(argv, stdout=log,
                                            stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not ready(self.url):
            if self.process and self.process.poll() is not None:
                raise PrometheusError('prometheus exited: %s' % self.log())
            if time.monotonic() > deadline:
                raise PrometheusError('prometheus not ready within %.0f s'
                                      % timeout)
            time.sleep(0.5)

    def query(self, expr):
        """The instant vector (or scalar) ``expr`` gives now."""
        return self._get('query', {'query': expr})

    def _get(self, api, params):
        url = '%s/api/v1/%s?%s' % (self.url, api,
                                   urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b'{}')
        if body.get('status') != 'success':
            raise PrometheusError('%s: %s' % (params['query'],
                                              body.get('error')))
        return body['data']['result']

    def query_range(self, expr, start, end, step_s):
        """[{'metric': labels, 'values': [[t, 'v'], ...]}] of ``expr``."""
        return self._get('query_range', {'query': expr, 'start': start,
                                         'end': end, 'step': step_s})

    def value(self, expr):
        """The one value ``expr`` gives now, or None when it gives none."""
        found = self.query(expr)
        if not found:
            return None
        if len(found) > 1:
            raise PrometheusError('%s: %d series, not one'
                                  % (expr, len(found)))
        return float(found[0]['value'][1])

    def log(self):
        if self.process is None:
            return ''
        with open(self.log_path) as f:
            return f.read()[-2000:]

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def load_dashboard(path=DASHBOARD):
    with open(path) as f:
        return json.load(f)


def expression(target, host, rate_interval='1m'):
    """A dashboard target's PromQL with Grafana's variables set."""
    return target['expr'].replace('$host', host).replace(
        '$__rate_interval', rate_interval)


def dashboard_queries(path=DASHBOARD, host='', rate_interval='1m'):
    """Every PromQL expression of the Grafana dashboard, variables set."""
    dashboard = load_dashboard(path)
    found = [expression(target, host, rate_interval)
             for panel in dashboard['panels']
             for target in panel.get('targets', ())]
    for variable in dashboard['templating']['list']:
        query = variable['query']
        if query.startswith('label_values('):
            # Grafana's function: the metric's series carry the label.
            metric = query[len('label_values('):].split(',')[0]
            found.append(metric.strip())
    return found
