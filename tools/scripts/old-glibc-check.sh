#!/usr/bin/env bash
# Runs the portable build (target/portable/linux-x86_64, made by build-portable.sh if missing)
# on an older glibc than this machine's: a Debian 11 (bullseye, glibc 2.31) root made with
# mmdebstrap, entered with chroot (as root). Older Debian releases (buster 2.28, stretch 2.24)
# have left deb.debian.org, and the archive that keeps them is not reachable from here.
#
# Inside the root, in bundle layout (/opt/jfr-native/bin, /opt/jfr-native/lib):
#   - jfrnative --version and jfr-symbolize --version;
#   - jfr-symbolize on a recording from testdata (text report and JFR output);
#   - the agent loaded by each JDK of target/jdks.env that runs there (-agentpath), its
#     recording symbolized; and `jfrnative record` (which finds the agent in ../lib);
#   - the normal build (target/release/jfrnative) must fail there, needing a newer glibc.
# Needs root (mmdebstrap, unshare, chroot). The root is kept in ~/.cache/jfr-native/roots
# (about 50 s to make, 140 MB); a run once it is there takes about 30 s.
set -euo pipefail
root_dir=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root_dir"
cache=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}
suite=bullseye
oldroot=$cache/roots/$suite
portable=$root_dir/target/portable/linux-x86_64

[ "$(id -u)" = 0 ] || { echo "old-glibc-check: needs root (chroot)" >&2; exit 1; }
[ -x "$portable/jfrnative" ] || bash tools/scripts/build-portable.sh
command -v mmdebstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
}
if [ ! -e "$oldroot/usr/bin/env" ]; then
    echo "old-glibc-check: making a Debian $suite root in $oldroot" >&2
    rm -rf "$oldroot"
    mkdir -p "$(dirname "$oldroot")"
    mmdebstrap --quiet --variant=minbase --mode=root "$suite" "$oldroot" \
        "deb http://deb.debian.org/debian $suite main"
fi

# The files the root sees: the portable build in bundle layout, a recording, a Java workload.
work=$oldroot/work
rm -rf "$work" "$oldroot/opt/jfr-native" "$oldroot/opt/normal"
mkdir -p "$work" "$oldroot/opt/jfr-native/bin" "$oldroot/opt/jfr-native/lib" "$oldroot/opt/normal"
cp "$portable/jfrnative" "$portable/jfr-symbolize" "$oldroot/opt/jfr-native/bin/"
cp "$portable/libjfrnative.so" "$oldroot/opt/jfr-native/lib/"
cp testdata/golden/two_chunks.jfr "$work/"
[ -x target/release/jfrnative ] && cp target/release/jfrnative "$oldroot/opt/normal/"
cat >"$work/Spin.java" <<'EOF'
public class Spin {
    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        double x = 0;
        while (System.nanoTime() < end) {
            for (int i = 1; i < 100000; i++) x += Math.sqrt(i) / i;
        }
        System.out.println(x > 0 ? "spun" : "?");
    }
}
EOF
[ -f target/jdks.env ] || bash tools/scripts/setup.sh
. target/jdks.env
"$JDK17_HOME/bin/javac" --release 11 -d "$work" "$work/Spin.java"

# Each JDK mounted at /opt/jdkN, read-only; the ones that cannot run on this glibc are named.
mounts=()
for n in 11 17 21 25; do
    home_var=JDK${n}_HOME
    home=${!home_var:-}
    [ -n "$home" ] && [ -x "$home/bin/java" ] || continue
    mkdir -p "$oldroot/opt/jdk$n"
    mounts+=("$home:/opt/jdk$n")
done

cat >"$work/check.sh" <<'EOF'
#!/bin/sh
# Runs inside the root.
set -u
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
check() { # check WHAT COMMAND...: the command must succeed
    what=$1; shift
    if out=$("$@" 2>&1); then ok "$what"; else bad "$what: $(echo "$out" | tail -3)"; fi
}
echo "glibc in the root: $(getconf GNU_LIBC_VERSION)"
bin=/opt/jfr-native/bin
check "jfrnative --version: $($bin/jfrnative --version 2>&1)" $bin/jfrnative --version
check "jfr-symbolize --version: $($bin/jfr-symbolize --version 2>&1)" $bin/jfr-symbolize --version
check "jfr-symbolize two_chunks.jfr (text)" $bin/jfr-symbolize /work/two_chunks.jfr -f text -o /work/two_chunks.txt
check "jfr-symbolize two_chunks.jfr (jfr)" $bin/jfr-symbolize /work/two_chunks.jfr -o /work/two_chunks.symbolized.jfr
for jdk in /opt/jdk*; do
    [ -x "$jdk/bin/java" ] || continue
    if ! v=$("$jdk/bin/java" -version 2>&1); then
        echo "skipped: $jdk does not run on this glibc: $(echo "$v" | head -1)"
        continue
    fi
    n=${jdk#/opt/jdk}
    rec=/work/agent-$n.jfr
    check "JDK $n loads the agent (-agentpath)" "$jdk/bin/java" \
        "-agentpath:/opt/jfr-native/lib/libjfrnative.so=file=$rec,interval=5ms" -cp /work Spin 2
    if [ -s "$rec" ] && $bin/jfr-symbolize "$rec" -f text -o "$rec.txt" 2>/dev/null \
        && grep -q Spin "$rec.txt"; then
        ok "JDK $n: the recording symbolized, Spin.main sampled"
    else
        bad "JDK $n: no usable recording $rec"
    fi
    check "JDK $n: jfrnative record (agent found in ../lib)" \
        $bin/jfrnative record -o "/work/cli-$n.jfr" -- "$jdk/bin/java" -cp /work Spin 1
done
if [ -x /opt/normal/jfrnative ]; then
    if out=$(/opt/normal/jfrnative --version 2>&1); then
        bad "the normal build ran here: is this glibc old?"
    else
        ok "the normal build does not run here: $(echo "$out" | grep -o "GLIBC_[0-9.]*' not found" | head -1)"
    fi
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
EOF
chmod +x "$work/check.sh"

# A mount namespace of its own: the mounts go when it ends.
unshare -m -- bash -euc '
    root=$1; shift
    mount --make-rprivate /
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    for m in "$@"; do
        mount --bind "${m%%:*}" "$root${m#*:}"
        mount -o remount,ro,bind "$root${m#*:}"
    done
    exec chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root /work/check.sh
' check "$oldroot" "${mounts[@]}"
