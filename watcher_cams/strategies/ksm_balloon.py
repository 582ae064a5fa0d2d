"""Strategy ``ksm_balloon``: hand memory saved by KSM back to guests."""

from watcher_cams.policy import ksm
from watcher_cams.strategies import base


class KsmBalloon(base.MemoryStrategy):
    """KSM balloon

    *Description*

    Gives the memory that KSM saves right now (less the safety factor of
    ``[watcher_cams_guards] ksm_safety_factor``) to the guests through their
    balloons, on top of their entitled size, and takes it back when sharing
    falls. ``mode=paper`` splits it equally; ``mode=utility`` gives it where
    the guests' refault counters say it saves the most disk reads.

    *Requirements*

    KSM running on the compute nodes, watcher-cams-agent, and instances
    whose entitled (base) size is below their flavor memory.

    *Limitations*

    Only savings that exist at audit time are given; run it as a continuous
    audit so that falling savings are taken back promptly.
    """

    NAME = 'ksm_balloon'
    DISPLAY_NAME = 'KSM balloon'

    @classmethod
    def get_schema(cls):
        return {
            'type': 'object',
            'properties': {
                'mode': {'type': 'string', 'enum': [ksm.PAPER, ksm.UTILITY],
                         'default': ksm.PAPER,
                         'description': 'paper: equal shares; utility: by '
                                        'marginal value.'},
                **base.value_properties('handed out', ksm.KsmParams()),
                **base.reserve_properties(),
            },
            'additionalProperties': False,
        }

    def policy_params(self):
        return base.check_params(ksm.KsmParams, mode=self.param('mode'),
                                 granule_mb=self.param('granule_mb'),
                                 min_value=self.param('min_value'))
