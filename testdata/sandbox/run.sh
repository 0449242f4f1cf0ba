#!/usr/bin/env bash
# A container-like sandbox for the attach tests (tests/src/sandbox.rs), run as root: new PID and
# mount namespaces, and a chroot into ROOT holding bind mounts of the host's /usr, /etc and /dev,
# a private tmpfs /tmp (read-only with "ro"), /proc of the new PID namespace, and each HOST:INSIDE
# directory at INSIDE. The command runs as USERSPEC (uid:gid). The mounts vanish with the
# namespace; ROOT keeps only empty mount points.
#   usage: run.sh ROOT USERSPEC rw|ro [HOST:INSIDE ...] -- COMMAND...
set -euo pipefail
root=$1 user=$2 tmp_mode=$3
shift 3
binds=()
while [ "$1" != "--" ]; do binds+=("$1"); shift; done
shift
mkdir -p "$root"/{usr,etc,dev,proc,tmp}
for l in bin lib lib64 sbin; do [ -L "$root/$l" ] || ln -s "usr/$l" "$root/$l"; done
for b in "${binds[@]}"; do mkdir -p "$root/${b#*:}"; done
exec unshare --pid --mount --fork --propagation private bash -c '
    set -euo pipefail
    root=$1 user=$2 tmp_mode=$3 n=$4
    shift 4
    for d in usr etc dev; do mount --rbind "/$d" "$root/$d"; done
    mount -t tmpfs tmpfs "$root/tmp"
    chmod 1777 "$root/tmp"
    [ "$tmp_mode" = ro ] && mount -o remount,ro "$root/tmp"
    for ((i = 0; i < n; i++)); do
        b=$1; shift
        mount --bind "${b%%:*}" "$root/${b#*:}"
    done
    mount -t proc proc "$root/proc"
    exec chroot --userspec="$user" "$root" "$@"
' sandbox "$root" "$user" "$tmp_mode" "${#binds[@]}" "${binds[@]}" "$@"
