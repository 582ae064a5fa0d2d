#!/usr/bin/env bash
# The project's one test command (README, .ci/run): installs what the tests
# need (Debian packages, libvirt and RabbitMQ daemons, the guest image, the
# venv), runs the style checks, the unit tests, the dashboard panel's
# tests, the functional tests on real guests and the end-to-end tests on
# the all-in-one cloud, and ends with one summary line
# "tests: N passed, N failed in M min (...); ...".
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
started=$SECONDS

echo "== host: libvirt, QEMU, RabbitMQ, guest image"
# Before the venv: libvirt-python builds against libvirt-dev.
"$top/tools/host-setup.sh" test
export CAMS_VENV_PROFILE=test
# shellcheck source=tools/venv.sh
source "$top/tools/venv.sh"

# The all-in-one cloud installs and starts beside the suites that do not
# need it (about 6 minutes on a fresh machine, then a few percent of a
# core while idle); the cloud suite waits for it.
echo "== starting the all-in-one cloud in the background (.cache/aio-up.log)"
mkdir -p .cache
python3 tools/aio/aio.py up > .cache/aio-up.log 2>&1 &
aio_pid=$!
# A failed style check or docs build ends the run: the cloud goes down
# with it. Once the cloud suite ran, its own process took it down (or
# CAMS_AIO_KEEP=1 keeps it).
aio_down() {
    kill "$aio_pid" 2>/dev/null && wait "$aio_pid" 2>/dev/null
    [ "${CAMS_AIO_KEEP:-}" = 1 ] || python3 tools/aio/aio.py down \
        > /dev/null 2>&1 || true
}
trap aio_down EXIT

echo "== flake8 (hacking)"
flake8 watcher_cams nova_driver_ext nova watcher_cams_tempest_plugin \
    watcher_cams_dashboard tests tools

echo "== documentation and release notes build without warnings"
rm -rf doc/build releasenotes/build
# reno logs every note it scans: shown only when something failed.
if ! { sphinx-build -q -W --keep-going -b html doc/source doc/build/html \
           && reno -q lint \
           && sphinx-build -q -W --keep-going -b html releasenotes/source \
                  releasenotes/build/html; } > .cache/docs.log 2>&1; then
    grep -v '^[0-9a-f]\{16\}: ' .cache/docs.log
    echo "documentation build failed (whole log: .cache/docs.log)"
    exit 1
fi

echo "== sample config is current"
python tools/check_sample_config.py

passed=0
failed=0
rc=0
# The failures' tracebacks, printed again just before the summary line.
failures=.cache/failures.txt
: > "$failures"
next_run() { cat .stestr/next-stream 2>/dev/null || echo none; }
run_suite() {  # NAME PATH CONCURRENCY
    echo "== $1 tests (stestr)"
    local before ok bad
    before=$(next_run)
    stestr --test-path "$2" run --concurrency "$3" || rc=$?
    if [ "$(next_run)" = "$before" ]; then
        # No run was recorded (an import error during discovery): the
        # counts of "stestr last" would be an older run's.
        echo "$1 tests did not run (see the error above)"
        failed=$((failed + 1))
        return
    fi
    ok=$(stestr last --subunit | subunit2csv 2>/dev/null \
             | grep -c ',success,' || true)
    bad=$(stestr failing --list 2>/dev/null | grep -c . || true)
    passed=$((passed + ok))
    failed=$((failed + bad))
    if [ "$bad" -gt 0 ]; then
        stestr last --subunit | python tools/failures.py >> "$failures" \
            || true
    fi
}
run_suite unit ./tests/unit "${CAMS_TEST_CONCURRENCY:-2}"
# Nova's driver runs on native threads and Watcher's modules import eventlet:
# the driver extension's tests (fake and real libvirt) need their own process.
run_suite nova ./tests/nova 1
# The Horizon panel's tests run under Django's settings (tests/dashboard).
run_suite dashboard ./tests/dashboard 1
# One process: the functional tests share two booted guests.
run_suite functional ./tests/functional 1
# The all-in-one cloud (tools/aio): Nova, Watcher and watcher-cams together.
if wait "$aio_pid"; then
    trap - EXIT
    CAMS_AIO_UP=1 run_suite cloud ./tests/cloud 1
else
    tail -n 30 .cache/aio-up.log
    echo "cloud tests did not run: the cloud did not come up (above)"
    failed=$((failed + 1))
    rc=1
fi
if [ -s "$failures" ]; then
    echo "== what failed (the end of each traceback; whole output above)"
    cat "$failures"
fi
echo "tests: ${passed} passed, ${failed} failed in $(( (SECONDS - started) / 60 )) min" \
     "(flake8, docs, unit, nova, dashboard, functional, cloud); results:" \
     "stestr history in .stestr/, screenshots in .cache/aio/screenshots/"
exit "$rc"
