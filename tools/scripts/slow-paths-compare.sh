#!/usr/bin/env bash
# Whole Java stacks through the VM's slow paths (GC barriers, allocation, C1's monitor stubs, javac),
# and JVM stubs (arraycopy, vtable and itable stubs) as top frames,
# jfr-native beside async-profiler and JDK 25's own sampler, same fixtures, separate runs; the
# table of docs/comparison.md.
#   bash tools/scripts/slow-paths-compare.sh [seconds] [interval]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/setup.sh
# shellcheck disable=SC1091
source target/jdks.env
cargo build --release -p recorder -p tools --quiet
python3 tools/scripts/slow_paths_compare.py "${1:-6}" "${2:-2ms}"
