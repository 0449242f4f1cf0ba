#!/usr/bin/env bash
# The figures of docs/fleet.md for one recording: its OTLP export (jfr-symbolize -o X.otlp.pb)
# decoded by OpenTelemetry's official generated code (testdata/otlp/check_otlp.py, PyPI
# opentelemetry-proto 1.45 from tools/scripts/setup.sh), against Σ samplingPeriod (+ the lost
# CPU time) as `jfr print --json` reads the recording; native locations with a build-id; the
# hottest native and Java functions with their lines.
#   usage: tools/scripts/otlp_figures.sh RECORDING.jfr [JAVA_HOME]
set -euo pipefail
cd "$(dirname "$0")/../.."
recording=$1
java_home=${2:-${JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}}
python=${JFRNATIVE_OTLP_PYTHON:-${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/otlp-proto/bin/python}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
target/release/jfr-symbolize "$recording" -q -o "$out/export.otlp.pb"
"$python" testdata/otlp/check_otlp.py --locations "$out/export.otlp.pb" >"$out/summary.json"
"$java_home/bin/jfr" print --json --events jdk.CPUTimeSample,jdk.CPUTimeSamplesLost \
    "$recording" >"$out/jfr.json"
python3 - "$out/summary.json" "$out/jfr.json" "$out/export.otlp.pb" <<'PY'
import json, os, re, sys

summary = json.load(open(sys.argv[1]))[0]
events = json.load(open(sys.argv[2]))["recording"]["events"]

def iso_ns(d):
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", d)
    h, mi, s = m.groups()
    return round(((int(h or 0) * 60 + int(mi or 0)) * 60 + float(s or 0)) * 1e9)

period = sum(iso_ns(e["values"]["samplingPeriod"]) for e in events if e["type"] == "jdk.CPUTimeSample")
lost = sum(iso_ns(e["values"].get("lostCpuTime") or "PT0S") for e in events if e["type"] == "jdk.CPUTimeSamplesLost")
samples = sum(1 for e in events if e["type"] == "jdk.CPUTimeSample")
p = summary["profiles"][0]
expected = period + lost
print(f"rules broken: {len(summary['errors'])}")
print(f"samples: {samples}; OTLP total {p['total']} ns; jfr print: Σ samplingPeriod {period} ns + lost {lost} ns = {expected} ns; "
      f"difference {100.0 * (p['total'] - expected) / expected:+.4f} %")
print(f"native locations: {summary['native_locations']}, with a build-id: {summary['native_locations_with_build_id']}")
size = os.path.getsize(sys.argv[3])
print(f"export: {size} bytes, {size / max(samples, 1):.1f} bytes per sample")
locs = summary["locations"]
lines = {}
for l in locs:
    for x in l["lines"]:
        lines.setdefault(x["function"], set()).add((x["file"], x["line"]))
native = lambda f: any(l["mapping"] > 0 and any(x["function"] == f for x in l["lines"]) for l in locs)
flat = sorted(p["flat"].items(), key=lambda kv: -kv[1])
unnamed = sum(ns for f, ns in flat if f.startswith("0x"))
print(f"self CPU in native code without a name here (mapping + address only, for the backend): "
      f"{100.0 * unnamed / p['total']:.1f} %")
for kind, keep in (("native", True), ("Java", False)):
    print(f"hottest {kind} functions (self CPU, file:line of their locations):")
    shown = 0
    for f, ns in flat:
        if f.startswith("[") or f.startswith("0x") or native(f) != keep:
            continue
        where = sorted(lines.get(f, []), key=lambda t: (t[0] or "", t[1]))
        files = ", ".join(f"{os.path.basename(fi or '?')}:{li}" for fi, li in where[:3])
        print(f"  {100.0 * ns / p['total']:5.1f} %  {f}  ({files}{', ...' if len(where) > 3 else ''})")
        shown += 1
        if shown == 5:
            break
PY
