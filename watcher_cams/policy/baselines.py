"""What the methods are compared against.

- static: every guest gets an equal part of what the host may promise
  (at most its flavor memory), as with fixed flavors on a full host;
- SMS (the CAMS paper's simple memory scheduler): a global LRU gives each
  guest memory in proportion to its access rate, so each guest ends with
  ``total * rate / sum(rates)``. Access rates are inputs: the simulator
  knows them; an unmodified guest does not expose them.
"""

from watcher_cams.policy import guards
from watcher_cams.policy import model


def _split(host, cfg, weights, label):
    guests = sorted((g for g in host.guests if g.has_guest_counters),
                    key=lambda g: g.uuid)
    total = min(guards.capacity_mb(host, cfg),
                sum(g.actual_mb for g in guests))
    weight_sum = sum(weights.get(g.uuid, 0.0) for g in guests)
    proposals = {}
    for g in guests:
        share = (weights.get(g.uuid, 0.0) / weight_sum if weight_sum
                 else 1.0 / len(guests))
        proposals[g.uuid] = (int(total * share), '%s: %.0f%% of %d MiB'
                             % (label, share * 100, total))
    return model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))


def static_split(host: model.HostView, cfg: guards.GuardConfig):
    return _split(host, cfg, {}, 'static')


def sms(host: model.HostView, cfg: guards.GuardConfig, access_rates):
    """``access_rates``: {uuid: accesses per second}, non-negative."""
    if any(r < 0 for r in access_rates.values()):
        raise ValueError('access rates must be non-negative')
    return _split(host, cfg, dict(access_rates), 'sms')
