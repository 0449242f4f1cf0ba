#!/usr/bin/env bash
# The scope above a leaf stub (issue 40, item 5): testdata/leafstub/StringBuilderDelete.java (the
# program of async-profiler's StringBuilderTest) on each JDK, with and without
# -XX:+DebugNonSafepoints, recorded at 1 ms by jfr-native (`jfrnative record`, symbolized) and by
# async-profiler 4.5 (`event=cpu`, collapsed output). Per run it prints, of the samples whose
# innermost frame is the arraycopy stub, the share whose stack has StringBuilder.delete between
# main and the stub (the inlined caller right), and the share with `main` at the bottom; medians
# over RUNS (default 3) runs of DURATION seconds (default 4). Files stay in OUT (default
# target/leaf-stub).
#
#   bash tools/scripts/leaf-stub-compare.sh [OUT]
#   JDKS="17 25" RUNS=5 bash tools/scripts/leaf-stub-compare.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-target/leaf-stub}")
runs=${RUNS:-3}
duration=${DURATION:-4}
jdks=${JDKS:-11 17 21 25}
[ -f target/jdks.env ] && grep -q JDK11_HOME target/jdks.env || bash tools/scripts/setup.sh
# shellcheck disable=SC1091
. target/jdks.env
nice -n 10 cargo build --release --quiet -p recorder -p tools --bins
target=${CARGO_TARGET_DIR:-$root/target}
rm -rf "$out" && mkdir -p "$out/build"
"$JDK17_HOME/bin/javac" --release 11 -d "$out/build" testdata/leafstub/StringBuilderDelete.java

# share FILE: of the collapsed stacks (frames separated by ';', weight last) whose leaf names
# arraycopy, the weighted share with StringBuilder.delete in the stack, and with main at the root.
share() {
    python3 - "$1" <<'PY'
import sys
total = delete = rooted = 0
for line in open(sys.argv[1]):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    if not stack:
        continue
    frames = [f.replace("/", ".") for f in stack.split(";")]
    if "arraycopy" not in frames[-1]:
        continue
    w = float(weight)
    total += w
    if frames[0].startswith("StringBuilderDelete.main"):
        rooted += w
        if any(f.startswith("java.lang.StringBuilder.delete") for f in frames):
            delete += w
print(f"{delete / total if total else 0:.3f} {rooted / total if total else 0:.3f} {total:.0f}")
PY
}

printf '%-4s %-20s %-6s %-8s %-8s %s\n' JDK mode run profiler delete rooted >"$out/runs.txt"
for major in $jdks; do
    home_var=JDK${major}_HOME
    java=${!home_var}/bin/java
    for mode in default DebugNonSafepoints; do
        flags=()
        [ "$mode" = DebugNonSafepoints ] && flags=(-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints)
        for run in $(seq 1 "$runs"); do
            dir=$out/jdk$major/$mode/$run
            mkdir -p "$dir"
            "$target/release/jfrnative" record -i 1ms -o "$dir/ours.jfr" -- "$java" "${flags[@]}" \
                -cp "$out/build" StringBuilderDelete "$duration" >"$dir/ours.out" 2>"$dir/ours.err"
            "$target/release/jfr-symbolize" -f collapsed -o "$dir/ours.collapsed" "$dir/ours.jfr" \
                2>/dev/null
            "$java" "${flags[@]}" \
                "-agentpath:$ASYNC_PROFILER_LIB=start,event=cpu,interval=1ms,collapsed,file=$dir/ap.collapsed" \
                -cp "$out/build" StringBuilderDelete "$duration" >"$dir/ap.out" 2>"$dir/ap.err"
            for p in ours ap; do
                read -r d r n < <(share "$dir/$p.collapsed")
                printf '%-4s %-20s %-6s %-8s %-8s %-8s %s\n' "$major" "$mode" "$run" "$p" "$d" "$r" "$n" \
                    | tee -a "$out/runs.txt"
            done
        done
    done
done
python3 - "$out/runs.txt" <<'PY' | tee "$out/report.txt"
import statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]).readlines()[1:]:
    jdk, mode, _, prof, d, r, n = line.split()
    rows[(jdk, mode, prof)].append((float(d), float(r), int(n)))
print("median over runs: share of arraycopy-leaf samples with StringBuilder.delete above the stub "
      "(main at the root), and the arraycopy-leaf samples per run")
print(f"{'JDK':<4} {'mode':<20} {'ours':>16} {'async-profiler':>16}")
for jdk, mode in sorted({(k[0], k[1]) for k in rows}, key=lambda k: (int(k[0]), k[1])):
    cells = []
    for prof in ("ours", "ap"):
        v = rows[(jdk, mode, prof)]
        cells.append(f"{statistics.median(x[0] for x in v):.3f} ({statistics.median(x[2] for x in v):.0f})")
    print(f"{jdk:<4} {mode:<20} {cells[0]:>16} {cells[1]:>16}")
PY
