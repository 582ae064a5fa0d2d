#!/usr/bin/env bash
# Install and start what the real-guest lab and the tests need on a fresh
# Debian 12 machine (lab-notes.md). Usage: tools/host-setup.sh [guests|test]
#   guests  libvirt + QEMU, the guest agent, busybox and a kernel for the
#           tiny guest, a C toolchain for the guest tools (tools/guest),
#           libvirt-dev and pkg-config (libvirt-python builds against them):
#           what tools/lab.sh's real-guest modes need
#   test    (default) guests plus RabbitMQ (oslo.messaging's functional
#           tests), shellcheck (the DevStack plugin's test), Chromium
#           (the dashboard's browser test) and Prometheus (the agent's
#           metrics test): what tools/test.sh needs
# Idempotent: installs only missing packages and starts only daemons that
# are not running. Then builds the guest image (tools/guest-image.sh).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
profile="${1:-test}"
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

packages="libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients
  libvirt-dev pkg-config qemu-system-x86 qemu-utils qemu-guest-agent
  busybox-static linux-image-amd64 e2fsprogs cpio gcc libc6-dev make"
case "$profile" in
    guests) ;;
    test) packages="$packages rabbitmq-server shellcheck chromium prometheus" ;;
    *) echo "host-setup: unknown profile $profile (guests or test)" >&2
       exit 2 ;;
esac
missing=
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' \
        || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "host-setup: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq $missing \
        > /tmp/cams-apt.log 2>&1 || { tail -n 30 /tmp/cams-apt.log; exit 1; }
fi

# PID 1 is not systemd on these machines: start the daemons by hand.
if ! virsh -c qemu:///system version >/dev/null 2>&1; then
    echo "host-setup: starting virtlogd and libvirtd"
    pgrep -x virtlogd >/dev/null || $SUDO virtlogd -d
    pgrep -x libvirtd >/dev/null || $SUDO libvirtd -d
    for _ in $(seq 1 30); do
        virsh -c qemu:///system version >/dev/null 2>&1 && break
        sleep 1
    done
    virsh -c qemu:///system version >/dev/null
fi

port_open() { (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; }
if [ "$profile" = test ] && ! port_open; then
    echo "host-setup: starting rabbitmq-server"
    $SUDO rabbitmq-server -detached >/dev/null 2>&1 || true
    for _ in $(seq 1 90); do
        port_open && break
        sleep 1
    done
    port_open || { echo "host-setup: RabbitMQ did not start" >&2; exit 1; }
fi

"$top/tools/guest-image.sh" >/dev/null
if [ "$profile" = test ]; then
    echo "host-setup: libvirt, RabbitMQ and the guest image are ready"
else
    echo "host-setup: libvirt and the guest image are ready"
fi
