#!/usr/bin/env bash
# Create (or reuse) the project's virtualenv in .venv and install the package
# with every pin from constraints.txt. Sourced by tools/test.sh and
# tools/lab.sh, which first set CAMS_VENV_PROFILE to what they run:
#   lab     the package and the lab's plots (the simulator, the example,
#           bench-plan): no libvirt, so no C build on a fresh machine
#   guests  lab plus libvirt-python (the real-guest lab modes; it builds
#           against libvirt-dev, which tools/host-setup.sh installs first)
#   test    everything the test suites and the documentation build need
# Each profile includes the ones above it; the venv is re-installed only
# when a larger profile is asked for or requirements or constraints change.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="${CAMS_VENV:-$top/.venv}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
profile="${CAMS_VENV_PROFILE:-test}"
case "$profile" in
    lab) rank=1; what=("${top}[lab]") ;;
    guests) rank=2; what=("${top}[lab,agent]") ;;
    test) rank=3
          what=(-r "$top/test-requirements.txt"
                -r "$top/doc/requirements.txt" "$top") ;;
    *) echo "venv: unknown CAMS_VENV_PROFILE $profile (lab, guests or test)" >&2
       exit 2 ;;
esac

if [ ! -x "$venv/bin/python" ]; then
    echo "venv: creating $venv with $python"
    "$python" -m venv "$venv"
fi
stamp="$venv/.cams-installed"
want=$(cat "$top/requirements.txt" "$top/test-requirements.txt" \
           "$top/doc/requirements.txt" "$top/constraints.txt" \
           "$top/setup.cfg" | sha256sum | cut -d' ' -f1)
read -r have_hash have_rank 2>/dev/null < "$stamp" || true
if [ "${have_hash:-}" != "$want" ] || [ "${have_rank:-0}" -lt "$rank" ]; then
    echo "venv: installing the pinned '$profile' requirements" \
         "(a few minutes on a fresh machine)"
    "$venv/bin/pip" install -q --upgrade pip setuptools wheel
    # pbr takes the version from git; a tarball without git metadata still
    # installs through PBR_VERSION. Editable, so the tree is what runs.
    PBR_VERSION="${PBR_VERSION:-0.1.0}" "$venv/bin/pip" install -q \
        -c "$top/constraints.txt" -r "$top/requirements.txt" \
        "${what[@]:0:${#what[@]}-1}" -e "${what[-1]}"
    if [ "$profile" = test ]; then
        # The editable install cannot map a package inside Nova's (a wheel
        # puts nova/virt/watcher_cams there itself): link the shim into
        # nova.virt.
        virt=$("$venv/bin/python" -c \
            'import os, nova.virt; print(os.path.dirname(nova.virt.__file__))')
        ln -sfn "$top/nova/virt/watcher_cams" "$virt/watcher_cams"
    fi
    echo "$want $rank" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
