# Watcher's unit-test package patches eventlet and registers its objects on
# import; it must come before any other watcher import in these tests.
import watcher.tests.unit  # noqa: F401
