#!/usr/bin/env bash
# The main job: records the bundled Java + JNI program (testdata/java) with the agent,
# symbolizes the recording, writes a flame graph, and prints the report.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/setup.sh
# shellcheck disable=SC1091
source target/jdks.env
cargo build --release -p recorder -p tools --quiet
out=target/demo
mkdir -p "$out"
gcc -O2 -fno-omit-frame-pointer -shared -fPIC \
    -I"$JDK17_HOME/include" -I"$JDK17_HOME/include/linux" \
    testdata/java/burner.c -o "$out/libburner.so"
"$JDK17_HOME/bin/javac" --release 17 -d "$out" testdata/java/Burner.java
echo "demo: recording 3 s of two threads (one in JNI C code, one in Java) at 10 ms" >&2
"$JDK17_HOME/bin/java" \
    "-agentpath:$PWD/target/release/libjfrnative.so=file=$out/demo.jfr,interval=10ms" \
    -Djava.library.path="$out" -cp "$out" Burner 3 native-burner:native,java-burner:java
target/release/jfr-symbolize "$out/demo.jfr" -o "$out/demo-symbolized.jfr"
target/release/jfr-symbolize "$out/demo.jfr" -o "$out/demo-flame.svg"
echo
target/release/jfr-symbolize "$out/demo.jfr" --top 10
cat <<EOT

Files:
  $out/demo.jfr             the recording (native PCs + jdk.NativeLibrary events)
  $out/demo-symbolized.jfr  native frames in the stack traces: jfr print, jfr view, JDK Mission Control
  $out/demo-flame.svg       flame graph (open in a browser)
EOT
