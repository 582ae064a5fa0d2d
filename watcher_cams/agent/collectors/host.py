"""The host itself: memory and last-level cache topology from sysfs.

``root`` lets the tests point these readers at a fake /proc and /sys tree,
which is how multi-socket topologies are tested on a one-socket machine.
"""

import collections
import glob
import os


def parse_cpu_list(text):
    """CPU numbers from a kernel/Nova CPU list such as '0-3,8,10-11'."""
    cpus = set()
    for part in str(text).replace(' ', '').split(','):
        if not part:
            continue
        low, sep, high = part.partition('-')
        if not low.isdigit() or (sep and not high.isdigit()):
            raise ValueError('bad CPU list entry %r' % part)
        low = int(low)
        high = int(high) if sep else low
        if high < low or high > 65535:
            raise ValueError('bad CPU range %r' % part)
        cpus.update(range(low, high + 1))
    return sorted(cpus)


def _read(path):
    with open(path) as f:
        return f.read().strip()


def meminfo_kb(root='/'):
    """Host /proc/meminfo as {key: KiB}."""
    values = {}
    with open(os.path.join(root, 'proc/meminfo')) as f:
        for line in f:
            name, _, rest = line.partition(':')
            fields = rest.split()
            if fields and fields[0].isdigit():
                values[name] = int(fields[0])
    return values


def online_cpus(root='/'):
    return parse_cpu_list(_read(os.path.join(root,
                                             'sys/devices/system/cpu/online')))


def configured_llc_domains(spec, online):
    """Domains from an operator's ``0-7,16-23;8-15,24-31``.

    Raise ValueError when a CPU is offline or named in two caches.
    """
    domains, seen = [], set()
    for n, part in enumerate(p for p in spec.split(';') if p.strip()):
        cpus = parse_cpu_list(part)
        if not cpus:
            continue
        offline = sorted(set(cpus) - set(online))
        twice = sorted(set(cpus) & seen)
        if offline or twice:
            raise ValueError('llc_cpus %r: CPUs %s' % (spec, (
                'not online: %s' % offline) if offline else (
                'in two caches: %s' % twice)))
        seen.update(cpus)
        domains.append({'name': 'LLC-cfg-%d' % n, 'socket': 0,
                        'cpus': cpus})
    return domains


def llc_domains(root='/'):
    """[{'name', 'socket', 'cpus'}] for each last-level cache.

    The last level is the highest cache level any CPU reports (L3 on most
    servers, L2 on some); CPUs sharing one cache instance are one domain.
    """
    cpu_dir = os.path.join(root, 'sys/devices/system/cpu')
    caches = {}  # (level, shared cpu list) -> socket
    for cpu in online_cpus(root):
        base = os.path.join(cpu_dir, 'cpu%d' % cpu)
        try:
            socket = int(_read(os.path.join(base,
                                            'topology/physical_package_id')))
        except (OSError, ValueError):
            socket = 0
        best = None
        for index in glob.glob(os.path.join(base, 'cache/index*')):
            try:
                if _read(os.path.join(index, 'type')) == 'Instruction':
                    continue
                level = int(_read(os.path.join(index, 'level')))
                shared = tuple(parse_cpu_list(
                    _read(os.path.join(index, 'shared_cpu_list'))))
            except (OSError, ValueError):
                continue
            if best is None or level > best[0]:
                best = (level, shared)
        if best is None:
            best = (0, (cpu,))
        caches[best] = socket
    domains = []
    per_socket = collections.Counter()
    for (level, cpus), socket in sorted(caches.items(),
                                        key=lambda kv: kv[0][1]):
        name = 'L%d-s%d-%d' % (level, socket, per_socket[socket])
        per_socket[socket] += 1
        domains.append({'name': name, 'socket': socket, 'cpus': list(cpus)})
    return domains
