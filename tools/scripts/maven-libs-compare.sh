#!/usr/bin/env bash
# jfr-native against async-profiler 4.5 on JNI libraries as Maven jars ship them (issue 39):
# testdata/mavenlibs/NativeLibs.java (snappy-java, lz4-java, zstd-jni with its own worker
# threads, sqlite-jdbc, netty-tcnative-boringssl-static, JNA, and on JDK 22+ an FFM critical
# downcall into a frameless library of ours deleted right after loading), each loader unpacking
# its .so into a temporary directory and deleting it at load or at exit.
#
# For JDK 17 and 25, RUNS times (default 3), DURATION seconds each (default 8), at 2 ms:
#   ours       `jfrnative record -i 2ms --threads all` (the agent, then jfr-symbolize)
#   ap-cpu     async-profiler `event=cpu,interval=2ms` (perf_events), JFR output
#   ap-itimer  async-profiler `event=itimer,interval=2ms`, JFR output
# and prints, per library, medians over the runs of: the samples that reach it, the share whose
# frames in it are all named, the share whose innermost frame in it is named, the share of the
# Java threads' samples in it with a whole Java stack; and each profiler's top 10 native
# functions. How each is counted: tools/scripts/maven_libs_compare.py. Each run's recordings and
# figures stay in OUT/jdkN/RUN/PROFILER/ (default OUT: target/maven-libs).
#
#   bash tools/scripts/maven-libs-compare.sh [OUT]
#   RUNS=6 DURATION=8 JDKS="25" bash tools/scripts/maven-libs-compare.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-target/maven-libs}")
runs=${RUNS:-3}
duration=${DURATION:-8}
jdks=${JDKS:-17 25}

[ -f target/jdks.env ] && grep -q MAVENLIBS_CP target/jdks.env || bash tools/scripts/setup.sh
# shellcheck disable=SC1091
. target/jdks.env
nice -n 10 cargo build --release --quiet -p recorder -p tools --lib --bins
target=${CARGO_TARGET_DIR:-$root/target}
jfrnative=$target/release/jfrnative
jfr=$JDK25_HOME/bin/jfr
py="python3 $root/tools/scripts/maven_libs_compare.py"

# The workload: NativeLibs for Java 17, CriticalDeleted for Java 22 (JDK 25's javac), our
# frameless library, and a PKCS12 key for the TLS part (JDK 17's keytool).
build=$out/build
rm -rf "$build" && mkdir -p "$build"
src=$root/testdata/mavenlibs
gcc -O2 -fomit-frame-pointer -shared -fPIC "$src/critical.c" -o "$build/libcritical.so"
"$JDK17_HOME/bin/javac" --release 17 -cp "$MAVENLIBS_CP" -d "$build" "$src/NativeLibs.java"
javac25=$JDK25_HOME/bin/javac
[ -x "$javac25" ] && "$javac25" --release 22 -d "$build" "$src/CriticalDeleted.java" \
    || echo "maven-libs-compare: no javac of JDK 25: the FFM critical part is left out" >&2
"$JDK17_HOME/bin/keytool" -genkeypair -keyalg RSA -keysize 2048 -alias tls -dname CN=localhost \
    -validity 3650 -storetype PKCS12 -keystore "$build/tls.p12" -storepass changeit \
    -keypass changeit 2>/dev/null

for major in $jdks; do
    home_var=JDK${major}_HOME
    java=${!home_var}/bin/java
    jvm_args=(-Dnativelibs.keystore="$build/tls.p12" -Dnativelibs.critical="$build/libcritical.so"
        -cp "$MAVENLIBS_CP:$build")
    [ "$major" -ge 22 ] && jvm_args=(--enable-native-access=ALL-UNNAMED "${jvm_args[@]}")
    for run in $(seq 1 "$runs"); do
        dir=$out/jdk$major/$run
        rm -rf "$dir" && mkdir -p "$dir/ours" "$dir/ap-cpu" "$dir/ap-itimer"
        echo "maven-libs-compare: JDK $major, run $run of $runs" >&2
        "$jfrnative" record -i 2ms --threads all -o "$dir/ours/rec.jfr" -- "$java" \
            "${jvm_args[@]}" NativeLibs "$duration" >"$dir/ours/stdout.txt" 2>"$dir/ours/stderr.txt"
        $py measure "$jfr" ours "$dir/ours/rec.symbolized.jfr" "$dir/ours/figures.json" \
            "$dir/ours/rec.jfr" "$build"
        for event in cpu itimer; do
            "$java" "-agentpath:$ASYNC_PROFILER_LIB=start,event=$event,interval=2ms,jfr,file=$dir/ap-$event/ap.jfr" \
                "${jvm_args[@]}" NativeLibs "$duration" >"$dir/ap-$event/stdout.txt" \
                2>"$dir/ap-$event/stderr.txt"
            $py measure "$jfr" ap "$dir/ap-$event/ap.jfr" "$dir/ap-$event/figures.json"
        done
    done
done
$py report "$out" | tee "$out/report.txt"
