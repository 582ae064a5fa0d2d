"""Functional tests, on native threads as the agent runs."""

import tests

tests.use_native_threads()
