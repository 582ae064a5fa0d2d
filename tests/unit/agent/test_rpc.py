"""The RPC endpoint's argument checks (the transport is tested for real in
tests/functional/test_rpc.py over RabbitMQ)."""

import oslo_messaging as messaging
import testtools

from watcher_cams.agent import controllers
from watcher_cams.agent import rpc


class RecordingManager:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name,) + args)
            return {'ok': name}
        return call


class TestEndpoint(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.manager = RecordingManager()
        self.endpoint = rpc.AgentEndpoint(self.manager)

    def assertRefused(self, method, **kwargs):
        # Expected exceptions travel wrapped, so the server logs no trace.
        exc = self.assertRaises(messaging.ExpectedException, method, {},
                                **kwargs)
        self.assertIsInstance(exc.exc_info[1], controllers.Refused)

    def test_valid_calls_reach_the_manager(self):
        self.endpoint.set_balloon({}, instance='u', target_mb=512,
                                  reason='r' * 300)
        self.endpoint.revert({}, instance='u', kind='affinity')
        self.endpoint.set_affinity({}, instance='u', cpus=[0], reason='r',
                                   change_id='c1')
        self.endpoint.revert({}, instance='u', kind='affinity',
                             change_id='c1')
        self.endpoint.get_overview({}, since=12.5)
        self.endpoint.get_overview({})
        self.assertEqual([('set_balloon', 'u', 512, 'r' * 255, None),
                          ('revert', 'u', 'affinity', None),
                          ('set_affinity', 'u', [0], 'r', 'c1'),
                          ('revert', 'u', 'affinity', 'c1'),
                          ('get_overview', 12.5), ('get_overview', None)],
                         self.manager.calls)

    def test_bad_arguments_are_refused_before_the_manager(self):
        for kwargs in ({'instance': 'u', 'target_mb': '512'},
                       {'instance': 'u', 'target_mb': 5.0},
                       {'instance': 'u', 'target_mb': True},
                       {'instance': '', 'target_mb': 5},
                       {'instance': 'x' * 65, 'target_mb': 5},
                       {'instance': 7, 'target_mb': 5}):
            self.assertRefused(self.endpoint.set_balloon, **kwargs)
        self.assertRefused(self.endpoint.revert, instance='u', kind='memory')
        for change_id in (7, '', 'x' * 65):
            self.assertRefused(self.endpoint.revert, instance='u',
                               kind='balloon', change_id=change_id)
        for since in ('12', True, float('nan'), [1]):
            self.assertRefused(self.endpoint.get_overview, since=since)
        self.assertEqual([], self.manager.calls)

    def test_batches_are_checked_before_the_manager(self):
        targets = [{'instance': 'u', 'target_mb': 512, 'reason': 'r' * 300},
                   {'instance': 'v', 'target_mb': 768}]
        self.endpoint.set_balloons({}, targets=targets, change_id='c1')
        self.endpoint.revert_balloons({}, instances=['u', 'v'],
                                      change_id='c1')
        self.assertEqual([('set_balloons',
                           [{'instance': 'u', 'target_mb': 512,
                             'reason': 'r' * 160},
                            {'instance': 'v', 'target_mb': 768,
                             'reason': ''}], '', 'c1'),
                          ('revert_balloons', ['u', 'v'], 'c1')],
                         self.manager.calls)
        del self.manager.calls[:]
        one = {'instance': 'u', 'target_mb': 512}
        for bad in ([], one, [one, one], [dict(one, target_mb='512')],
                    [dict(one, instance=7)], ['u'], [one] * 257):
            self.assertRefused(self.endpoint.set_balloons, targets=bad)
        for instances, change_id in ((['u'], None), ([], 'c1'),
                                     (['u', 'u'], 'c1'), ('u', 'c1'),
                                     ([7], 'c1')):
            self.assertRefused(self.endpoint.revert_balloons,
                               instances=instances, change_id=change_id)
        self.assertEqual([], self.manager.calls)
