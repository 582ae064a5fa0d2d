"""The lab's strategy labels, mapped onto the policy core.

Each label runs the very functions the Watcher strategies have the agents
(or, for older agents, the decision engine) run through
:mod:`watcher_cams.policy.planning` (the strategies only add Watcher's
model and actions around them), on the HostView parsed from the simulated
agent report by :func:`watcher_cams.policy.report.parse_host`, with the
strategies' default parameters:

- ``static``: sizes never change (every run starts from the static split);
- ``sms``: :func:`~watcher_cams.policy.baselines.sms`, memory in proportion
  to access rates (the simulator knows them; real guests do not);
- ``cams-paper``: ``cache_aware_balloon`` with ``mode=paper``;
- ``margin-paper``: ``margin_balloon`` (its controller state goes back to
  the guest's report, as the agent persists it);
- ``ksm-paper``: ``ksm_balloon`` with ``mode=paper``;
- ``utility``: ``cache_aware_balloon`` with ``mode=utility``, or
  ``ksm_balloon`` with ``mode=utility`` on hosts whose scenario hands out
  KSM savings (the two would undo each other's targets).
"""

from watcher_cams.policy import baselines
from watcher_cams.policy import cams
from watcher_cams.policy import guards
from watcher_cams.policy import ksm
from watcher_cams.policy import margin
from watcher_cams.policy import report
from watcher_cams.policy import utility

GUARDS = guards.GuardConfig()


def _static(view, sim):
    return None


def _sms(view, sim):
    return baselines.sms(view, GUARDS, sim.access_rates())


def _cams(view, sim):
    return cams.plan(view, GUARDS, cams.CamsParams())


def _margin(view, sim):
    return margin.plan(view, GUARDS, margin.MarginParams())


def _ksm_paper(view, sim):
    return ksm.plan(view, GUARDS, ksm.KsmParams(mode=ksm.PAPER))


def _utility(view, sim):
    if sim.has_ksm:
        return ksm.plan(view, GUARDS, ksm.KsmParams(mode=ksm.UTILITY))
    return utility.plan(view, GUARDS, utility.UtilityParams())


POLICIES = {
    'static': _static,
    'sms': _sms,
    'cams-paper': _cams,
    'margin-paper': _margin,
    'ksm-paper': _ksm_paper,
    'utility': _utility,
}


def plan(label, raw_report, sim):
    """Run policy ``label`` on an agent report; the Plan or None."""
    return POLICIES[label](report.parse_host(raw_report), sim)
