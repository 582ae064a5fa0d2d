"""The settings a deployment of watcher-cams writes into each service.

One place for them, used by the all-in-one harness (tools/aio) and the
DevStack plugin (devstack/plugin.sh, through ``python -m
watcher_cams.deploy``), so the two cannot drift. Each function returns
``{section: {option: value}}`` for one config file; ``iniset_lines`` turns
that into ``FILE SECTION OPTION VALUE`` lines a shell script can apply with
its own iniset.
"""

import argparse
import configparser
import os
import sys

WATCHER_CONF_D = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'etc', 'watcher-cams', 'watcher.conf.d', '50-watcher-cams.conf')


def watcher():
    """What watcher-decision-engine and watcher-applier need for the plugin.

    The shipped etc/watcher-cams/watcher.conf.d file is the source: planner
    weights and parallelization for the new actions, rollback on failure.
    """
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(WATCHER_CONF_D)
    return {s: dict(parser[s]) for s in parser.sections()}


def nova_compute(state_dir, driver_extension=True):
    """nova.conf of a compute node; the driver extension is optional."""
    settings = {'watcher_cams_nova': {'agent_state_dir': state_dir}}
    if driver_extension:
        settings['DEFAULT'] = {
            'compute_driver': 'watcher_cams.CamsLibvirtDriver'}
    return settings


def agent(host, connection_uri, state_dir, transport_url,
          reserved_host_memory_mb=512, llc_cpus=None, metrics=None):
    """watcher-cams-agent.conf of the compute node Nova calls ``host``.

    ``llc_cpus`` overrides the cache topology read from sysfs (see the
    option's help); ``metrics`` = (address, port) serves the Prometheus
    page (doc/source/prometheus.rst).
    """
    compute = {'host': host, 'connection_uri': connection_uri,
               'state_dir': state_dir,
               'reserved_host_memory_mb': str(reserved_host_memory_mb)}
    if llc_cpus:
        compute['llc_cpus'] = llc_cpus
    settings = {'DEFAULT': {'transport_url': transport_url},
                'watcher_cams_compute': compute}
    if metrics:
        settings['watcher_cams_prometheus'] = {
            'listen_address': metrics[0], 'port': str(metrics[1])}
    return settings


def iniset_lines(path, settings):
    """``PATH SECTION OPTION VALUE`` lines, one per setting."""
    return ['%s %s %s %s' % (path, section, option, value)
            for section, options in settings.items()
            for option, value in options.items()]


def merge(*parts):
    """One settings dict from several; later parts win."""
    merged = {}
    for part in parts:
        for section, options in part.items():
            merged.setdefault(section, {}).update(options)
    return merged


def write(path, settings):
    """Write ``settings`` as an ini file (whole file, atomically)."""
    lines = []
    for section, options in settings.items():
        lines.append('[%s]' % section)
        lines.extend('%s = %s' % (k, v) for k, v in options.items())
        lines.append('')
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write('\n'.join(lines))
    os.replace(tmp, path)


def main(argv=None):
    """Command line for shell installers (the DevStack plugin).

    ``watcher-conf PATH`` writes Watcher's drop-in file (for a
    ``watcher.conf.d`` directory); ``agent-conf PATH ...`` writes the
    agent's config file; ``nova-compute ...`` prints iniset lines for
    nova-compute's config file.
    """
    parser = argparse.ArgumentParser(
        prog='python -m watcher_cams.deploy',
        description='Write or print the settings watcher-cams needs.')
    sub = parser.add_subparsers(dest='command', required=True)
    w = sub.add_parser('watcher-conf', help='write Watcher\'s drop-in file')
    w.add_argument('path')
    a = sub.add_parser('agent-conf', help='write the agent\'s config file')
    a.add_argument('path')
    a.add_argument('--host', required=True,
                   help='the compute node\'s name in Nova')
    a.add_argument('--connection-uri', default='qemu:///system')
    a.add_argument('--state-dir', required=True)
    a.add_argument('--transport-url', required=True)
    a.add_argument('--reserved-host-memory-mb', type=int, default=512)
    a.add_argument('--llc-cpus', default=None)
    a.add_argument('--log-file', default=None)
    a.add_argument('--metrics-port', type=int, default=0,
                   help='serve Prometheus metrics on this port (0: off)')
    a.add_argument('--metrics-address', default='127.0.0.1')
    n = sub.add_parser('nova-compute',
                       help='print iniset lines for nova-compute\'s file')
    n.add_argument('path')
    n.add_argument('--state-dir', required=True)
    n.add_argument('--driver-extension', action='store_true',
                   help='also switch compute_driver to the extension')
    args = parser.parse_args(argv)
    if args.command == 'watcher-conf':
        write(args.path, watcher())
    elif args.command == 'agent-conf':
        settings = agent(args.host, args.connection_uri, args.state_dir,
                         args.transport_url, args.reserved_host_memory_mb,
                         args.llc_cpus,
                         (args.metrics_address, args.metrics_port)
                         if args.metrics_port else None)
        if args.log_file:
            settings['DEFAULT']['log_file'] = args.log_file
        write(args.path, settings)
    else:
        settings = nova_compute(args.state_dir, args.driver_extension)
        sys.stdout.write(''.join(line + '\n' for line in
                                 iniset_lines(args.path, settings)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
