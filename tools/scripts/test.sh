#!/usr/bin/env bash
# The README's test command: set up a fresh machine, then run every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/setup.sh
# shellcheck source=/dev/null
. target/jdks.env
export JFRNATIVE_REQUIRE_JDKS=1
cargo test --workspace --all-targets
cargo test --workspace --doc
