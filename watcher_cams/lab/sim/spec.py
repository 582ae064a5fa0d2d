"""Scenario specifications: one dict format for built-ins and user files.

A spec (JSON or YAML) describes one host and its guests::

    name: two-readers
    block_kb: 8192          # simulated block (granularity of the caches)
    cycle_s: 20             # one audit cycle
    rate_window_s: 20       # the agent's min_rate_interval (default cycle_s)
    collect_at_s: 0         # the agent's background collection, this many
                            # seconds into each cycle (0: none, as in the
                            # lab; a cloud's agent collects on its own timer)
    duration_s: 3600
    warmup_s: 1200          # not measured
    host: {ram_mb: 8192, reserved_mb: 512, host_cache_mb: 0,
           shadow_factor: 1}  # guests keep shadow entries for this many
                              # cache sizes of evictions
    ksm: {ramp_s: 300}      # optional: content in shared_mb gets merged
    guests:
      - name: vm1
        max_mb: 7168
        size_mb: 3840       # the static size every run starts from
        base_mb: 3840       # optional: size without any KSM bonus
        shared_mb: 0        # content identical to other guests'
        agent: true         # false: no guest agent, host-side signals only
        claims: honest      # forged: its counters say every read is a
                            # refault its active list would keep (PSI 100)
        phases:
          - {pattern: hot_cold, range_mb: 10240, rate_mb_s: 3.1,
             committed_mb: 384, used_mb: 256, duration_s: 600}
    strategies: [static, sms, cams-paper, utility, oracle]

Ranges and rates are MiB and MiB/s of application reads; the simulator turns
them into blocks, so a coarser ``block_kb`` scales a scenario down without
changing its memory sizes, rates or the policies' parameters.
"""

import json
import os
import uuid as uuid_mod

import yaml

from watcher_cams.lab.sim import cache as cache_mod
from watcher_cams.lab.sim import host as host_mod
from watcher_cams.lab.sim import workloads

KB = 1024
LABELS = ('static', 'sms', 'cams-paper', 'margin-paper', 'ksm-paper',
          'utility', 'oracle', 'oracle-replay')
MAX_BLOCKS = 1 << 24


class ScenarioError(ValueError):
    """A scenario that cannot be run, with the reason."""


def load_file(path):
    """A spec from a JSON or YAML file."""
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as exc:
        raise ScenarioError('cannot read %s: %s' % (path, exc.strerror))
    try:
        if os.path.splitext(path)[1].lower() == '.json':
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ScenarioError('%s is not valid JSON/YAML: %s' % (path, exc))
    if not isinstance(data, dict):
        raise ScenarioError('%s: a scenario is a mapping' % path)
    data.setdefault('name', os.path.splitext(os.path.basename(path))[0])
    return validate(data)


def _number(data, key, what, default=None, low=0.0, integer=False):
    value = data.get(key, default)
    if value is None:
        raise ScenarioError('%s: %s is required' % (what, key))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError('%s: %s must be a number, got %r'
                            % (what, key, value))
    if integer and int(value) != value:
        raise ScenarioError('%s: %s must be an integer' % (what, key))
    if value < low or value != value or value == float('inf'):
        raise ScenarioError('%s: %s must be >= %s, got %r'
                            % (what, key, low, value))
    return int(value) if integer else float(value)


def validate(spec):
    """Check a spec and fill defaults; returns a new dict."""
    if not isinstance(spec, dict):
        raise ScenarioError('a scenario is a mapping')
    out = dict(spec)
    out['name'] = str(spec.get('name') or 'scenario')
    what = 'scenario %s' % out['name']
    out.update(_timing(spec, what))
    out['host'] = _host(spec.get('host'), what)
    ksm = spec.get('ksm')
    if ksm is not None:
        if not isinstance(ksm, dict):
            raise ScenarioError('%s: ksm must be a mapping' % what)
        out['ksm'] = {'ramp_s': _number(ksm, 'ramp_s', what + ' ksm', 300)}
    out['guests'] = _guests(spec.get('guests'), out, what)
    out['strategies'] = _strategies(spec.get('strategies', list(LABELS)),
                                    what)
    return out


def _timing(spec, what):
    """Block size, audit cycle, duration, warm-up and sampling windows."""
    t = {'block_kb': _number(spec, 'block_kb', what, 4096, 4, True)}
    if t['block_kb'] % 4:
        raise ScenarioError('%s: block_kb must be a multiple of 4' % what)
    t['cycle_s'] = _number(spec, 'cycle_s', what, 10, 0.1)
    t['duration_s'] = _number(spec, 'duration_s', what, None, 1)
    t['warmup_s'] = _number(spec, 'warmup_s', what, 0)
    t['rate_window_s'] = _number(spec, 'rate_window_s', what,
                                 t['cycle_s'], 0)
    t['collect_at_s'] = _number(spec, 'collect_at_s', what, 0, 0)
    if t['collect_at_s'] >= t['cycle_s']:
        raise ScenarioError('%s: collect_at_s must be below cycle_s' % what)
    if t['warmup_s'] >= t['duration_s']:
        raise ScenarioError('%s: warmup_s must be below duration_s' % what)
    if t['duration_s'] / t['cycle_s'] > 100000:
        raise ScenarioError('%s: more than 100000 cycles' % what)
    return t


def _host(host, what):
    if not isinstance(host, dict):
        raise ScenarioError('%s: host must be a mapping' % what)
    what += ' host'
    return {
        'ram_mb': _number(host, 'ram_mb', what, None, 1, True),
        'reserved_mb': _number(host, 'reserved_mb', what, 512, 0, True),
        'host_cache_mb': _number(host, 'host_cache_mb', what, 0, 0, True),
        'disk_mb_s': _number(host, 'disk_mb_s', what, 200.0, 1),
        'shadow_factor': _number(host, 'shadow_factor', what, 1.0, 0.1),
    }


def _guests(guests, out, what):
    """The guests, named uniquely, that fit the host at their start."""
    if not isinstance(guests, list) or not guests:
        raise ScenarioError('%s: guests must be a non-empty list' % what)
    checked = [_guest(g, i, out) for i, g in enumerate(guests)]
    names = [g['name'] for g in checked]
    if len(set(names)) != len(names):
        raise ScenarioError('%s: guest names must be unique' % what)
    total = sum(g['size_mb'] for g in checked)
    limit = out['host']['ram_mb'] - out['host']['reserved_mb']
    if total > limit:
        raise ScenarioError('%s: guests start with %d MiB, the host has %d'
                            % (what, total, limit))
    return checked


def _strategies(strategies, what):
    if not isinstance(strategies, list) or not strategies:
        raise ScenarioError('%s: strategies must be a non-empty list' % what)
    unknown = [s for s in strategies if s not in LABELS]
    if unknown:
        raise ScenarioError('%s: unknown strategies %s (known: %s)'
                            % (what, ', '.join(map(str, unknown)),
                               ', '.join(LABELS)))
    return list(strategies)


def _guest(g, index, spec):
    if not isinstance(g, dict):
        raise ScenarioError('guest %d must be a mapping' % index)
    name = str(g.get('name') or 'vm%d' % (index + 1))
    what = 'guest %s' % name
    out = {'name': name}
    out['max_mb'] = _number(g, 'max_mb', what, None, 64, True)
    out['size_mb'] = _number(g, 'size_mb', what, out['max_mb'], 64, True)
    if out['size_mb'] > out['max_mb']:
        raise ScenarioError('%s: size_mb is above max_mb' % what)
    if g.get('base_mb') is not None:
        out['base_mb'] = _number(g, 'base_mb', what, None, 64, True)
    out['shared_mb'] = _number(g, 'shared_mb', what, 0, 0, True)
    out['seed'] = _number(g, 'seed', what, index + 1, 0, True)
    out.update(_reporting(g, what))
    phases = g.get('phases')
    if not isinstance(phases, list) or not phases:
        raise ScenarioError('%s: phases must be a non-empty list' % what)
    out['phases'] = []
    for i, p in enumerate(phases):
        if not isinstance(p, dict):
            raise ScenarioError('%s phase %d must be a mapping' % (what, i))
        pw = '%s phase %d' % (what, i)
        phase = {
            'pattern': str(p.get('pattern', 'idle')),
            'range_mb': _number(p, 'range_mb', pw, 0, 0),
            'rate_mb_s': _number(p, 'rate_mb_s', pw, 0, 0),
            'committed_mb': _number(p, 'committed_mb', pw, 256, 0, True),
            'used_mb': (_number(p, 'used_mb', pw, None, 0, True)
                        if p.get('used_mb') is not None else None),
            'duration_s': (float('inf')
                           if p.get('duration_s') in (None, float('inf'))
                           else _number(p, 'duration_s', pw, None, 1)),
            'hot_fraction': _number(p, 'hot_fraction', pw, 0.2, 0),
            'hot_share': _number(p, 'hot_share', pw, 0.8, 0),
            'offset_mb': _number(p, 'offset_mb', pw, 0, 0),
        }
        if phase['range_mb'] * KB / spec['block_kb'] > MAX_BLOCKS:
            raise ScenarioError('%s: range is more than %d blocks; use a '
                                'larger block_kb' % (pw, MAX_BLOCKS))
        if phase['committed_mb'] >= out['max_mb']:
            raise ScenarioError('%s: committed_mb must be below max_mb' % pw)
        try:
            _phase(phase, spec['block_kb'])
        except workloads.WorkloadError as exc:
            raise ScenarioError('%s: %s' % (pw, exc))
        out['phases'].append(phase)
    return out


def _reporting(g, what):
    """How guest ``g`` reports: its agent, and its claims (host.CLAIMS)."""
    agent, claims = g.get('agent', True), g.get('claims', host_mod.HONEST)
    if not isinstance(agent, bool):
        raise ScenarioError('%s: agent must be true or false' % what)
    if claims not in host_mod.CLAIMS:
        raise ScenarioError('%s: claims must be one of %s'
                            % (what, ', '.join(host_mod.CLAIMS)))
    return {'agent': agent, 'claims': claims}


def _phase(p, block_kb):
    blocks_per_mb = KB / block_kb
    rng = int(round(p['range_mb'] * blocks_per_mb))
    if p['pattern'] != 'idle' and p['range_mb'] > 0:
        rng = max(1, rng)
    return workloads.Phase(
        pattern=p['pattern'], range_blocks=rng,
        rate=p['rate_mb_s'] * blocks_per_mb, duration_s=p['duration_s'],
        committed_mb=p['committed_mb'], used_mb=p['used_mb'],
        hot_fraction=p['hot_fraction'],
        hot_share=p['hot_share'],
        offset=int(p['offset_mb'] * blocks_per_mb))


def guest_uuid(spec_name, guest_name):
    """A stable instance UUID for a simulated guest."""
    return str(uuid_mod.uuid5(uuid_mod.NAMESPACE_URL,
                              'watcher-cams-lab/%s/%s' % (spec_name,
                                                          guest_name)))


def build_guest(spec, g, size_mb=None, cache=None):
    phases = [_phase(p, spec['block_kb']) for p in g['phases']]
    if cache is None:
        cache = cache_mod.LinuxCache(
            0, block_gib=spec['block_kb'] / (KB * KB),
            shadow_factor=spec['host']['shadow_factor'])
    return host_mod.SimGuest(
        guest_uuid(spec['name'], g['name']), g['name'], g['max_mb'],
        g['size_mb'] if size_mb is None else size_mb,
        workloads.Workload(phases, seed=g['seed']), spec['block_kb'],
        base_mb=g.get('base_mb'), shared_mb=g['shared_mb'], cache=cache,
        agent=g.get('agent', True), claims=g.get('claims', host_mod.HONEST))


def build_host(spec, sizes=None):
    """A SimHost for ``spec``; ``sizes`` ({name: MiB}) overrides start sizes.

    The oracle's solo runs build one from a spec of one guest
    (oracle.solo_spec).
    """
    sizes = sizes or {}
    guests = [build_guest(spec, g, sizes.get(g['name']))
              for g in spec['guests']]
    h = spec['host']
    ksm = host_mod.KsmModel(spec['ksm']['ramp_s']) if spec.get('ksm') \
        else None
    return host_mod.SimHost('sim-%s' % spec['name'], h['ram_mb'], guests,
                            reserved_mb=h['reserved_mb'],
                            host_cache_mb=h['host_cache_mb'],
                            block_kb=spec['block_kb'], ksm=ksm,
                            disk_mb_s=h['disk_mb_s'],
                            rate_window_s=spec['rate_window_s'])
