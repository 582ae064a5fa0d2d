#!/usr/bin/env bash
# The project's one test command (README, .ci/run): installs what the tests
# need, runs the style checks, the unit tests and the functional tests, and
# ends with one summary line "tests: N passed, N failed".
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
# shellcheck source=tools/venv.sh
source "$top/tools/venv.sh"

echo "== flake8 (hacking)"
flake8 watcher_cams nova_driver_ext tests tools

echo "== sample config is current"
python tools/check_sample_config.py

echo "== unit tests (stestr)"
rc=0
stestr --test-path ./tests/unit run --concurrency "${CAMS_TEST_CONCURRENCY:-2}" || rc=$?
summary=$(stestr last --no-subunit-trace 2>/dev/null | tail -n 5 || true)
passed=$(stestr last --subunit | subunit2csv 2>/dev/null | grep -c ',success,' || true)
failed=$(stestr failing --list 2>/dev/null | grep -c . || true)
echo "$summary"
echo "tests: ${passed} passed, ${failed} failed"
exit "$rc"
