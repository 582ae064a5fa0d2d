"""The settings a deployment of watcher-cams writes into each service.

One place for them, used by the all-in-one harness (tools/aio) and meant for
the DevStack plugin, so the two cannot drift. Each function returns
``{section: {option: value}}`` for one config file; ``iniset_lines`` turns
that into ``FILE SECTION OPTION VALUE`` lines a shell script can apply with
its own iniset.
"""

import configparser
import os

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
          reserved_host_memory_mb=512, llc_cpus=None):
    """watcher-cams-agent.conf of the compute node Nova calls ``host``.

    ``llc_cpus`` overrides the cache topology read from sysfs (see the
    option's help).
    """
    compute = {'host': host, 'connection_uri': connection_uri,
               'state_dir': state_dir,
               'reserved_host_memory_mb': str(reserved_host_memory_mb)}
    if llc_cpus:
        compute['llc_cpus'] = llc_cpus
    return {'DEFAULT': {'transport_url': transport_url},
            'watcher_cams_compute': compute}


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
