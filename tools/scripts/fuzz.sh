#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer) of everything that reads untrusted bytes.
#
#   tools/scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Targets (tests/fuzz/fuzz_targets): jfr_chunks, symbolize_pipeline, elf_reader, merge,
# agent_options, otlp_endpoint, memory_image; all of them by default, each for SECONDS_PER_TARGET (default
# $FUZZ_SECONDS, else 300), one after the other: one fuzzer process at a time, under nice.
# Installs the nightly toolchain and cargo-fuzz if missing (rustup and cargo must be there).
# Prints one line per target: executions, seconds, coverage (libFuzzer's final cov: and ft:),
# corpus size, crashes; exits 1 if any target crashed (its input is under
# tests/fuzz/artifacts/TARGET/). The corpora grow in tests/fuzz/corpus/ (not committed),
# seeded from tests/fuzz/seeds/, the golden recordings, and small ELF files made here.
#
# Environment: FUZZ_SECONDS (default time), FUZZ_SANITIZER (none by default: the code under test
# is safe Rust; `address` for ASan, slower), FUZZ_NICE (15), FUZZ_RSS_MB (1536: an input that
# makes the process use more is a finding), FUZZ_TIMEOUT (10 s for one input).
# FUZZ_SEED: libFuzzer's seed (random by default). CI runs a fixed seed, so that its short run
# walks the same inputs as a longer run of that seed made before it landed: a new finding shows
# in a long run (random seeds), never as a CI run that fails by chance.
# CI: FUZZ_SECONDS=10 FUZZ_SEED=1 tools/scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
fuzz_dir=tests/fuzz
all=(jfr_chunks symbolize_pipeline elf_reader merge agent_options otlp_endpoint memory_image)

seconds=${FUZZ_SECONDS:-300}
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")
for t in "${targets[@]}"; do
    [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (${all[*]})" >&2; exit 2; }
done
sanitizer=${FUZZ_SANITIZER:-none}
nice_cmd=(nice -n "${FUZZ_NICE:-15}")
# Never the network: no debuginfod requests from the symbolizer.
unset DEBUGINFOD_URLS

# The toolchain.
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    "${nice_cmd[@]}" cargo install cargo-fuzz --locked
fi

# Seed corpora: the committed seeds, and what is made here from the repository and the system.
corpus=$fuzz_dir/corpus
libs=$fuzz_dir/corpus/libs
mkdir -p "$corpus" "$libs"
for t in "${all[@]}"; do
    mkdir -p "$corpus/$t"
    if [[ -d $fuzz_dir/seeds/$t ]]; then cp -n "$fuzz_dir/seeds/$t"/* "$corpus/$t/"; fi
done
bash "$fuzz_dir/make_seeds.sh" "$corpus"

# Release with debug assertions and overflow checks (cargo fuzz's default), every target.
"${nice_cmd[@]}" cargo +nightly fuzz build --fuzz-dir "$fuzz_dir" -s "$sanitizer"

max_len() {
    case $1 in
        elf_reader) echo 262144 ;;
        agent_options | otlp_endpoint) echo 4096 ;;
        *) echo 65536 ;;
    esac
}

failed=0
summary=()
for t in "${targets[@]}"; do
    log=$fuzz_dir/corpus/$t.log
    mkdir -p "$fuzz_dir/artifacts/$t"
    started=$SECONDS
    set +e
    JFR_FUZZ_LIBS=$root/$libs "${nice_cmd[@]}" cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" \
        -s "$sanitizer" "$t" "$corpus/$t" -- \
        -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout="${FUZZ_TIMEOUT:-10}" \
        -rss_limit_mb="${FUZZ_RSS_MB:-1536}" -print_final_stats=1 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
        -artifact_prefix="$fuzz_dir/artifacts/$t/" >"$log" 2>&1
    status=$?
    set -e
    # libFuzzer's own time when it finished ("Done N runs in S second(s)"), else the wall time
    # (a crash, or a rebuild by cargo fuzz run included).
    secs=$(grep -ao 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o '[0-9]* second' | grep -o '[0-9]*' || true)
    [[ -n $secs ]] || secs=$((SECONDS - started))
    runs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -ao '[0-9]*$' || true)
    [[ -n $runs ]] || runs=$(grep -ao '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)
    cov=$(grep -ao 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$log" | tail -1 || true)
    crashes=0
    if [[ $status -ne 0 ]]; then
        crashes=1
        failed=1
    fi
    line="$t: ${runs:-?} executions in ${secs} s, ${cov:-cov: ?}, crashes: $crashes"
    if [[ $crashes -ne 0 ]]; then
        what=$(grep -a -m1 -A1 'panicked at' "$log" | tr '\n' ' ' | cut -c1-300 || true)
        [[ -n $what ]] || what=$(grep -a -m1 -E 'ERROR: libFuzzer|==[0-9]+==ERROR' "$log" || echo "exit $status")
        input=$(grep -ao 'Test unit written to .*' "$log" | tail -1 | sed 's/Test unit written to //')
        line+=" ($what; input ${input:-?}; log $log)"
    fi
    echo "$line"
    summary+=("$line")
done
echo "fuzz.sh: ${#targets[@]} target(s), ${seconds} s each:"
printf '  %s\n' "${summary[@]}"
exit $failed
