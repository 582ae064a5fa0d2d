"""A tenant that forges its counters, on hosts nobody tuned for.

Everything a guest reports is its tenant's claim. Each random host
(random_hosts.spec) runs twice: its first guest a stream that no memory
saves anything for (a scan over far more data than it may ever hold),
once with honest counters and once with forged ones (sim.host.FORGED:
every read a refault its active list would keep, PSI 100, the most its
next MiB could seem worth, within what the host read for it so that the
claims check believes it). What the forger's claims may move is what the
host-measured reads justify, and a stream's reads do not fall: its
neighbours should read no more, and it should hold no more memory, than
when it tells the truth.
"""

from watcher_cams.lab.sim import host as host_mod
from watcher_cams.lab.sim import random_hosts

# The label of a point's run with forged counters.
FORGED = ' forged'
# The stream the forger runs, in both runs: MiB/s, and its range as a
# multiple of its maximum size (it never fits).
STREAM_MB_S = 4.0
STREAM_RANGE_X = 16
# Its neighbours may read this share more with its counters forged (the
# runs part where the forger's first claim is tried; a trial is measured
# and taken back) ...
NEIGHBOUR_SHARE = 0.02
# ... and it may hold this many MiB more on average (a granule).
FORGER_SLACK_MB = 64


def spec(seed, forged):
    """Random host ``seed``, its first guest a stream forging or not.

    Its name stays the host's, so that ties order alike in both runs.
    """
    host = random_hosts.spec(seed)
    first = host['guests'][0]
    used = first['phases'][0]
    stream = {'pattern': 'scan', 'rate_mb_s': STREAM_MB_S,
              'range_mb': STREAM_RANGE_X * first['max_mb'],
              'committed_mb': used.get('committed_mb', 256),
              'used_mb': used.get('used_mb')}
    host['guests'][0] = dict(
        first, phases=[stream],
        claims=host_mod.FORGED if forged else host_mod.HONEST)
    return host


def forger(host_spec):
    """The name of the guest that may forge its claims."""
    return host_spec['guests'][0]['name']


def figures(by, point, name):
    """(neighbours' GiB honest, forged, forger's MiB honest, forged).

    ``by``: utility's rows by (point, strategy); ``name``: the forger.
    """
    honest, forged = (by[(p, 'utility')]['guests']
                      for p in (point, point + FORGED))

    def neighbours(guests):
        return sum(g['disk_read_bytes'] for n, g in guests.items()
                   if n != name) / 1024.0 ** 3
    return (neighbours(honest), neighbours(forged),
            honest[name]['mean_size_mb'], forged[name]['mean_size_mb'])


def missed(fig):
    """Whether figures ``fig`` miss either target."""
    return (fig[1] > fig[0] * (1 + NEIGHBOUR_SHARE) + 1e-9
            or fig[3] > fig[2] + FORGER_SLACK_MB)
