#!/usr/bin/env bash
# The fleet routes end to end, against real servers on 127.0.0.1: records the bundled demo with
# `jfrnative record -o DIR/ --upload` into
#   - an OpenTelemetry Collector (v0.165.0, built from the Collector's Go modules, cached), whose
#     own counters must say it accepted and sent every sample and refused, failed or dropped none;
#   - Grafana Pyroscope directly (/v1development/profiles), and through the Collector (its
#     otlp_http exporter), when a Pyroscope server binary is given as PYROSCOPE_BIN. Pyroscope is
#     then queried through its own API (the merged flame graph of the service over the
#     recording's time range): its total must be within 1 % of Σ samplingPeriod and lost CPU
#     time as the JDK's `jfr print --json` reads the chunk files (tools/scripts/jfr_cpu_total.py),
#     and it must hold the demo's native frames (mix, msort_with_tmp) under their Java callers;
#     its log must have no "profile rejected" about a profile's content (rejections because the
#     server is going away, "no segment writer instances available", are counted apart).
# Pyroscope's server cannot be built from the package registries this project uses (the Go module
# proxy refuses github.com/grafana/pyroscope/v2 and its dependency github.com/grafana/dskit at the
# pinned version): without PYROSCOPE_BIN the Pyroscope routes are not run, and the last line says
# why (the proxy's answer, asked now). With PYROSCOPE_BIN they must pass.
#
# usage: bash tools/scripts/fleet.sh [SECONDS]      (how long each recording runs; default 5)
# The last line says what each route delivered; the exit status is non-zero on any failure.
#
# FLEET_OUTAGE=START:LENGTH (seconds; needs PYROSCOPE_BIN) records only the direct route, with a
# chunk every 10 s, and stops Pyroscope START seconds into the recording for LENGTH seconds
# (then starts it again on the same data and ports): every chunk must still arrive, and the
# total over the whole range must be within 1 % of Σ samplingPeriod. For example
# `FLEET_OUTAGE=240:120 PYROSCOPE_BIN=... bash tools/scripts/fleet.sh 600`.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-5}
bash tools/scripts/setup.sh
# shellcheck source=/dev/null
. target/jdks.env
cargo build --release --quiet -p recorder -p tools
collector=$(bash tools/scripts/build-collector.sh)
bin=$PWD/target/release
work=$PWD/target/fleet
rm -rf "$work" && mkdir -p "$work"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -f "$work/pyroscope.pid" ] && kill "$(cat "$work/pyroscope.pid")" 2>/dev/null
    wait 2>/dev/null || true
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # URL SECONDS WHAT: until URL answers 200 with a body starting "ready" or any 200
    for _ in $(seq "$2"); do
        if curl -sf "$1" >/dev/null 2>&1; then return 0; fi
        sleep 1
    done
    echo "fleet: $3 did not come up" >&2
    return 1
}
failed=0
summary=()

# Grafana Pyroscope, single binary, everything on 127.0.0.1 (each ring's address pinned, no
# usage statistics, no self-profiling), v2 storage in the work directory.
pyroscope_url=""
outage=${FLEET_OUTAGE:-}
if [ -n "$outage" ] && [ -z "${PYROSCOPE_BIN:-}" ]; then
    echo "fleet: FLEET_OUTAGE needs PYROSCOPE_BIN" >&2
    exit 2
fi
start_pyroscope() { # starts Pyroscope with "${args[@]}", its pid in $work/pyroscope.pid
    (cd "$work" && exec "$PYROSCOPE_BIN" "${args[@]}" >>"$work/pyroscope.log" 2>&1) &
    echo $! >"$work/pyroscope.pid"
    for _ in $(seq 120); do
        [ "$(curl -s "$pyroscope_url/ready" 2>/dev/null)" = ready ] && return 0
        sleep 1
    done
    echo "fleet: Pyroscope ($PYROSCOPE_BIN) is not ready: see $work/pyroscope.log" >&2
    return 1
}
stop_pyroscope() {
    local pid
    pid=$(cat "$work/pyroscope.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 1; done
}
if [ -n "${PYROSCOPE_BIN:-}" ]; then
    http_port=$(free_port); grpc_port=$(free_port); raft_port=$(free_port); gossip_port=$(free_port)
    lo=".instance-addr=127.0.0.1"
    args=(-target=all -architecture.storage=v2
        -server.http-listen-address=127.0.0.1 "-server.http-listen-port=$http_port"
        -server.grpc-listen-address=127.0.0.1 "-server.grpc-listen-port=$grpc_port"
        -admin-server.http-listen-address=127.0.0.1
        -memberlist.bind-addr=127.0.0.1 -memberlist.advertise-addr=127.0.0.1
        "-memberlist.bind-port=$gossip_port" "-memberlist.advertise-port=$gossip_port"
        "-metastore.address=127.0.0.1:$grpc_port" "-query-backend.address=127.0.0.1:$grpc_port"
        "-metastore.raft.bind-address=127.0.0.1:$raft_port"
        "-metastore.raft.advertise-address=127.0.0.1:$raft_port"
        -query-frontend.instance-addr=127.0.0.1 -query-frontend.instance-interface-names=lo
        "-compactor.ring$lo" "-distributor.ring$lo" "-overrides-exporter.ring$lo"
        "-query-scheduler.ring$lo" "-store-gateway.sharding-ring$lo"
        -ingester.lifecycler.addr=127.0.0.1 -segment-writer.lifecycler.addr=127.0.0.1
        -compactor.ring.instance-interface-names=lo -distributor.ring.instance-interface-names=lo
        -ingester.lifecycler.interface=lo -segment-writer.lifecycler.interface=lo
        -overrides-exporter.ring.instance-interface-names=lo
        -query-scheduler.ring.instance-interface-names=lo
        -store-gateway.sharding-ring.instance-interface-names=lo
        -usage-stats.enabled=false -self-profiling.disable-push=true
        "-pyroscopedb.data-path=$work/pyroscope" "-storage.filesystem.dir=$work/pyroscope/v2/shared")
    pyroscope_url=http://127.0.0.1:$http_port
    start_pyroscope || exit 1
    echo "fleet: Pyroscope ($("$PYROSCOPE_BIN" -version 2>/dev/null | head -1)) at $pyroscope_url" >&2
else
    why=$(cd "$work" && go mod download -json github.com/grafana/pyroscope/v2@v2.2.1 2>&1 \
        | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Error","").splitlines()[0])' \
        2>/dev/null || true)
    pyroscope_skip="NOT RUN (no PYROSCOPE_BIN; the Go module proxy: ${why:-no answer})"
fi

# The Collector: otlp receiver; otlp_http to Pyroscope when there is one; debug (detailed).
col_port=$(free_port); metrics_port=$(free_port)
exporters="[debug]"
hop=""
if [ -n "$pyroscope_url" ]; then
    hop="  otlp_http/pyroscope:
    profiles_endpoint: $pyroscope_url/v1development/profiles
    compression: none
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false"
    exporters="[otlp_http/pyroscope, debug]"
fi
cat >"$work/collector.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$col_port
exporters:
$hop
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: detailed
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: $metrics_port
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: $exporters
YAML
"$collector" --feature-gates=service.profilesSupport "--config=file:$work/collector.yaml" \
    >"$work/collector.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$metrics_port/metrics" 30 "the Collector" || exit 1
collector_url=http://127.0.0.1:$col_port/v1development/profiles

# The bundled demo, built once (javac, cc) by a 1 s `jfrnative demo`.
"$bin/jfrnative" demo -d 1s --dir "$work/demo" >/dev/null 2>&1 \
    || { echo "fleet: jfrnative demo failed" >&2; exit 1; }
build=$work/demo/build
# record NAME URL: the demo, uploaded chunk by chunk to URL as service jfrnative-fleet-NAME.
chunk=$([ -n "$outage" ] && echo 10s || echo 2s)
record() {
    OTEL_SERVICE_NAME=jfrnative-fleet-$1 "$bin/jfrnative" record -o "$work/$1/" --chunk "$chunk" \
        --upload "$2" -- "$JDK25_HOME/bin/java" --enable-native-access=ALL-UNNAMED \
        "-Djava.library.path=$build" -cp "$build" JfrNativeDemo "$seconds" \
        >"$work/$1.out" 2>"$work/$1.err"
    grep "upload:" "$work/$1.err" >&2 || true
}
# expected NAME: Σ samplingPeriod and lost CPU time of the recording's chunk files, ns, as the
# JDK's own reader (`jfr print --json` of JDK 25) reads them: not our jfr-symbolize, which made
# what was sent.
expected() {
    python3 tools/scripts/jfr_cpu_total.py "$JDK25_HOME/bin/jfr" "$work/$1/" | cut -d' ' -f1
}
chunks() { find "$work/$1" -name '*.jfr' | wc -l; }

start_ms=$(($(date +%s) * 1000 - 60000))
if [ -n "$outage" ]; then
    # The direct route alone, through a Pyroscope outage.
    (sleep "${outage%%:*}"; echo "fleet: stopping Pyroscope for ${outage##*:} s" >&2
        stop_pyroscope; sleep "${outage##*:}"
        echo "fleet: starting Pyroscope again" >&2; start_pyroscope) &
    pids+=($!)
    record direct "$pyroscope_url/v1development/profiles"
    wait "${pids[-1]}"
else
    record collector "$collector_url"
    if [ -n "$pyroscope_url" ]; then
        record direct "$pyroscope_url/v1development/profiles"
    fi
fi
end_ms=$(($(date +%s) * 1000 + 60000))

# The Collector's own counters: every OTLP sample it accepted was sent by each exporter.
sleep 2
if [ -n "$outage" ]; then
    summary+=("collector NOT RUN (outage mode)")
else
curl -s "http://127.0.0.1:$metrics_port/metrics" >"$work/collector.metrics"
collector_line=$(python3 - "$work/collector.metrics" "$(chunks collector)" \
    "$work/collector.err" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def total(name, label=""):
    return sum(float(v) for k, v in re.findall(r"^(%s(?:\{[^}]*\})?) (\S+)$" % name, text, re.M)
               if label in k)
accepted = total("otelcol_receiver_accepted_profile_samples")
bad = {n: total("otelcol_" + n) for n in (
    "receiver_refused_profile_samples", "receiver_failed_profile_samples",
    "exporter_send_failed_profile_samples", "exporter_enqueue_failed_profile_samples")}
sent = {e: total("otelcol_exporter_sent_profile_samples", 'exporter="%s"' % e)
        for e in re.findall(r'otelcol_exporter_sent_profile_samples\{[^}]*exporter="([^"]+)"', text)}
err = open(sys.argv[3]).read()
m = re.search(r"upload: (\d+) chunk\(s\) sent", err)
sent_chunks = int(m.group(1)) if m else 0
ok = (accepted > 0 and not any(bad.values()) and sent and all(v == accepted for v in sent.values())
      and sent_chunks == int(sys.argv[2]) and "refused" not in err and "dropped" not in err)
dropped = int(sum(bad.values())) + int(sys.argv[2]) - sent_chunks
print("%s (%d of %s chunks, %d samples accepted, sent by %s, %d dropped)" % (
    "OK" if ok else "FAILED", sent_chunks, sys.argv[2], accepted,
    "/".join("%s %d" % (e, v) for e, v in sorted(sent.items())), dropped))
PY
)
case $collector_line in OK*) ;; *) failed=1 ;; esac
summary+=("collector $collector_line")
fi

# Pyroscope, each route: its merged flame graph of the service against the recording.
check_pyroscope() { # ROUTE RECORDING-NAME
    local expect got
    expect=$(expected "$2")
    for _ in $(seq 60); do
        python3 tools/scripts/pyroscope_query.py "$pyroscope_url" "jfrnative-fleet-$2" \
            "$start_ms" "$end_ms" >"$work/$2.pyroscope.json" 2>"$work/$2.pyroscope.err" || true
        got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' \
            "$work/$2.pyroscope.json" 2>/dev/null) || got=0
        [ "$got" -ge "$expect" ] && break
        sleep 2
    done
    "$bin/jfr-symbolize" -q "$work/$2/" --format json >"$work/$2.report.json"
    python3 tools/scripts/pyroscope_vs_report.py "$work/$2.report.json" \
        "$work/$2.pyroscope.json" >"$work/$2.compare.txt" 2>&1 || true
    { echo "fleet: $1: Pyroscope beside jfr-symbolize's report"; cat "$work/$2.compare.txt"; } >&2
    python3 - "$work/$2.pyroscope.json" "$expect" "$work/pyroscope.log" "$work/$2.err" \
        "$(chunks "$2")" <<'PY'
import json, re, sys
q = json.load(open(sys.argv[1])); expect = int(sys.argv[2])
log = open(sys.argv[3], errors="replace").read()
f = q["functions"]; total = q["total"]
problems = []
# Every chunk file sent (the uploader's own count; the Collector route's is checked above).
m = re.search(r"upload: (\d+) chunk\(s\) sent", open(sys.argv[4]).read())
chunks = int(sys.argv[5])
if not m or int(m.group(1)) != chunks:
    problems.append("%s of %d chunks sent" % (m.group(1) if m else "none", chunks))
if not expect or abs(total - expect) > 0.01 * expect:
    problems.append("total %d against %d" % (total, expect))
# The native frames under their Java callers: a stack that holds the Java method, then the JNI
# function, then the native frame, in that order from the root.
for native, java in (("mix", "JfrNativeDemo.checksum"), ("msort_with_tmp", "JfrNativeDemo.sort")):
    if not any(java in s["frames"] and native in s["frames"]
               and s["frames"].index(java) < s["frames"].index(native) for s in q["stacks"]):
        problems.append("no %s under %s" % (native, java))
# A rejection of the profile's content fails the route. A rejection because the server was going
# away (stopped for FLEET_OUTAGE: its segment writer gone, answered 500, retried by our client
# until it came back) is not about the profile: counted and shown, and the chunk count above
# says whether the retries delivered everything.
SERVER_AWAY = ("no segment writer instances available",)
rejected = [l for l in log.splitlines() if "profile rejected" in l]
away = [l for l in rejected if any(m in l for m in SERVER_AWAY)]
content = [l for l in rejected if l not in away]
if content:
    problems.append("Pyroscope logged %d 'profile rejected' about the profile: %s"
                    % (len(content), content[0][:300]))
if away:
    print("fleet: %d rejection(s) while Pyroscope was away (not about the profile)" % len(away),
          file=sys.stderr)
print("%s (%d chunks, total %.2f s = %.2f%% of samplingPeriod, %s, mix %.2f s, msort_with_tmp %.2f s%s)" % (
    "FAILED" if problems else "OK", chunks, total / 1e9, 100.0 * total / expect if expect else 0,
    q["profile_type"], f.get("mix", {}).get("cum", 0) / 1e9,
    f.get("msort_with_tmp", {}).get("cum", 0) / 1e9,
    "; " + "; ".join(problems) if problems else ""))
PY
}
if [ -n "$pyroscope_url" ]; then
    routes=(direct collector)
    [ -n "$outage" ] && routes=(direct)
    for route in "${routes[@]}"; do
        line=$(check_pyroscope "$route" "$route")
        case $line in OK*) ;; *) failed=1 ;; esac
        label=$([ "$route" = direct ] && echo "pyroscope direct" || echo "pyroscope via collector")
        summary+=("$label $line")
    done
else
    summary+=("pyroscope $pyroscope_skip")
fi
echo "fleet: $(IFS='|'; echo "${summary[*]}" | sed 's/|/ | /g')"
exit $failed
