#!/usr/bin/env bash
# Records the demo program with JDK 25's own CPU-time sampler (jdk.CPUTimeSample, throttle =
# the interval) and with jfr-native in the same JVM, and prints both reports: what each
# profiler shows of the same CPU time.
#   bash tools/scripts/compare-jdk-sampler.sh [seconds] [interval]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-10}
interval=${2:-10ms}
bash tools/scripts/setup.sh
# shellcheck disable=SC1091
source target/jdks.env
cargo build --release -p recorder -p tools --quiet
out=target/compare
mkdir -p "$out"
# Builds the demo program (a 1 s run).
JAVA_HOME=$JDK17_HOME target/release/jfrnative demo -d 1s --dir "$out" >/dev/null 2>&1
cat > "$out/cpu-time-only.jfc" <<JFC
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="CPU time only">
  <event name="jdk.CPUTimeSample"><setting name="enabled">true</setting><setting name="throttle">$interval</setting></event>
  <event name="jdk.CPUTimeSamplesLost"><setting name="enabled">true</setting></event>
</configuration>
JFC
"$JDK25_HOME/bin/java" \
    "-XX:StartFlightRecording:settings=$out/cpu-time-only.jfc,filename=$out/jdk.jfr" \
    "-agentpath:$PWD/target/release/libjfrnative.so=file=$out/jfrnative.jfr,interval=$interval" \
    --enable-native-access=ALL-UNNAMED -Djava.library.path="$out/build" -cp "$out/build" \
    JfrNativeDemo "$seconds" >/dev/null 2>&1
echo "== JDK 25 jdk.CPUTimeSample ($("$JDK25_HOME/bin/java" -version 2>&1 | head -1))"
target/release/jfr-symbolize "$out/jdk.jfr" --top 6 | sed '/^Top stacks/,$d'
echo "== jfr-native, same JVM"
target/release/jfr-symbolize "$out/jfrnative.jfr" --top 6 | sed '/^Top stacks/,$d'
