"""What the agent's RPC server and its client agree on.

Neither side imports the other: the server (:mod:`watcher_cams.agent.rpc`)
and the client (:mod:`watcher_cams.rpcapi`) both take the exchange and the
API version from here.

API version history:

* 1.0 - get_report, set_balloon, set_affinity, revert, get_state,
  save_policy_state
* 1.1 - set_balloon, set_affinity and revert take an optional change_id:
  the agent records it with the change, and a revert naming it undoes that
  change only (``not_applied`` if the agent never recorded it)
* 1.2 - get_overview: the operators' view of the host (read only)
* 1.3 - get_report takes an optional report_version: 2 asks for the
  compact report (:mod:`watcher_cams.policy.compact`); without it the
  agent answers version 1, as before
* 1.4 - set_balloons and revert_balloons: one host's ordered balloon
  changes in one call, recorded and reverted under one change id
* 1.5 - plan: the agent plans its own host for an audit's request
  (:mod:`watcher_cams.policy.planning`) from its newest collection, saves
  the policy state the plan keeps, and answers the plan
"""

VERSION = '1.5'
# Balloon changes one set_balloons call (and one cams_host_balloon action)
# carries at most: 256 targets with their reasons stay well inside the
# 64 KiB Watcher's database keeps for an action's parameters.
MAX_BATCH = 256
# Characters of one target's reason in a batch.
MAX_BATCH_REASON = 160

# An explicit exchange: the processes that call the agents (Watcher's decision
# engine and applier) set their own control_exchange ('watcher'), the agent
# would serve on oslo.messaging's default; a topic alone never meets.
EXCHANGE = 'watcher_cams'
