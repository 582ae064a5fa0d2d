#!/bin/sh
# Run inside `unshare -m -u --propagation private`: a libvirtd of its own for
# one compute node. Nova refuses a hypervisor that already has domains, so
# each nova-compute gets private /etc, /run, /var/lib, /var/cache and
# /var/log of libvirt, and its own hostname.
# usage: libvirtd-ns.sh DIR TCP_PORT HOSTNAME [PRIVATE_DIR:SHARED_PATH]
set -e
dir=$1 port=$2 name=$3 bind=${4:-}
hostname "$name"
mount --bind "$dir/etc" /etc/libvirt
mount --bind "$dir/run" /run/libvirt
mount --bind "$dir/lib" /var/lib/libvirt
mount --bind "$dir/cache" /var/cache/libvirt
mount --bind "$dir/log" /var/log/libvirt
# The same instances_path string on every node, different storage behind it
# (what live migration between two nodes expects).
[ -n "$bind" ] && mount --bind "${bind%%:*}" "${bind##*:}"
/usr/sbin/virtlogd -d -p "$dir/virtlogd.pid"
exec /usr/sbin/libvirtd --listen -p "$dir/libvirtd.pid"
