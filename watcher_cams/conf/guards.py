"""The guards every plan passes through (design.md, invariants).

These are operator settings, not audit parameters: whoever creates an audit
cannot loosen them.
"""

from oslo_config import cfg

from watcher_cams.policy import guards

GROUP = cfg.OptGroup(
    'watcher_cams_guards',
    title='watcher-cams guards',
    help='Safety limits applied to every memory plan, by the strategies and '
         'again by the agents.')

_DEFAULTS = guards.GuardConfig()

OPTS = [
    cfg.IntOpt('min_guest_mb', default=_DEFAULTS.min_guest_mb, min=0,
               help='No guest is ever ballooned below this size (MiB).'),
    cfg.IntOpt('floor_margin_mb', default=_DEFAULTS.floor_margin_mb, min=0,
               help='Safety margin (MiB) added to the memory a guest has '
                    'committed or uses; the sum is its floor.'),
    cfg.FloatOpt('ksm_safety_factor', default=_DEFAULTS.ksm_safety_factor,
                 min=0.0, max=1.0,
                 help='Share of the memory KSM saves now that is NOT '
                      'promised to guests, because merged pages can be '
                      'unshared at any time (0 promises all savings, 1 '
                      'none).'),
    cfg.IntOpt('max_step_mb', default=_DEFAULTS.max_step_mb, min=1,
               help='Largest change of one guest\'s memory in one audit '
                    'cycle (MiB).'),
    cfg.IntOpt('min_change_mb', default=_DEFAULTS.min_change_mb, min=0,
               help='Changes smaller than this (MiB) are not worth an '
                    'action and are dropped.'),
    cfg.IntOpt('host_reserved_mb', default=_DEFAULTS.host_reserved_mb,
               min=0,
               help='Host memory (MiB) never promised to guests; the larger '
                    'of this and Nova\'s reserved_host_memory_mb applies.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]


def guard_config(conf):
    """The policy's GuardConfig from the [watcher_cams_guards] options."""
    g = conf.watcher_cams_guards
    return guards.GuardConfig(
        min_guest_mb=g.min_guest_mb, floor_margin_mb=g.floor_margin_mb,
        ksm_safety_factor=g.ksm_safety_factor, max_step_mb=g.max_step_mb,
        min_change_mb=g.min_change_mb, host_reserved_mb=g.host_reserved_mb)
