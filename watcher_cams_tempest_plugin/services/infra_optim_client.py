"""The Watcher API calls the tests make (service type infra-optim, v1)."""

import json
from urllib import parse

from tempest.lib.common import rest_client


# The first version of Watcher's API with forced audits.
FORCE_API_VERSION = 'infra-optim 1.2'


class InfraOptimClient(rest_client.RestClient):
    """Goals, strategies, audit templates, audits, action plans, actions."""

    api_version = 'v1'

    def _show(self, path, params=None):
        if params:
            path += '?' + parse.urlencode(params)
        resp, body = self.get(path)
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def _create(self, path, body, headers=None):
        resp, out = self.post(path, json.dumps(body), headers=headers,
                              extra_headers=headers is not None)
        self.expected_success(201, resp.status)
        return rest_client.ResponseBody(resp, json.loads(out))

    def _patch(self, path, ops):
        resp, out = self.patch(path, json.dumps(ops))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(out))

    def _delete(self, path):
        resp, out = self.delete(path)
        self.expected_success(204, resp.status)
        return rest_client.ResponseBody(resp)

    # Goals and strategies (read only: entry points of the plugin).

    def list_goals(self):
        return self._show('goals/detail')['goals']

    def show_goal(self, name):
        return self._show('goals/%s' % name)

    def list_strategies(self, goal=None):
        return self._show('strategies/detail',
                          {'goal': goal} if goal else None)['strategies']

    def show_strategy(self, name):
        return self._show('strategies/%s' % name)

    # Audit templates and audits.

    def create_audit_template(self, **body):
        return self._create('audit_templates', body)

    def show_audit_template(self, uuid):
        return self._show('audit_templates/%s' % uuid)

    def delete_audit_template(self, uuid):
        return self._delete('audit_templates/%s' % uuid)

    def create_audit(self, force=False, **body):
        """An audit; ``force``: run it while another action plan is ONGOING.

        Watcher cancels a one-shot audit created while any action plan of
        the cloud is ONGOING, unless it is forced (API 1.2).
        """
        if not force:
            return self._create('audits', body)
        return self._create('audits', dict(body, force=True),
                            {'OpenStack-API-Version': FORCE_API_VERSION})

    def show_audit(self, uuid):
        return self._show('audits/%s' % uuid)

    def cancel_audit(self, uuid):
        return self._patch('audits/%s' % uuid, [
            {'op': 'replace', 'path': '/state', 'value': 'CANCELLED'}])

    def delete_audit(self, uuid):
        return self._delete('audits/%s' % uuid)

    # Action plans and actions.

    def list_action_plans(self, audit_uuid):
        return self._show('action_plans/detail',
                          {'audit_uuid': audit_uuid})['action_plans']

    def list_actions(self, audit_uuid=None, action_plan_uuid=None):
        params = {}
        if audit_uuid:
            params['audit_uuid'] = audit_uuid
        if action_plan_uuid:
            params['action_plan_uuid'] = action_plan_uuid
        return self._show('actions/detail', params)['actions']
