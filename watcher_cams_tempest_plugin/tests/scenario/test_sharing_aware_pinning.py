"""sharing_aware_pinning puts identical guests on one last-level cache.

Two servers of the same image and flavor on [watcher_cams] compute_host.
Once KSM on that node merged their identical pages (KSM must run there,
as ksmtuned or the operator sets it), one-shot audits of the strategy,
scoped to the two, pin both guests' vCPUs onto the CPUs of one LLC: the
same CPUs for both, fewer than Nova placed them on, and nothing else. KSM
merges page by page and the node's agent reuses a sharing matrix for a
while, so the audits repeat until both guests are placed together; every
plan's actions must succeed and pin only the two.
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

    def _audit_pins(self, template, servers, before):
        """One audit, its plan applied; the guests' CPUs once on one LLC.

        That is the same CPUs for both, fewer than ``before`` (Nova's);
        None until then.
        """
        audit = self.audit(audit_template_uuid=template,
                           audit_type='ONESHOT')
        if self.optim.list_action_plans(audit):
            base.wait_until('plans of audit %s' % audit,
                            lambda: self.plans_done(audit),
                            CONF.watcher_cams.scenario_timeout)
            # An audit with nothing to pin leaves an empty plan.
            actions = self.optim.list_actions(audit_uuid=audit)
            self.assertLessEqual({(a['action_type'], a['state'])
                                  for a in actions},
                                 {('cams_host_pin', 'SUCCEEDED')}, actions)
            # An instance outside the audit's scope is never re-pinned.
            pinned = {pin['instance'] for a in actions
                      for pin in a['input_parameters']['pins']}
            self.assertLessEqual(pinned, {s for s, _ in servers}, actions)
        placed = {pinned_cpus(dom) for _, dom in servers}
        if len(placed) == 1 and next(iter(placed)) < before:
            return placed.pop()
        return None

    @decorators.attr(type=['slow'])
    @decorators.idempotent_id('e2b6f4c8-9a17-4d3e-8c52-5f0b7d1e3a67')
    def test_identical_guests_share_an_llc(self):
        flavor = self.create_flavor(512)
        servers = [self.boot('cams-pin', flavor) for _ in range(2)]
        nova = {pinned_cpus(dom) for _, dom in servers}
        self.assertEqual(1, len(nova), nova)
        nova = nova.pop()
        template = self.create_audit_template(
            'sharing_aware_pinning', self.scope([s for s, _ in servers]))
        placed = base.wait_until(
            'both guests pinned to one LLC',
            lambda: self._audit_pins(template['uuid'], servers, nova),
            CONF.watcher_cams.scenario_timeout, every=20)
        self.assertTrue(placed < nova, (placed, nova))
