#!/usr/bin/env bash
# Create (or reuse) the project's virtualenv in .venv and install the package
# with every pin from constraints.txt. Sourced by tools/test.sh and tools/lab.sh.
# Re-installs only when requirements or constraints change.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="${CAMS_VENV:-$top/.venv}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"

if [ ! -x "$venv/bin/python" ]; then
    echo "venv: creating $venv with $python"
    "$python" -m venv "$venv"
fi
stamp="$venv/.cams-installed"
want=$(cat "$top/requirements.txt" "$top/test-requirements.txt" \
           "$top/doc/requirements.txt" "$top/constraints.txt" \
           "$top/setup.cfg" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "venv: installing pinned requirements (about a minute on a fresh machine)"
    "$venv/bin/pip" install -q --upgrade pip setuptools wheel
    "$venv/bin/pip" install -q -c "$top/constraints.txt" \
        -r "$top/requirements.txt" -r "$top/test-requirements.txt" \
        -r "$top/doc/requirements.txt"
    # pbr takes the version from git; a tarball without git metadata still
    # installs through PBR_VERSION.
    PBR_VERSION="${PBR_VERSION:-0.1.0}" "$venv/bin/pip" install -q \
        -c "$top/constraints.txt" --no-deps -e "$top"
    # The editable install cannot map a package inside Nova's (a wheel puts
    # nova/virt/watcher_cams there itself): link the shim into nova.virt.
    virt=$("$venv/bin/python" -c \
        'import os, nova.virt; print(os.path.dirname(nova.virt.__file__))')
    ln -sfn "$top/nova/virt/watcher_cams" "$virt/watcher_cams"
    echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
