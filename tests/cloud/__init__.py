"""End-to-end tests on the all-in-one cloud of tools/aio (real OpenStack)."""

import tests

tests.use_native_threads()
