#!/usr/bin/env bash
# The project's main job (README): installs the pinned environment and runs
# the lab. Extra arguments go to watcher-cams-lab (default: simulate the
# default scenario into lab-results/). `tools/lab.sh guests ...` first
# installs and starts libvirt and builds the guest image with the lab's
# data disk (CAMS_LAB_DATA_MB, default 3072 MiB; pass the same --data-mb).
# `tools/lab.sh cloud ...` runs the lab through the all-in-one OpenStack
# (tools/aio), which it brings up first unless every service runs.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ "${1:-}" = guests ]; then
    "$top/tools/host-setup.sh"
    "$top/tools/guest-image.sh" --lab-data "${CAMS_LAB_DATA_MB:-3072}" \
        >/dev/null
fi
if [ "${1:-}" = cloud ]; then
    if ! python3 "$top/tools/aio/aio.py" status >/dev/null; then
        python3 "$top/tools/aio/aio.py" up
    fi
    eval "$(python3 "$top/tools/aio/aio.py" openrc)"
fi
# shellcheck source=tools/venv.sh
source "$top/tools/venv.sh"
exec watcher-cams-lab "$@"
