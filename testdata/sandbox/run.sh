#!/usr/bin/env bash
# A container-like sandbox for the attach tests (tests/src/sandbox.rs), run as root: new PID and
# mount namespaces, and a chroot into ROOT holding bind mounts of the host's /usr, /etc and /dev,
# a private tmpfs /tmp (read-only with "ro"; with "link:/DIR", /tmp is an absolute symbolic link to
# /DIR, a private tmpfs, as a hostile container's root can make it), /proc of the new PID
# namespace, and each HOST:INSIDE directory at INSIDE. The command runs as USERSPEC (uid:gid). The
# mounts vanish with the namespace; ROOT keeps only empty mount points.
#   usage: run.sh ROOT USERSPEC rw|ro|link:/DIR [HOST:INSIDE ...] -- COMMAND...
set -euo pipefail
root=$1 user=$2 tmp_mode=$3
shift 3
binds=()
while [ "$1" != "--" ]; do binds+=("$1"); shift; done
shift
mkdir -p "$root"/{usr,etc,dev,proc}
tmp_dir=/tmp
case $tmp_mode in
link:/*)
    tmp_dir=${tmp_mode#link:}
    [ -L "$root/tmp" ] || rmdir "$root/tmp" 2>/dev/null || true
    ln -sfn "$tmp_dir" "$root/tmp"
    ;;
esac
mkdir -p "$root$tmp_dir"
for l in bin lib lib64 sbin; do [ -L "$root/$l" ] || ln -s "usr/$l" "$root/$l"; done
for b in "${binds[@]}"; do mkdir -p "$root/${b#*:}"; done
exec unshare --pid --mount --fork --propagation private bash -c '
    set -euo pipefail
    root=$1 user=$2 tmp_mode=$3 tmp_dir=$4 n=$5
    shift 5
    for d in usr etc dev; do mount --rbind "/$d" "$root/$d"; done
    mount -t tmpfs tmpfs "$root$tmp_dir"
    chmod 1777 "$root$tmp_dir"
    [ "$tmp_mode" = ro ] && mount -o remount,ro "$root$tmp_dir"
    for ((i = 0; i < n; i++)); do
        b=$1; shift
        mount --bind "${b%%:*}" "$root/${b#*:}"
    done
    mount -t proc proc "$root/proc"
    exec chroot --userspec="$user" "$root" "$@"
' sandbox "$root" "$user" "$tmp_mode" "$tmp_dir" "${#binds[@]}" "${binds[@]}" "$@"
