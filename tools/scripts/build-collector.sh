#!/usr/bin/env bash
# Builds the OpenTelemetry Collector of the fleet tests (tools/fleet/collector: the Collector's own
# Go modules at v0.165.0, from the Go module proxy) into the cache, and prints its path. Go's module
# and build caches make a second run take seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/fleet/jfrnative-otelcol
mkdir -p "$(dirname "$out")"
(cd tools/fleet/collector && go build -trimpath -o "$out.tmp" . && mv "$out.tmp" "$out")
echo "$out"
