#!/usr/bin/env bash
# Build the tiny lab guest (lab-notes.md): the host's Debian kernel plus an
# initramfs with busybox-static, qemu-ga and the virtio/ext4 modules, and a
# small ext4 data disk holding a file of seeded pseudo-random data (the same
# bytes in every guest, so KSM can merge their page caches).
#
# The initramfs also holds the guest tools of tools/guest (its Makefile):
# cams-reader, the lab's reader, and cams-lfu with libcams-lfu.so, which
# keep an LFU hot set in the guest's page cache (doc/source/lfu.rst).
# They are linked dynamically (cams-lfu preloads its library into the
# reader) against the libc qemu-ga brings. With --lab-data MB a second disk image,
# lab-data-MB.img, holds a file of MB MiB for the real-guest lab (guests
# mount it at /lab when it is attached as their second disk).
#
# Usage: tools/guest-image.sh [--lab-data MB] [OUTDIR]
#        (default OUTDIR: .cache/guest)
# Prints the output directory. Rebuilds only what is missing or outdated.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lab_mb=
if [ "${1:-}" = --lab-data ]; then
    lab_mb=${2:?--lab-data needs a size in MiB}
    shift 2
fi
out="${1:-${CAMS_GUEST_DIR:-$top/.cache/guest}}"
data_mb="${CAMS_GUEST_DATA_MB:-96}"
mkdir -p "$out"

kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$kernel" ]; then
    echo "guest-image: no /boot/vmlinuz-* (install linux-image-amd64)" >&2
    exit 1
fi
kver=${kernel#/boot/vmlinuz-}
guest_src="$top/tools/guest"
# What the initramfs is built from: a change to any of it rebuilds it.
stamp="$kver $(cat "${BASH_SOURCE[0]}" "$guest_src"/Makefile \
    "$guest_src"/*.c "$guest_src"/*.h | sha256sum | cut -c1-16)"

if [ ! -f "$out/vmlinuz" ] || [ ! -f "$out/initrd.gz" ] \
        || [ "$(cat "$out/kver" 2>/dev/null)" != "$stamp" ]; then
    root=$(mktemp -d)
    build=$(mktemp -d)
    trap 'rm -rf "$root" "$build"' EXIT
    mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,mnt,run,modules,etc,var/run}
    cp /bin/busybox "$root/bin/busybox"
    # `busybox --list` names busybox itself: skip it or the link replaces
    # the binary.
    for applet in $(/bin/busybox --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    cp /usr/sbin/qemu-ga "$root/sbin/qemu-ga"
    make -s -C "$guest_src" OUT="$build" PREFIX=/usr BINDIR=/bin \
        DESTDIR="$root" install
    for bin in /usr/sbin/qemu-ga "$build"/cams-reader "$build"/cams-lfu \
            "$build"/libcams-lfu.so; do
        for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
            mkdir -p "$root$(dirname "$lib")"
            cp -L "$lib" "$root$lib"
        done
    done
    # Modules in load order (dependencies first).
    mods="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev
          virtio_pci virtio_console virtio_balloon virtio_blk
          crc16 mbcache jbd2 crc32c_generic libcrc32c ext4"
    for m in $mods; do
        f=$(modinfo -k "$kver" -n "$m")
        case "$f" in
            *.ko) cp "$f" "$root/modules/$m.ko" ;;
            *.ko.xz) xz -dc "$f" > "$root/modules/$m.ko" ;;
            *.ko.zst) zstd -qdc "$f" > "$root/modules/$m.ko" ;;
            *) ;;  # built in
        esac
    done
    echo "$mods" > "$root/modules/order"
    cat > "$root/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
for m in $(cat /modules/order); do
    [ -f /modules/$m.ko ] && insmod /modules/$m.ko 2>/dev/console
done
# No udev: find the guest agent's port by name.
port=
for i in 1 2 3 4 5 6 7 8 9 10; do
    for p in /sys/class/virtio-ports/*; do
        # The lab's own channel stands in for the agent's on guests
        # booted without one (watcher_cams/lab/guests.py LAB_PORT).
        case "$(cat $p/name 2>/dev/null)" in
            org.qemu.guest_agent.0|org.watcher_cams.lab.0)
                port=/dev/$(basename $p) ;;
        esac
    done
    [ -n "$port" ] && [ -e "$port" ] && break
    sleep 0.5
done
[ -b /dev/vda ] && mount -t ext4 -o ro,noload /dev/vda /mnt
mkdir -p /lab
[ -b /dev/vdb ] && mount -t ext4 -o ro,noload /dev/vdb /lab
echo "cams-guest: agent on ${port:-none}" > /dev/console
/sbin/qemu-ga -m virtio-serial -p "$port" -t /run
echo "cams-guest: qemu-ga exited" > /dev/console
exec sleep 2147483647
EOF
    chmod +x "$root/init"
    (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) \
        > "$out/initrd.gz.tmp"
    mv "$out/initrd.gz.tmp" "$out/initrd.gz"
    cp "$kernel" "$out/vmlinuz"
    echo "$stamp" > "$out/kver"
fi

# data_image NAME MB: an ext4 image holding /data, MB MiB of seeded
# pseudo-random bytes (random so that nothing compresses or reads as holes;
# seeded so every build holds the same bytes).
data_image() {
    local img="$out/$1" size="$2" tmpdir
    tmpdir=$(mktemp -d)
    python3 - "$tmpdir/data" "$size" <<'EOF'
import random, sys
rng = random.Random(20261122)
with open(sys.argv[1], 'wb') as f:
    for _ in range(int(sys.argv[2])):
        f.write(rng.randbytes(1 << 20))
EOF
    truncate -s "$((size + size / 16 + 32))M" "$img.tmp"
    mkfs.ext4 -q -F -d "$tmpdir" "$img.tmp"
    rm -rf "$tmpdir"
    mv "$img.tmp" "$img"
}
[ -f "$out/data.img" ] || data_image data.img "$data_mb"
if [ -n "$lab_mb" ] && [ ! -f "$out/lab-data-$lab_mb.img" ]; then
    data_image "lab-data-$lab_mb.img" "$lab_mb"
fi
echo "$out"
