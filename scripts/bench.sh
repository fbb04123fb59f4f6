#!/usr/bin/env bash
# Builds the release preset and runs every benchmark, printing Google Benchmark JSON to stdout
# (progress and build output go to stderr).
#   ./scripts/bench.sh > bench.json
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh >&2
cmake --preset release >/dev/null
cmake --build --preset release >&2
for bench in build/release/bench/*_bench; do
  "$bench" --benchmark_format=json
done
