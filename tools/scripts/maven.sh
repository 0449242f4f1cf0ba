#!/usr/bin/env bash
# The Maven artifact io.github.jfrnative:jfr-native (issue 41): the Java API (io.jfrnative.JfrNative),
# the JMH profiler (io.jfrnative.jmh.JfrNativeProfiler) and the natives in the jar.
#
#   bash tools/scripts/maven.sh            install the artifact into ~/.m2 (`mvn install` at the
#                                          root), then build and test testdata/maven-api offline
#                                          against it: the JUnit tests of the Java API and the JMH
#                                          benchmark under the profiler (what tests/tests/maven_api.rs runs)
#   bash tools/scripts/maven.sh compare    also the comparison with async-profiler's Java API
#                                          (tools.profiler:async-profiler 4.5): lines a user writes,
#                                          start+stop cost (RUNS pairs, default 50)
#   JFRNATIVE_LIB=... [JFRNATIVE_SYMBOLIZER=...] [JFRNATIVE_BUILD=...] bash tools/scripts/maven.sh
#                                          the same, the natives chosen as below
#   bash tools/scripts/maven.sh natives DIR
#                                          what the artifact's build calls (tools/java/pom.xml,
#                                          generate-resources): the natives into DIR/linux-<arch>/
#
# The natives: JFRNATIVE_LIB (+ JFRNATIVE_SYMBOLIZER) if set (-Djfrnative.lib=...,
# -Djfrnative.symbolizer=... on mvn), else per JFRNATIVE_BUILD (-Djfrnative.build=...): `portable`
# runs tools/scripts/build-portable.sh and takes every target/portable/linux-*/, `release` runs
# `cargo build --release` and takes target/release's files for this machine's platform, `auto`
# (the default) is portable where that script exists, else release. Files are copied without
# their DWARF (symbol tables kept): 2 MB for the agent, 7 MB for jfr-symbolize.
#
# Leaves the test project's output in target/maven-api/ (OUT): the JMH run's output (jmh.txt),
# the profiler's files per benchmark (jmh/), the JUnit tests' recordings (junit/), the surefire
# reports, and with `compare`, compare.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}

mvn_flags=(-B -q -Dstyle.color=never)
# MAVEN_REPO_LOCAL: another local repository than ~/.m2/repository (a fresh machine's first run).
[ -z "${MAVEN_REPO_LOCAL:-}" ] || mvn_flags+=("-Dmaven.repo.local=$MAVEN_REPO_LOCAL")

case "$(uname -m)" in
    x86_64) platform=linux-x86_64 ;;
    aarch64) platform=linux-aarch64 ;;
    *) echo "maven.sh: no build for $(uname -m)" >&2; exit 2 ;;
esac

# Copies a native file without its DWARF (the symbol table stays: the agent's own frames are
# named in recordings of threads=all).
put() {
    mkdir -p "$(dirname "$2")"
    rm -f "$2"
    if command -v objcopy >/dev/null; then
        objcopy --strip-debug "$1" "$2"
    else
        cp "$1" "$2"
    fi
}

natives() {
    local out=$1 build=${JFRNATIVE_BUILD:-auto} name
    # Without the variables Cargo sets for a test about its package (when a cargo test runs this):
    # ring's build script reruns when they change, and a build then rebuilds the tools.
    for name in $(compgen -e); do
        case "$name" in
            CARGO_MANIFEST_*|CARGO_CRATE_NAME|CARGO_BIN_NAME|CARGO_PRIMARY_PACKAGE|CARGO_TARGET_TMPDIR|CARGO_PKG_*|CARGO_BIN_EXE_*)
                unset "$name" ;;
        esac
    done
    [ -n "$build" ] || build=auto
    rm -rf "$out"
    if [ -n "${JFRNATIVE_LIB:-}" ]; then
        echo "maven.sh: natives from $JFRNATIVE_LIB ${JFRNATIVE_SYMBOLIZER:-} ($platform)"
        put "$JFRNATIVE_LIB" "$out/$platform/libjfrnative.so"
        [ -z "${JFRNATIVE_SYMBOLIZER:-}" ] || put "$JFRNATIVE_SYMBOLIZER" "$out/$platform/jfr-symbolize"
        return
    fi
    if [ "$build" = auto ]; then
        if [ -f tools/scripts/build-portable.sh ]; then build=portable; else build=release; fi
    fi
    case "$build" in
        portable)
            bash tools/scripts/build-portable.sh
            local found=0 dir
            for dir in "$target"/portable/linux-*/; do
                [ -f "$dir/libjfrnative.so" ] || continue
                found=1
                put "$dir/libjfrnative.so" "$out/$(basename "$dir")/libjfrnative.so"
                [ ! -f "$dir/jfr-symbolize" ] || put "$dir/jfr-symbolize" "$out/$(basename "$dir")/jfr-symbolize"
            done
            [ "$found" = 1 ] || { echo "maven.sh: build-portable.sh left no $target/portable/linux-*/libjfrnative.so" >&2; exit 1; }
            ;;
        release)
            # As the tests build (tests/src/workload.rs): the same packages and targets, so that
            # feature unification does not rebuild the agent each time one alternates with the other.
            cargo build --release --quiet -p recorder -p tools --lib --bins
            put "$target/release/libjfrnative.so" "$out/$platform/libjfrnative.so"
            put "$target/release/jfr-symbolize" "$out/$platform/jfr-symbolize"
            ;;
        *)
            echo "maven.sh: jfrnative.build=$build: expected auto, portable or release" >&2
            exit 2
            ;;
    esac
    (cd "$out" && find . -type f -printf 'maven.sh: natives: %P %s bytes\n')
}

if [ "${1:-}" = natives ]; then
    natives "${2:?natives DIR}"
    exit 0
fi

command -v mvn >/dev/null || { echo "maven.sh: mvn not found (apt-get install maven)" >&2; exit 2; }
[ -f target/jdks.env ] || bash tools/scripts/setup.sh
# shellcheck disable=SC1091
. target/jdks.env

out=${OUT:-$target/maven-api}
rm -rf "$out"
mkdir -p "$out"

# The artifact, into ~/.m2 (online the first time: the plugins; then from the local repository).
seconds() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
start=$(date +%s%N)
mvn "${mvn_flags[@]}" install -Djfrnative.build="${JFRNATIVE_BUILD:-auto}" \
    -Djfrnative.lib="${JFRNATIVE_LIB:-}" -Djfrnative.symbolizer="${JFRNATIVE_SYMBOLIZER:-}"
echo "maven.sh: mvn install: $(seconds "$start") s"

# The test project, offline: everything it needs is in ~/.m2 after the artifact's install and
# setup.sh (junit-jupiter, jmh, async-profiler). Its tests find the build's jfr-symbolize and
# write under OUT.
project=testdata/maven-api
start=$(date +%s%N)
status=0
# Offline (-o) once the local repository has what the project needs; the first run on a machine
# fetches it (test-scope dependencies and surefire's JUnit provider, which no goal prefetches).
m2=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}
offline=(-o)
for need in org/junit/jupiter/junit-jupiter-engine/5.14.1 org/openjdk/jmh/jmh-generator-annprocess/1.37 \
    org/apache/maven/surefire/surefire-junit-platform/3.5.4 tools/profiler/async-profiler/4.5 \
    org/codehaus/mojo/exec-maven-plugin/3.6.3; do
    [ -d "$m2/$need" ] || offline=()
done
echo "maven.sh: $project: ${offline[*]:-online (first run: fetching its plugins and dependencies)}"
# Reports of an earlier run must not stand in for this one's.
rm -rf "$root/target/maven/maven-api/surefire-reports"
mvn "${mvn_flags[@]}" "${offline[@]}" -f "$project/pom.xml" verify \
    -Djfrnative.out="$out" -Djfrnative.compare="${1:-}" -Dcompare.runs="${RUNS:-50}" \
    >"$out/mvn.txt" 2>&1 || status=$?
echo "maven.sh: mvn verify ($project): $(seconds "$start") s, exit $status"
cp -r "$root/target/maven/maven-api/surefire-reports" "$out/" 2>/dev/null || true
if [ "$status" != 0 ]; then
    tail -n 80 "$out/mvn.txt" >&2
    exit "$status"
fi
if [ -f "$out/compare.txt" ]; then
    cat "$out/compare.txt"
fi
echo "maven.sh: all passed; output in $out"
