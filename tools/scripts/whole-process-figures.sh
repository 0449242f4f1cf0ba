#!/usr/bin/env bash
# The figures of `threads=all` (the whole process's CPU): an allocation loop under G1 and
# generational ZGC beside async-profiler 4.5, a JNI library's own pthreads, javac at 1 ms (the
# JIT compiler threads' share), and the overhead against Java threads only at 10 ms and 1 ms
# (interleaved). Long: about 6 minutes. Needs the set-up (target/jdks.env) and a release build.
#   bash tools/scripts/whole-process-figures.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. target/jdks.env
cargo build -q --release -p recorder -p tools
bin=$PWD/target/release
agent=$bin/libjfrnative.so
work=${1:-$(mktemp -d /tmp/jfrnative-whole.XXXXXX)}
mkdir -p "$work/classes"
java=$JDK25_HOME/bin/java
gcc -O2 -fno-omit-frame-pointer -shared -fPIC -I"$JDK25_HOME/include" -I"$JDK25_HOME/include/linux" \
  testdata/wholeproc/wholeproc.c -o "$work/classes/libwholeproc.so" -lz -lpthread
"$JDK25_HOME/bin/javac" -d "$work/classes" testdata/wholeproc/WholeProcess.java
run() { # NAME JVM-ARGS... -- PROGRAM-ARGS...
  local name=$1; shift
  local jvm=()
  while [ "$1" != "--" ]; do jvm+=("$1"); shift; done
  shift
  "$java" "${jvm[@]}" -Djava.library.path="$work/classes" -cp "$work/classes" WholeProcess "$@" \
    > "$work/$name.out" 2> "$work/$name.err"
}
shares() { # FILE: the top threads of our recording by CPU time
  "$bin/jfr-symbolize" "$1" --top 12 | sed -n '/^Threads by/,$p'
}
ap_shares() { # FILE: async-profiler's samples by thread
  "$java" -jar "$AP_CONVERTER_JAR" --threads -o collapsed "$1" "$1.txt" > /dev/null
  awk '{ n = $NF; split($0, a, ";"); t = a[1]; sub(/ tid=.*/, "", t); s[t] += n; all += n }
       END { for (t in s) printf "%7.2f%% %8d  %s\n", 100 * s[t] / all, s[t], t }' "$1.txt" |
    sort -rn | head -12
}

for gc in G1 Z; do
  echo "== allocation loop, 2 threads, 6 s, -XX:+Use${gc}GC, 2 ms"
  run "alloc-$gc" -XX:+Use${gc}GC -Xmx256m \
    "-agentpath:$agent=file=$work/alloc-$gc.jfr,threads=all,interval=2ms" -- alloc 6
  grep 'threads=all:' "$work/alloc-$gc.err"
  shares "$work/alloc-$gc.jfr"
  echo "-- async-profiler 4.5 (event=cpu, 2 ms), same program"
  run "alloc-$gc-ap" -XX:+Use${gc}GC -Xmx256m \
    "-agentpath:$ASYNC_PROFILER_LIB=start,event=cpu,interval=2ms,jfr,file=$work/alloc-$gc-ap.jfr" -- alloc 6
  ap_shares "$work/alloc-$gc-ap.jfr"
done

echo "== a JNI library's own pthreads (prctl names, zlib), started after 1 s of a 6 s run"
run pthreads "-agentpath:$agent=file=$work/pthreads.jfr,threads=all" -- pthreads 6
grep WORKER "$work/pthreads.out"
grep 'threads=all:' "$work/pthreads.err"
shares "$work/pthreads.jfr"
echo "-- async-profiler 4.5"
run pthreads-ap "-agentpath:$ASYNC_PROFILER_LIB=start,event=cpu,interval=10ms,jfr,file=$work/pthreads-ap.jfr" -- pthreads 6
ap_shares "$work/pthreads-ap.jfr"

echo "== javac (java.util.concurrent and subpackages) at 1 ms, threads=all"
rm -rf "$work/src" && mkdir -p "$work/src" "$work/javac-classes"
(cd "$work/src" && unzip -q "$JDK25_HOME/lib/src.zip" 'java.base/java/util/concurrent/*')
find "$work/src" -name '*.java' > "$work/sources.txt"
"$java" "-agentpath:$agent=file=$work/javac.jfr,threads=all,interval=1ms" \
  -m jdk.compiler/com.sun.tools.javac.Main --patch-module java.base="$work/src/java.base" \
  -d "$work/javac-classes" @"$work/sources.txt" 2> "$work/javac.err" || true
grep 'threads=all:' "$work/javac.err"
shares "$work/javac.jfr"

for interval in 10ms 1ms; do
  echo "== overhead of threads=all against threads=java at $interval (interleaved)"
  "$bin/jfrnative-overhead" --java-home "$JDK25_HOME" --interval "$interval" --runs 5 \
    --options threads=all --baseline-options threads=java | sed -n '/overhead, interval/,$p'
done
