#!/usr/bin/env bash
# The project's main job (README): installs what the chosen lab mode needs
# and runs it. Extra arguments go to watcher-cams-lab (default: simulate the
# default scenario into lab-results/), whose last line sums up the run.
# The simulator, `example` and `bench-plan` need the venv's 'lab' profile
# only: no libvirt, no daemons, no C build.
# `tools/lab.sh guests ...` first installs and starts libvirt
# (tools/host-setup.sh guests) and builds the guest image with the lab's
# data disk (CAMS_LAB_DATA_MB, default 3072 MiB; pass the same --data-mb).
# `tools/lab.sh double-caching ...` does the same with a data disk of
# CAMS_LAB_DATA_MB (default 512 MiB; pass the same --data-mb);
# `tools/lab.sh bench-agent ...` with the plain guest image.
# `tools/lab.sh cloud ...` runs the lab through the all-in-one OpenStack
# (tools/aio), which it brings up first unless every service runs.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CAMS_VENV_PROFILE=lab
case "${1:-}" in
    guests|double-caching)
        default_mb=3072
        [ "$1" = double-caching ] && default_mb=512
        "$top/tools/host-setup.sh" guests
        "$top/tools/guest-image.sh" \
            --lab-data "${CAMS_LAB_DATA_MB:-$default_mb}" >/dev/null
        CAMS_VENV_PROFILE=guests ;;
    bench-agent)
        "$top/tools/host-setup.sh" guests
        CAMS_VENV_PROFILE=guests ;;
    cloud)
        if ! python3 "$top/tools/aio/aio.py" status >/dev/null; then
            python3 "$top/tools/aio/aio.py" up
        fi
        eval "$(python3 "$top/tools/aio/aio.py" openrc)"
        CAMS_VENV_PROFILE=guests ;;
esac
# shellcheck source=tools/venv.sh
source "$top/tools/venv.sh"
exec watcher-cams-lab "$@"
