"""sharing_aware_pinning puts identical guests on one last-level cache.

Two servers of the same image and flavor on [watcher_cams] compute_host.
Once KSM on that node merged their identical pages (KSM must run there,
as ksmtuned or the operator sets it), a one-shot audit of the strategy
pins both guests' vCPUs onto the CPUs of one LLC: the same CPUs for both,
fewer than Nova placed them on. The node's agent reuses a sharing matrix for a
while, so the audit repeats until it sees the merged pages.
"""

from tempest import config
from tempest.lib import decorators

from watcher_cams_tempest_plugin.tests import base

CONF = config.CONF


def pinned_cpus(dom):
    """The set of host CPUs each vCPU of ``dom`` may run on, as one set."""
    cpus = set()
    for vcpu in dom.vcpuPinInfo():
        cpus |= {cpu for cpu, allowed in enumerate(vcpu) if allowed}
    return frozenset(cpus)


class TestSharingAwarePinning(base.ScenarioTest):

    def _pin_actions(self, template):
        """Run one audit; its actions if it planned any, else None."""
        audit = self.audit(audit_template_uuid=template,
                           audit_type='ONESHOT')
        if not self.optim.list_action_plans(audit):
            return None
        base.wait_until('plans of audit %s' % audit,
                        lambda: self.plans_done(audit),
                        CONF.watcher_cams.scenario_timeout)
        return self.optim.list_actions(audit_uuid=audit) or None

    @decorators.attr(type=['slow'])
    @decorators.idempotent_id('e2b6f4c8-9a17-4d3e-8c52-5f0b7d1e3a67')
    def test_identical_guests_share_an_llc(self):
        flavor = self.create_flavor(512)
        servers = [self.boot('cams-pin', flavor) for _ in range(2)]
        before = {pinned_cpus(dom) for _, dom in servers}
        self.assertEqual(1, len(before), before)
        template = self.create_audit_template(
            'sharing_aware_pinning', self.scope([s for s, _ in servers]))
        actions = base.wait_until(
            'cams_host_pin actions',
            lambda: self._pin_actions(template['uuid']),
            CONF.watcher_cams.scenario_timeout, every=20)
        self.assertEqual({('cams_host_pin', 'SUCCEEDED')},
                         {(a['action_type'], a['state']) for a in actions},
                         actions)
        placed = [pinned_cpus(dom) for _, dom in servers]
        self.assertEqual(placed[0], placed[1])
        # Fewer CPUs than Nova gave them: one LLC's.
        self.assertTrue(placed[0] < before.pop(), placed)
