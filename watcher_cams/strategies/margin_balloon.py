"""Strategy ``margin_balloon``: size guests by Committed_AS plus a margin."""

import dataclasses

from watcher_cams.policy import margin
from watcher_cams.strategies import base


class MarginBalloon(base.MemoryStrategy):
    """Margin balloon

    *Description*

    The Balloon Controller: each guest's target is its Committed_AS plus a
    margin learned per guest by a two-state (UP/DOWN) controller from its
    cache size and Active(file), with the host-capacity guard the original
    lacked. Controller state is kept by each host's agent between audits.

    *Requirements*

    watcher-cams-agent on every compute node; a continuous audit with a
    short interval (the controller advances once per audit cycle).

    *Limitations*

    Working sets that change faster than the audit interval are followed
    late.
    """

    NAME = 'margin_balloon'
    DISPLAY_NAME = 'Margin balloon'

    @classmethod
    def get_schema(cls):
        d = margin.MarginParams()
        props = {}
        for name, help_ in (
                ('up_mb', 'MiB added per consecutive UP step.'),
                ('down_mb', 'MiB removed per consecutive DOWN step.'),
                ('max_step_mb', 'Largest margin change per cycle (MiB).'),
                ('min_margin_mb', 'Smallest margin (MiB).'),
                ('initial_margin_mb', 'Margin of a guest seen first (MiB).'),
                ('change_mb', 'Cache changes above this count as changed.')):
            props[name] = {'type': 'integer', 'minimum': 0,
                           'default': getattr(d, name), 'description': help_}
        return {'type': 'object',
                'properties': dict(props, **base.reserve_properties()),
                'additionalProperties': False}

    def policy_params(self):
        names = dataclasses.fields(margin.MarginParams)
        return base.check_params(margin.MarginParams, **{
            f.name: self.param(f.name) for f in names})
