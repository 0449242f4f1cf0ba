#!/usr/bin/env bash
# What one 1 ms sampling interrupt costs on this machine before any profiler work (the floor
# under the perf engine's overhead at interval=1ms): runs testdata/interrupt_cost in each mode,
# interleaved, RUNS times (default 7), and prints per mode the median CPU time, signals per
# CPU-second and the median extra CPU per signal over the runs without any signal.
#   tools/scripts/interrupt_cost.sh [RUNS] [LOOPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-7}
loops=${2:-2000000000}
out=target/interrupt_cost
mkdir -p "$out"
gcc -O2 -Wall -o "$out/interrupt_cost" testdata/interrupt_cost/interrupt_cost.c
modes="none cpu-timer mono-timer perf-nosignal perf-refresh-1 perf-refresh-16 perf-sigtrap"
: >"$out/runs.txt"
for _ in $(seq "$runs"); do
    for mode in $modes; do
        # Exit 3: a mode this kernel does not support, left out.
        "$out/interrupt_cost" "$mode" "$loops" >>"$out/runs.txt" || [ $? -eq 3 ]
    done
done
python3 - "$out/runs.txt" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
by = {}
for mode, cpu, sigs, refresh_us in rows:
    by.setdefault(mode, []).append((float(cpu), int(sigs), float(refresh_us)))
base = statistics.median(c for c, _, _ in by["none"])
print(f"{'mode':16} {'CPU s':>8} {'signals/CPU-s':>14} {'extra us/signal':>16} {'refresh us':>11}")
for mode, runs in by.items():
    cpu = statistics.median(c for c, _, _ in runs)
    sigs = statistics.median(s for _, s, _ in runs)
    rate = sigs / cpu
    # Without a signal, the counter still overflows once per ms of CPU.
    events = sigs if sigs else (cpu * 1000 if mode == "perf-nosignal" else 0)
    extra = (cpu - base) * 1e6 / events if events else float("nan")
    refresh = statistics.median(r for _, _, r in runs)
    print(f"{mode:16} {cpu:8.3f} {rate:14.0f} {extra:16.1f} {refresh:11.2f}")
print(f"perf-nosignal: extra us per counter overflow (no signal sent); baseline {base:.3f} s")
print("refresh us: median time of one PERF_EVENT_IOC_REFRESH in the handler")
PY
