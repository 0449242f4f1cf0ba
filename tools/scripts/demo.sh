#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing, builds the agent and the CLI, and
# runs `jfrnative demo`: the bundled Java + JNI program (hot paths in C, zlib and libc) recorded,
# symbolized and reported; the files are left in target/demo.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/setup.sh
# shellcheck disable=SC1091
source target/jdks.env
cargo build --release -p recorder -p tools --quiet
JAVA_HOME=$JDK17_HOME exec target/release/jfrnative demo --dir target/demo "$@"
