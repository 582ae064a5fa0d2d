"""tools/aio/aio.py refuses to start beside another checkout's cloud.

A fresh clone's CI once ran ``aio.py up`` while another checkout's cloud
held the ports: its ``down`` could not see those services (pid files are
per checkout) and the second set failed much later with an HTTP 401.
"""

import contextlib
import importlib.util
import os
import socket

import fixtures
import testtools

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def load_aio():
    spec = importlib.util.spec_from_file_location(
        'cams_aio', os.path.join(TOP, 'tools', 'aio', 'aio.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestHeldPorts(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.aio = load_aio()
        listener = socket.socket()
        self.addCleanup(listener.close)
        listener.bind(('127.0.0.1', 0))
        listener.listen()
        self.held = listener.getsockname()[1]
        with contextlib.closing(socket.socket()) as spare:
            spare.bind(('127.0.0.1', 0))
            self.free = spare.getsockname()[1]
        self.useFixture(fixtures.MockPatchObject(
            self.aio, 'cloud_ports', return_value=[self.free, self.held]))

    def test_a_listening_port_is_reported_and_a_closed_one_is_not(self):
        self.assertEqual([self.held], self.aio.held_ports())

    def test_up_stops_before_starting_anything(self):
        started = []
        for step in ('host_packages', 'down', 'mariadb', 'venv'):
            self.useFixture(fixtures.MockPatchObject(
                self.aio, step, side_effect=lambda *a, s=step, **k:
                started.append(s)))
        error = self.assertRaises(RuntimeError, self.aio.up)
        self.assertIn(str(self.held), str(error))
        self.assertEqual(['host_packages', 'down'], started)

    def test_the_cloud_s_ports_include_keystone_and_the_dashboard(self):
        ports = load_aio().cloud_ports()
        self.assertTrue({5000, 8080, 9322, 16610} <= set(ports), ports)
