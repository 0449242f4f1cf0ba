#!/usr/bin/env bash
# Builds the agent (libjfrnative.so) and both CLIs (jfrnative, jfr-symbolize) for x86_64 Linux
# with glibc 2.17 or later, and copies them to target/portable/linux-x86_64/ (a fixed name: the
# Maven build picks target/portable/linux-*/libjfrnative.so).
#
# A normal `cargo build` links against this machine's glibc and needs its newest symbol versions
# (GLIBC_2.34 on Debian 12). Here Zig links against glibc 2.17's symbol versions instead
# (cargo-zigbuild, target x86_64-unknown-linux-gnu.2.17); tests/tests/portable.rs checks what
# the result needs.
#
# Installs what is missing, quickly skipped when present: Zig from PyPI (ziglang, in a virtual
# environment under ~/.cache/jfr-native) and cargo-zigbuild from crates.io (cargo install).
#
# Reproducible: the same commit and toolchain give the same bytes in any directory. The paths
# of the work tree, of the build directory, of Cargo's registry and of the Rust toolchain are
# remapped; SOURCE_DATE_EPOCH is the commit's time.
#
# Built from a copy of the work tree (its tracked and untracked, not ignored files, their times
# kept) at a fixed path, in a build directory of its own, both under ~/.cache/jfr-native: the
# remapping puts the work tree's path into RUSTFLAGS, and a new path (a fresh clone, as CI
# makes) would otherwise rebuild every dependency (5.5 min here, against 2 min for the
# workspace's own crates). The commit is named from the work tree (JFRNATIVE_COMMIT).
#
# Stripped: no debug information and no symbol table beyond the dynamic one (the agent's
# Agent_* entry points). The agent's own functions show as libjfrnative.so+offset in a profile
# of the agent itself, which a user rarely needs (a developer builds with cargo), and the files
# are an eighth of the size: 1.8 MB for the agent, not 14 MB. Keeping the symbol table alone
# (+0.4 MB for the agent, +1.2 MB for each CLI) would take binutils' objcopy after the link:
# Zig's linker drops the whole table when asked to drop debug information only.
#
# Environment: PORTABLE_TARGET_DIR (the build directory), PORTABLE_SRC (the copy of the work
# tree), PORTABLE_OUT (where the three files go), JFRNATIVE_CACHE (~/.cache/jfr-native).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

triple=x86_64-unknown-linux-gnu
glibc=2.17
ziglang_version=0.17.1
zigbuild_version=0.24.1
cache=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}
build_dir=${PORTABLE_TARGET_DIR:-$cache/portable-build}
src=${PORTABLE_SRC:-$cache/portable-src}
out=${PORTABLE_OUT:-$root/target/portable/linux-x86_64}
cargo_home=${CARGO_HOME:-$HOME/.cargo}

# Run from a test, Cargo's variables about the test's own package would make build scripts
# that watch them (ring's) rerun, and everything above them rebuild.
while read -r name; do
    case $name in
    CARGO_MANIFEST_* | CARGO_PKG_* | CARGO_CRATE_NAME | CARGO_BIN_* | CARGO_PRIMARY_PACKAGE | \
        CARGO_TARGET_TMPDIR | CARGO_TARGET_DIR) unset "$name" ;;
    esac
done < <(compgen -e)

venv=$cache/ziglang
if [ "$("$venv/bin/python" -m ziglang version 2>/dev/null)" != "$ziglang_version" ]; then
    echo "build-portable: installing Zig $ziglang_version from PyPI (ziglang) into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "ziglang==$ziglang_version"
fi
export PATH=$cargo_home/bin:$PATH
if ! command -v cargo-zigbuild >/dev/null; then
    echo "build-portable: installing cargo-zigbuild $zigbuild_version from crates.io" >&2
    cargo install -q --locked cargo-zigbuild --version "$zigbuild_version"
fi
# cargo-zigbuild runs `PYTHON -m ziglang` for zig: this venv's, not whichever python3 is first.
export CARGO_ZIGBUILD_PYTHON_PATH=$venv/bin/python

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)
fi
export SOURCE_DATE_EPOCH
# The commit, as tools/build.rs names it in a work tree (the copy has no .git).
if [ -z "${JFRNATIVE_COMMIT:-}" ] && hash=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null); then
    if [ -n "$(git -C "$root" --no-optional-locks status --porcelain --untracked-files=no)" ]; then
        hash+=-dirty
    fi
    export JFRNATIVE_COMMIT=$hash
fi

# The copy of the work tree at the fixed path: files that are gone are removed, the others
# copied only if their size or time differ, times kept (so Cargo rebuilds what changed only).
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$root" ls-files -z --cached --others --exclude-standard | python3 -c '
import os, shutil, sys
root, src = sys.argv[1], sys.argv[2]
names = {n for n in sys.stdin.buffer.read().decode().split("\0") if n and os.path.isfile(os.path.join(root, n))}
for dirpath, _, files in os.walk(src):
    for f in files:
        path = os.path.join(dirpath, f)
        if os.path.relpath(path, src) not in names:
            os.remove(path)
for n in names:
    a, b = os.path.join(root, n), os.path.join(src, n)
    sa = os.stat(a)
    try:
        sb = os.stat(b)
        if sb.st_size == sa.st_size and int(sb.st_mtime) == int(sa.st_mtime) and sb.st_mode == sa.st_mode:
            continue
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(b), exist_ok=True)
    shutil.copy2(a, b)
' "$root" "$src"
    build_root=$src
    # The copy is no git work tree: a repository above it ($HOME's own) must not be taken
    # for it by the build script, which names the commit from JFRNATIVE_COMMIT then.
    export GIT_CEILING_DIRECTORIES=$(dirname "$src")
else
    build_root=$root # a source tarball: built where it is
fi
cd "$build_root"
sysroot=$(rustc --print sysroot)
# The most specific prefix last: rustc applies the last --remap-path-prefix that matches.
# CARGO_ENCODED_RUSTFLAGS (separated by 0x1f): a path with a space stays one flag.
sep=$'\x1f'
remap="--remap-path-prefix=$cargo_home=/cargo$sep--remap-path-prefix=$sysroot=/rustc-sysroot"
remap+="$sep--remap-path-prefix=$build_root=/jfr-native$sep--remap-path-prefix=$build_dir=/build"
# The C compiled by build scripts (ring's) through zig cc: the same maps for __FILE__.
cmap="-ffile-prefix-map=$cargo_home=/cargo -ffile-prefix-map=$build_root=/jfr-native"
cmap+=" -ffile-prefix-map=$build_dir=/build"
encoded="$remap$sep-Clink-arg=-Wl,--build-id=sha1"
for flag in ${PORTABLE_RUSTFLAGS:-}; do encoded+="$sep$flag"; done
unset RUSTFLAGS
export CARGO_ENCODED_RUSTFLAGS=$encoded
export CFLAGS_${triple//-/_}="$cmap"
export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols

cargo zigbuild --release --locked -p recorder -p tools --lib --bin jfrnative --bin jfr-symbolize \
    --target "$triple.$glibc" --target-dir "$build_dir"

mkdir -p "$out"
for file in libjfrnative.so jfrnative jfr-symbolize; do
    cp "$build_dir/$triple/release/$file" "$out/$file.tmp"
    mv "$out/$file.tmp" "$out/$file"
done
echo "build-portable: $out (glibc $glibc+, x86_64)" >&2
