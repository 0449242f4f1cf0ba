#!/usr/bin/env bash
# Measures Java stacks across boundaries (issue 23): runs the programs of testdata/boundaries
# (JNA callbacks on JDK 17 and 25; FFM downcalls, a critical downcall and an upcall on JDK 25;
# virtual threads remounted 40 and 120 frames deep under G1 and generational ZGC on JDK 21 and
# 25, and beside JDK 25's own sampler) with the agent at 2 ms, and prints for each thread or
# group: samples, share whose Java stack reaches the thread's root, share with no stack, share
# cut short but written as complete, native-leaf samples whole, upcall samples with libc's sort
# frames in place in the symbolized file, virtual-thread samples labelled as their thread, and
# the tick-by-tick comparison with the JDK's sampler; three threads contending for one lock on
# JDK 17 and 25, in C2 and in C1 code only (C1's monitorexit slow path, crossed since issue 30).
# The recordings are kept (paths printed).
# Also allocation-heavy threads under G1, Parallel and generational ZGC (alloc), and javac's
# main thread at 1 ms under G1 and ZGC (javac).
#   bash tools/scripts/boundaries.sh [AGENT.so] [jna] [ffm] [vthreads] [compare] [monitors] [alloc] [javac]
# AGENT.so: another agent library (default: this workspace's release build), e.g. an older
# build to measure "before" figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/setup.sh
# shellcheck disable=SC1091
source target/jdks.env
if [ $# -gt 0 ] && [[ $1 == *.so ]]; then
    JFRNATIVE_AGENT=$(realpath "$1")
    export JFRNATIVE_AGENT
    shift
fi
# The binary builds the agent and the tools (release) itself.
cargo run --quiet -p tests --bin boundaries -- "$@"
