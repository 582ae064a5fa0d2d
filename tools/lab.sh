#!/usr/bin/env bash
# The project's main job (README): installs the pinned environment and runs
# the lab. Extra arguments go to watcher-cams-lab (default: simulate the
# default scenario into lab-results/).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/venv.sh
source "$top/tools/venv.sh"
exec watcher-cams-lab "$@"
