"""Policy rules of watcher-cams-api (oslo.policy, namespace watcher_cams).

Operators override them in the file named by ``[oslo_policy]
policy_file``; ``oslopolicy-sample-generator --namespace watcher_cams``
lists them with their defaults.
"""

from oslo_policy import policy

from watcher_cams import conf as cams_conf

OVERVIEW_GET = 'watcher_cams:overview:get'

RULES = [
    policy.DocumentedRuleDefault(
        name=OVERVIEW_GET,
        check_str='role:admin',
        scope_types=['project'],
        description='Read the overview of a compute node that its '
                    'watcher-cams-agent gives: host memory and KSM '
                    'savings, per instance its memory, balloon floor, page '
                    'cache and disk reads, and their recent history. It '
                    'shows every tenant\'s instances on the node.',
        operations=[{'path': '/v1/hosts/{host}/overview',
                     'method': 'GET'}]),
]


def list_rules():
    return RULES


def get_enforcer(conf=None):
    """An Enforcer with the defaults registered (also for oslopolicy-*)."""
    conf = conf or cams_conf.CONF
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(list_rules())
    return enforcer
