#!/usr/bin/env bash
# Stress harness: runs the stress program (testdata/stress/Stress.java) RUNS times with the agent
# at 1 ms, alternating JDK 17 and JDK 25 (and threads=java and threads=all), and shows that the agent never crashes or hangs the JVM.
#
#   tools/scripts/stress.sh [RUNS=100] [SECONDS=8]
#
# Each run, for SECONDS: 10000 short-lived threads, dlopen/dlclose churn from JNI, a GC storm in
# -Xmx64m, deoptimization storms, virtual threads (JDK 21+), StackOverflowErrors in Java and
# through JNI, and 10000 junk signals of the agent's signal (SIGRTMIN+5, given as signal=) sent
# to the JVM's threads by another process. A run fails on: an exit code other than 0, no
# "STRESS OK", a hang (still running after 4 x SECONDS + 60 s; or 30 s after a crash report), an
# hs_err_pid*.log (or HotSpot's fatal error banner without one: a crash report stuck on a lock),
# or a recording `jfr summary` cannot read. Failing runs keep their
# directory (stdout, stderr, hs_err, out.jfr; for a hang: thread dump and gdb backtraces) under
# $CARGO_TARGET_DIR/stress/<time>/ (target/stress/ by default); of a passing run only its stdout
# is kept (run-NNN-jdkM.stdout: what each part of the program did).
# Prints a table per JDK (runs, passes, crashes, hangs, other failures, median wall time; a crash
# whose report never ends, because it waits for a lock a crashed thread holds, counts as both) and
# exits 1 if any run failed.
#
# Environment: JDK17_HOME, JDK25_HOME (else target/jdks.env of tools/scripts/setup.sh, else the
# Debian and Temurin paths); AGENT (default: built with cargo build --release -p recorder);
# STRESS_SIGNALS (junk signals per run, default 10000; 0 runs without the sender),
# STRESS_THREADS (short-lived threads per run, default 10000); STRESS_JVM_ARGS (more JVM options,
# split on spaces, e.g. "-XX:+UseZGC" for generational ZGC on JDK 25).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

runs=${1:-100}
duration=${2:-8}
signals=${STRESS_SIGNALS:-10000}
threads=${STRESS_THREADS:-10000}
if ! [[ $runs =~ ^[1-9][0-9]*$ && $duration =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [RUNS] [SECONDS]" >&2
    exit 2
fi
limit=$((4 * duration + 60))
signal=$(kill -l SIGRTMIN+5)
target=${CARGO_TARGET_DIR:-$repo/target}

# ---------------------------------------------------------------- JDKs
for env in "$target/jdks.env" "$repo/target/jdks.env"; do
    if [[ -z "${JDK17_HOME:-}" || -z "${JDK25_HOME:-}" ]] && [[ -f $env ]]; then
        # shellcheck disable=SC1090
        source "$env"
    fi
done
jdks=()
for home in "${JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}" \
    "${JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"; do
    if [[ -x $home/bin/java && -x $home/bin/jfr ]]; then
        jdks+=("$home")
    else
        echo "note: no JDK at $home: its runs are skipped" >&2
    fi
done
if [[ ${#jdks[@]} -eq 0 ]]; then
    echo "no JDK found: set JDK17_HOME / JDK25_HOME or run tools/scripts/setup.sh" >&2
    exit 2
fi
major() { sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release"; }
javac_home=
for home in "${jdks[@]}"; do
    if [[ -z $javac_home && -x $home/bin/javac ]]; then javac_home=$home; fi
done
if [[ -z $javac_home ]]; then
    echo "no javac in ${jdks[*]}" >&2
    exit 2
fi

# ---------------------------------------------------------------- build
if [[ -z "${AGENT:-}" ]]; then
    cargo build --release -p recorder --quiet
    AGENT=$target/release/libjfrnative.so
fi
out=$target/stress/$(date +%Y%m%d-%H%M%S)
build=$out/build
mkdir -p "$out"
JAVA_HOME=$javac_home bash testdata/stress/build.sh "$build"
echo "agent $AGENT; $runs runs of $duration s; signal $signal ($signals junk signals per run);" \
    "$threads threads; limit $limit s; output in $out"

# ---------------------------------------------------------------- runs
# One line per run in $out/results: jdk-major outcome wall-seconds detail
results=$out/results
: >"$results"

# Thread dump and native backtraces of a hung JVM, into its directory.
dump_hung() {
    local pid=$1 dir=$2 jdk=$3
    timeout 30 "$jdk/bin/jcmd" "$pid" Thread.print >"$dir/threads.txt" 2>&1 || true
    if command -v gdb >/dev/null; then
        timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt" >"$dir/gdb.txt" 2>&1 || true
    fi
}

# HotSpot's fatal error banner; it comes before the hs_err file, which a report stuck on a lock
# (held by a thread that crashed) may never write.
banner='A fatal error has been detected by the Java Runtime Environment'
crash_reported() {
    compgen -G "$1/hs_err_pid*.log" >/dev/null || grep -qs "$banner" "$1/stdout" "$1/stderr"
}

run_one() {
    local i=$1 jdk=$2
    local m dir start pid rc=0 hung=0 outcome detail wall now
    m=$(major "$jdk")
    dir=$out/run-$(printf %03d "$i")-jdk$m
    mkdir -p "$dir"
    local sender=()
    # Every other run samples the whole process (threads=all: GC, JIT and VM threads too).
    local sampled=java
    if ((i % 2 == 1)); then sampled=all; fi
    if [[ $signals -gt 0 ]]; then
        sender=("sender=$build/sigsender" "signal=$signal" "signals=$signals")
    fi
    start=$(date +%s.%N)
    (
        cd "$dir"
        # shellcheck disable=SC2086 # STRESS_JVM_ARGS is split on purpose.
        exec "$jdk/bin/java" -Xmx64m -XX:-CreateCoredumpOnCrash ${STRESS_JVM_ARGS:-} \
            "-XX:ErrorFile=$dir/hs_err_pid%p.log" \
            "-agentpath:$AGENT=file=$dir/out.jfr,interval=1ms,signal=$signal,threads=$sampled" \
            "-Djava.library.path=$build" -cp "$build" \
            Stress "seconds=$duration" "threads=$threads" "${sender[@]}" \
            >"$dir/stdout" 2>"$dir/stderr" </dev/null
    ) &
    pid=$!
    local crashed_at=
    while kill -0 "$pid" 2>/dev/null; do
        now=$(date +%s.%N)
        if [[ -z $crashed_at ]] && crash_reported "$dir"; then
            crashed_at=$now
        fi
        if awk -v n="$now" -v s="$start" -v l="$limit" -v c="${crashed_at:-0}" \
            'BEGIN { exit !(n - s > l || (c > 0 && n - c > 30)) }'; then
            hung=1
            dump_hung "$pid" "$dir" "$jdk"
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    # (braces: no "Killed" line from the shell for a run it killed)
    { wait "$pid"; } 2>/dev/null || rc=$?
    wall=$(awk -v n="$(date +%s.%N)" -v s="$start" 'BEGIN { printf "%.1f", n - s }')

    local hs_err frame samples=0
    hs_err=$(compgen -G "$dir/hs_err_pid*.log" | head -1 || true)
    if [[ -n $hs_err ]]; then
        outcome=crash
        # The line after "# Problematic frame:", if the report got that far.
        frame=$(awk '/^# Problematic frame/ {
            if ((getline l) > 0 && l ~ /^# +[^ ]/) { sub(/^# +/, "", l); print l }
            exit }' "$hs_err")
        detail="$(basename "$hs_err"): ${frame:-(report incomplete)}"
    elif crash_reported "$dir"; then
        outcome=crash
        detail="fatal error on stdout, no hs_err file"
    elif [[ $hung -eq 1 ]]; then
        outcome=hang
        detail="still running after $limit s"
    elif [[ $rc -gt 128 ]]; then
        outcome=crash
        detail="killed by signal $((rc - 128))"
    elif [[ $rc -ne 0 ]]; then
        outcome=fail
        detail="exit code $rc: $(grep -m1 'STRESS FAILED' "$dir/stdout" || tail -1 "$dir/stderr")"
    elif ! grep -qx 'STRESS OK' "$dir/stdout"; then
        outcome=fail
        detail="no STRESS OK"
    elif ! "$jdk/bin/jfr" summary "$dir/out.jfr" >"$dir/summary.txt" 2>&1; then
        outcome=fail
        detail="jfr summary cannot read out.jfr: $(head -1 "$dir/summary.txt")"
    else
        samples=$(awk '$1 == "jdk.CPUTimeSample" { print $2 }' "$dir/summary.txt")
        if [[ ${samples:-0} -eq 0 ]]; then
            outcome=fail
            detail="no jdk.CPUTimeSample in out.jfr"
        else
            outcome=pass
            detail="$samples samples"
        fi
    fi
    if [[ $hung -eq 1 ]]; then
        # A crash whose report never ends (it waits for a lock a crashed thread holds) is both.
        if [[ $outcome == crash ]]; then outcome=crash+hang; fi
        detail="$detail; killed (threads.txt, gdb.txt)"
    fi
    echo "$m $outcome $wall $detail" >>"$results"
    printf 'run %3d/%d JDK %-3s %-5s %6s s  %s\n' "$i" "$runs" "$m" "$outcome" "$wall" "$detail"
    if [[ $outcome == pass ]]; then
        # What each part did, then the directory goes.
        mv "$dir/stdout" "$dir.stdout"
        rm -rf "$dir"
    fi
}

for ((i = 1; i <= runs; i++)); do
    run_one "$i" "${jdks[$(((i - 1) % ${#jdks[@]}))]}"
done

# ---------------------------------------------------------------- summary
# Runs among ROWS (lines of $results) whose outcome matches the regular expression OUTCOME.
count() { awk -v o="$2" '$2 ~ o' <<<"$1" | wc -l; }
# Median wall time of ROWS.
median() {
    awk '{ print $3 }' <<<"$1" | sort -n | awk '{ w[NR] = $1 } END {
        if (NR % 2) print w[(NR + 1) / 2]; else printf "%.1f\n", (w[NR / 2] + w[NR / 2 + 1]) / 2 }'
}
# The table: one row per JDK, then all runs.
summary() {
    local key rows name
    printf '%-7s %5s %7s %8s %6s %7s %12s\n' "" runs passes crashes hangs failed "median wall"
    for key in $(awk '{ print $1 }' "$results" | sort -un) all; do
        if [[ $key == all ]]; then
            rows=$(cat "$results") name=all
        else
            rows=$(awk -v k="$key" '$1 == k' "$results") name="JDK $key"
        fi
        printf '%-7s %5d %7d %8d %6d %7d %10s s\n' "$name" "$(wc -l <<<"$rows")" \
            "$(count "$rows" '^pass$')" "$(count "$rows" '^crash')" "$(count "$rows" 'hang$')" \
            "$(count "$rows" '^fail$')" "$(median "$rows")"
    done
}
echo
summary | tee "$out/summary.txt"
echo "(a crash whose report never ends counts as a crash and a hang: crash+hang above)"
failed=$(awk '$2 != "pass"' "$results" | wc -l)
if [[ $failed -gt 0 ]]; then
    echo "$failed of $runs runs failed; their directories are in $out"
    exit 1
fi
echo "all $runs runs passed"
rm -rf "$build"
