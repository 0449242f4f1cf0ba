#!/usr/bin/env bash
# The figures of one recording with the JDK's own events (`--jdk-events`): javac at 1 ms with
# --jdk-events=profile, `attach --jdk-events` on a running JVM for 30 s, and the overhead with and
# without the JDK's recording at 10 ms (interleaved). Long: about 4 minutes. Needs the set-up
# (target/jdks.env) and a release build.
#   bash tools/scripts/jdk-events-figures.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. target/jdks.env
cargo build -q --release -p recorder -p tools
bin=$PWD/target/release
work=${1:-$(mktemp -d /tmp/jfrnative-jdk-events.XXXXXX)}
mkdir -p "$work"
java=$JDK25_HOME/bin/java

count() { # FILE TYPE...: RecordingFile's count of each type
  local file=$1; shift
  local counts; counts=$("$java" testdata/oracles/JfrCount.java --no-pcs --stacks 0 "$file")
  for t in "$@"; do
    printf '%s=%s ' "$t" "$(awk -v t="$t" '$1=="COUNT" && $2==t {print $3}' <<<"$counts" | head -1)"
  done
  echo
}

echo "== javac (java.util.concurrent and subpackages) at 1 ms, --jdk-events=profile"
rm -rf "$work/src" && mkdir -p "$work/src" "$work/classes"
(cd "$work/src" && unzip -q "$JDK25_HOME/lib/src.zip" 'java.base/java/util/concurrent/*')
find "$work/src" -name '*.java' > "$work/sources.txt"
"$bin/jfrnative" record -i 1ms --jdk-events=profile -o "$work/javac.jfr" -- "$java" \
  -m jdk.compiler/com.sun.tools.javac.Main --patch-module java.base="$work/src/java.base" \
  -d "$work/classes" @"$work/sources.txt" 2> "$work/javac.err" > "$work/javac.out" || true
grep -E "^jfrnative: one recording|left out" "$work/javac.out" || true
written=$(grep -o 'wrote [^:]*: [0-9]* samples' "$work/javac.err" | grep -o '[0-9]* samples' | head -1)
echo "agent wrote: $written"
count "$work/javac.jfr" jdk.CPUTimeSample jdk.GarbageCollection jdk.GCPhasePause \
  jdk.ObjectAllocationSample jdk.ClassLoad jdk.ClassDefine jdk.JavaMonitorEnter jdk.JavaMonitorWait \
  jdk.ThreadPark jdk.SafepointBegin jdk.ExecutionSample
ls -l "$work/javac.jfr" "$work/javac.symbolized.jfr" | awk '{print $5, $9}'

echo "== attach --jdk-events for 30 s to a running JVM (Burner: Java and JNI threads)"
tests_dir=$(ls -d target/release/build/*/out 2>/dev/null | head -1 || true)
burner=$(find /tmp -maxdepth 3 -name Burner.class -path '*jfrnative*' 2>/dev/null | head -1 || true)
if [ -n "$burner" ]; then
  dir=$(dirname "$burner")
  "$java" -Djava.library.path="$dir" -cp "$dir" Burner 40 b-java:java,b-native:native > /dev/null &
  pid=$!
  sleep 3
  "$bin/jfrnative" attach "$pid" -d 30s --jdk-events -o "$work/attach.jfr" > "$work/attach.out" 2>&1 || true
  wait "$pid" || true
  grep -E "^jfrnative: one recording" "$work/attach.out" || tail -3 "$work/attach.out"
  count "$work/attach.jfr" jdk.CPUTimeSample jdk.ThreadStart jdk.ObjectAllocationSample jdk.ExecutionSample
else
  echo "(no Burner.class built: run the tests once first)"
fi

echo "== overhead at 10 ms: the agent, with --jdk-events, and the JDK's recording alone"
"$bin/jfrnative-overhead" --java-home "$JDK25_HOME" --interval 10ms --runs 5 \
  --profiler agent --profiler agent-jdk-events --profiler jdk-events
