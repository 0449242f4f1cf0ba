#!/usr/bin/env bash
# The scope above a leaf stub (issue 40, item 5): testdata/leafstub/StringBuilderDelete.java (the
# program of async-profiler's StringBuilderTest) on each JDK, with and without
# -XX:+DebugNonSafepoints, recorded at 1 ms by jfr-native (`jfrnative record`, symbolized) and by
# async-profiler 4.5 (`event=cpu`, collapsed output). Per run it prints, of the samples whose
# innermost frame is the arraycopy stub, the share with the inlined caller right (the stub's Java
# caller, AbstractStringBuilder.shift, right under it), with StringBuilder.delete, and with `main`
# at the bottom; medians over RUNS (default 3) runs of DURATION seconds (default 4). Files stay in OUT (default
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
# arraycopy, the weighted shares: with the arraycopy's Java caller right under the stub
# (AbstractStringBuilder.shift, inlined into StringBuilder.delete: the scope a leaf call loses
# when its caller is written as the method alone), with StringBuilder.delete anywhere, and with
# main at the root; and the total weight.
share() {
    python3 - "$1" <<'PY'
import sys
total = caller = delete = rooted = 0
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
            if len(frames) > 1 and frames[-2].startswith("java.lang.AbstractStringBuilder.shift"):
                caller += w
shares = [x / total if total else 0 for x in (caller, delete, rooted)]
print(" ".join(f"{x:.3f}" for x in shares), f"{total:.0f}")
PY
}

printf '%-4s %-20s %-6s %-8s %-8s %-8s %-8s %s\n' JDK mode run profiler shift delete rooted weight \
    >"$out/runs.txt"
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
                read -r c d r n < <(share "$dir/$p.collapsed")
                printf '%-4s %-20s %-6s %-8s %-8s %-8s %-8s %s\n' "$major" "$mode" "$run" "$p" "$c" \
                    "$d" "$r" "$n" | tee -a "$out/runs.txt"
            done
        done
    done
done
python3 - "$out/runs.txt" <<'PY' | tee "$out/report.txt"
import statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]).readlines()[1:]:
    jdk, mode, _, prof, c, d, r, n = line.split()
    rows[(jdk, mode, prof)].append((float(c), float(d), float(r)))
print("medians over runs, of the samples whose leaf is the arraycopy stub: the share with")
print("AbstractStringBuilder.shift (inlined into StringBuilder.delete) right under the stub /")
print("with StringBuilder.delete / with main at the root")
print(f"{'JDK':<4} {'mode':<20} {'ours':>20} {'async-profiler':>20}")
for jdk, mode in sorted({(k[0], k[1]) for k in rows}, key=lambda k: (int(k[0]), k[1])):
    cells = []
    for prof in ("ours", "ap"):
        v = rows[(jdk, mode, prof)]
        cells.append(" / ".join(f"{statistics.median(x[i] for x in v):.2f}" for i in range(3)))
    print(f"{jdk:<4} {mode:<20} {cells[0]:>20} {cells[1]:>20}")
PY
