"""Horizon-style unit tests of the dashboard panel (watcher_cams_dashboard).

They run in a process of their own (tools/test.sh) with Horizon's test
settings plus the panel, enabled from its own ``enabled/`` file. APIs are
mocked at the panel's boundary; tests/cloud/test_dashboard.py drives the
panel in a real browser against the all-in-one cloud.
"""

import os

import django
from django.test import utils

os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tests.dashboard.settings')
django.setup()
# What Django's own test runner does first: responses carry their
# templates and context.
utils.setup_test_environment()
