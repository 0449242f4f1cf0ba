#!/usr/bin/env bash
# jfr-native against async-profiler 4.5 across JDKs, on five workloads:
#   burn            testdata/jdkmatrix/Burn.java: main in Math.sin/log/pow and System.arraycopy
#                   (HotSpot's stub routines) for DURATION seconds
#   ecj             the Eclipse compiler (org.eclipse.jdt:ecj:3.33.0 from Maven Central) compiling
#                   its own sources jar, `-11 -nowarn -proceedOnError`, again and again on main
#                   for DURATION seconds (testdata/jdkmatrix/EcjLoop.java: Main.main's work in a
#                   loop, one JVM)
#   jna             testdata/boundaries/JnaCalls.java (Debian's jna.jar): its four threads, each
#                   until it has used DURATION/2 s of CPU (four threads on two cores: about
#                   DURATION of wall time)
#   alloc-g1        testdata/boundaries/AllocStorm.java, two threads, -Xmx256m -XX:+UseG1GC
#   alloc-parallel  the same under -XX:+UseParallelGC
#
# For each JDK of JDKS (default "11 17 21 25") and case, RUNS times (default 3), at 2 ms:
#   ours  `jfrnative record -i 2ms` (the agent, then jfr-symbolize: jdk.CPUTimeSample)
#   ap    async-profiler `event=cpu,interval=2ms` (perf_events), JFR output (jdk.ExecutionSample)
# (PROFILERS, default "ours ap"; also `ours-dns`: ours with -XX:+UnlockDiagnosticVMOptions
# -XX:+DebugNonSafepoints, which async-profiler turns on in the JVMs it profiles; the agent
# turns the same on by its CompiledMethodLoad events, so the two differ only in that route)
# and prints, per JDK and case, medians over the runs of the workload threads' samples, the share
# with a whole Java stack, the share of Java frames with a known type, the agreement of the
# self-time histograms (innermost Java method) with async-profiler's and each side's top 5; then
# a summary table. How each is counted: tools/scripts/jdk_compare.py. Each run's recordings and
# figures stay in OUT/jdkN/CASE/RUN/PROFILER/ (default OUT: target/jdk-compare); a recording
# that fails leaves error.txt there (the report says so, the run goes on).
#
# ecj's two jars come with curl from Maven Central into ${JFRNATIVE_CACHE:-~/.cache/jfr-native}/ecj,
# checked against Central's .sha1 files: two fixed files, one of them a `sources` classifier jar
# that is not a dependency, so no pom and no Maven run is needed.
#
#   bash tools/scripts/jdk-compare.sh [OUT]
#   JDKS="17 25" RUNS=5 DURATION=8 CASES="burn ecj" bash tools/scripts/jdk-compare.sh
#   PROFILERS=ours-dns bash tools/scripts/jdk-compare.sh   (adds ours-dns to OUT's other runs)
#   MEASURE_ONLY=1 bash tools/scripts/jdk-compare.sh       (figures again from OUT's recordings)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-target/jdk-compare}")
runs=${RUNS:-3}
duration=${DURATION:-6}
jdks=${JDKS:-11 17 21 25}
cases=${CASES:-burn ecj jna alloc-g1 alloc-parallel}
profilers=${PROFILERS:-ours ap}
measure_only=${MEASURE_ONLY:-0}
jna_jar=/usr/share/java/jna.jar

[ -f target/jdks.env ] && grep -q ASYNC_PROFILER_LIB target/jdks.env || bash tools/scripts/setup.sh
# shellcheck disable=SC1091
. target/jdks.env
nice -n 10 cargo build --release --quiet -p recorder -p tools --lib --bins
target=${CARGO_TARGET_DIR:-$root/target}
jfrnative=$target/release/jfrnative
jfr=$JDK25_HOME/bin/jfr
py="nice -n 10 python3 $root/tools/scripts/jdk_compare.py"

# ecj and its sources, from Maven Central (cached, checked).
ecj_cache=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/ecj
central=https://repo1.maven.org/maven2/org/eclipse/jdt/ecj/3.33.0
mkdir -p "$ecj_cache"
for jar in ecj-3.33.0.jar ecj-3.33.0-sources.jar; do
    [ -f "$ecj_cache/$jar" ] && continue
    echo "jdk-compare: fetching $jar from Maven Central into $ecj_cache" >&2
    curl -fsSL -o "$ecj_cache/$jar.part" "$central/$jar"
    sha1=$(curl -fsSL "$central/$jar.sha1" | cut -c1-40)
    echo "$sha1  $ecj_cache/$jar.part" | sha1sum -c --quiet
    mv "$ecj_cache/$jar.part" "$ecj_cache/$jar"
done
ecj_jar=$ecj_cache/ecj-3.33.0.jar

# The workloads, compiled for Java 11 by JDK 17's javac (JDK 11's and 21's have none); ecj's
# sources unpacked (535 files; those needing Ant or OSGi fail to compile: -proceedOnError).
build=$out/build
if [ "$measure_only" = 1 ]; then build=$out/build-measure; fi
rm -rf "$build" && mkdir -p "$build/ecj-src"
javac=$JDK17_HOME/bin/javac
"$javac" --release 11 -d "$build" testdata/jdkmatrix/Burn.java testdata/boundaries/AllocStorm.java
"$javac" --release 11 -cp "$ecj_jar" -d "$build" testdata/jdkmatrix/EcjLoop.java
"$javac" --release 11 -cp "$jna_jar" -d "$build" testdata/boundaries/JnaCalls.java
unzip -q "$ecj_cache/ecj-3.33.0-sources.jar" -d "$build/ecj-src"
jna_seconds=$(awk -v d="$duration" 'BEGIN { print d / 2 }')

# workload CASE MAJOR DIR: the java arguments of CASE on JDK MAJOR into `args` (ecj writes its
# classes into DIR/ecj-out).
workload() {
    local case=$1 major=$2 dir=$3
    case $case in
        burn) args=(-cp "$build" Burn "$duration") ;;
        ecj) args=(-cp "$ecj_jar:$build" EcjLoop "$duration" -11 -nowarn -proceedOnError
            -d "$dir/ecj-out" "$build/ecj-src") ;;
        jna) args=(-cp "$jna_jar:$build" JnaCalls "$jna_seconds"
            jna-qsort,jna-crc32-direct,jna-crc32-iface,jna-clinit)
            if [ "$major" -ge 22 ]; then
                args=(--enable-native-access=ALL-UNNAMED "${args[@]}")
            fi ;;
        alloc-g1) args=(-Xmx256m -XX:+UseG1GC -cp "$build" AllocStorm "$duration" 2) ;;
        alloc-parallel) args=(-Xmx256m -XX:+UseParallelGC -cp "$build" AllocStorm "$duration" 2) ;;
        *) echo "jdk-compare: unknown case $case" >&2; exit 2 ;;
    esac
}

# record PROFILER CASE MAJOR DIR: one recording and its figures in DIR, or DIR/error.txt.
record() {
    local profiler=$1 case=$2 major=$3 dir=$4 home_var java file rc=0 kind=ours
    home_var=JDK${major}_HOME
    java=${!home_var}/bin/java
    workload "$case" "$major" "$dir"
    case $profiler in
        ours) ;;
        ours-dns) args=(-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints "${args[@]}") ;;
        ap) kind=ap ;;
        *) echo "jdk-compare: unknown profiler $profiler" >&2; exit 2 ;;
    esac
    if [ "$measure_only" = 1 ]; then
        file=$dir/$([ "$kind" = ours ] && echo rec.symbolized.jfr || echo ap.jfr)
        [ -f "$dir/error.txt" ] || [ ! -s "$file" ] ||
            $py measure "$jfr" "$kind" "$case" "$file" "$dir/figures.json" 2>"$dir/measure.txt"
        return 0
    elif [ "$kind" = ours ]; then
        file=$dir/rec.symbolized.jfr
        timeout $((duration * 10 + 120)) nice -n 10 "$jfrnative" record -i 2ms -o "$dir/rec.jfr" \
            -- "$java" "${args[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt" || rc=$?
    else
        file=$dir/ap.jfr
        timeout $((duration * 10 + 120)) nice -n 10 "$java" \
            "-agentpath:$ASYNC_PROFILER_LIB=start,event=cpu,interval=2ms,jfr,file=$file" \
            "${args[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt" || rc=$?
    fi
    rm -rf "$dir/ecj-out"
    if [ "$rc" -ne 0 ] || [ ! -s "$file" ]; then
        { echo "exit $rc, $(basename "$file") $([ -s "$file" ] && echo present || echo missing);" \
            "stderr: $(tail -c 400 "$dir/stderr.txt" | tr '\n' ' ')"; } >"$dir/error.txt"
        echo "jdk-compare: $profiler failed: $(cat "$dir/error.txt")" >&2
        return 0
    fi
    $py measure "$jfr" "$kind" "$case" "$file" "$dir/figures.json" 2>"$dir/measure.txt" ||
        echo "measure failed: $(tail -c 400 "$dir/measure.txt" | tr '\n' ' ')" >"$dir/error.txt"
}

start=$(date +%s)
for major in $jdks; do
    for case in $cases; do
        for run in $(seq 1 "$runs"); do
            dir=$out/jdk$major/$case/$run
            echo "jdk-compare: JDK $major, $case, run $run of $runs ($(($(date +%s) - start)) s)" >&2
            for profiler in $profilers; do
                if [ "$measure_only" != 1 ]; then
                    rm -rf "${dir:?}/$profiler" && mkdir -p "$dir/$profiler"
                fi
                record "$profiler" "$case" "$major" "$dir/$profiler"
            done
        done
    done
done
echo "jdk-compare: recorded in $(($(date +%s) - start)) s" >&2
$py report "$out" | tee "$out/report.txt"
