"""etc/watcher-cams/audits: one example per strategy, true to its schema.

tests/cloud/test_examples.py runs them against the all-in-one cloud; here
their text is held against the strategies: the goal and strategy they
create, and every parameter with its default in the header.
"""

import os
import re

from stevedore import extension
import testtools

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
AUDITS = os.path.join(TOP, 'etc', 'watcher-cams', 'audits')
PARAM = re.compile(r'^#   (\w+)=(\S+)\s')
HELPER = 'create-continuous-audit.sh'
CREATE = re.compile(r'/%s" \\\n\s*(\w+) (\w+) "\$@"' % re.escape(HELPER))


def strategies():
    mgr = extension.ExtensionManager('watcher_strategies')
    return {e.name: e.plugin for e in mgr
            if e.module_name.startswith('watcher_cams.')}


def header_params(text):
    return dict(m.groups() for m in map(PARAM.match, text.splitlines())
                if m)


class TestAuditExamples(testtools.TestCase):

    def test_one_example_per_strategy(self):
        scripts = sorted(f[:-3] for f in os.listdir(AUDITS)
                         if f.endswith('.sh') and f != HELPER)
        self.assertEqual(sorted(strategies()), scripts)

    def test_the_helper_creates_a_continuous_audit(self):
        with open(os.path.join(AUDITS, HELPER)) as f:
            text = f.read()
        self.assertIn('--audit_type CONTINUOUS', text)
        self.assertIn('--auto-trigger', text)

    def test_goal_strategy_and_parameters_match(self):
        for name, cls in strategies().items():
            with open(os.path.join(AUDITS, name + '.sh')) as f:
                text = f.read()
            self.assertEqual([(cls.get_goal_name(), name)],
                             CREATE.findall(text), name)
            schema = cls.get_schema()['properties']
            documented = header_params(text)
            self.assertEqual(sorted(schema), sorted(documented), name)
            for param, default in documented.items():
                expected = schema[param].get('default')
                shown = {None: 'null'}.get(expected, str(expected))
                self.assertEqual(shown, default,
                                 '%s: %s' % (name, param))
