#!/usr/bin/env bash
# Throughput of durable jobs on PostgreSQL (docs/jobs-postgres.md, "Throughput"): the store's
# per-item overhead with no model, then items/s of 1 node against 3 nodes of
# `synapse serve --threads 1` on a tiny generated model (and 1 node on SQLite), each on a
# throwaway PostgreSQL server. Prints JSON lines ({"bench": ...}).
#
#   scripts/jobs-bench.sh [BUILD_DIR]        # default build/release (build it first:
#                                            #   ninja -C build/release synapse jobs_cluster_e2e_test)
#   SYNAPSE_BENCH_JOBS=24 SYNAPSE_BENCH_ITEMS=32 SYNAPSE_BENCH_MAX_TOKENS=8   # the node load
#   SYNAPSE_BENCH_STORE_JOBS=50                                              # the store load
#   SYNAPSE_BENCH_ONLY=store|cluster                                         # one of the two
set -euo pipefail
build="${1:-build/release}"
binary="$build/tests/jobs_cluster_e2e_test"
if [[ ! -x "$binary" ]]; then
  echo "jobs-bench: $binary is missing (ninja -C $build synapse jobs_cluster_e2e_test)" >&2
  exit 2
fi
# Figures taken while another speed run shares the CPUs mean nothing.
if pgrep -f kernels_bench >/dev/null || pgrep -f "synapse bench" >/dev/null; then
  echo "jobs-bench: another benchmark is running (kernels_bench or synapse bench); try later" >&2
  exit 3
fi
case "${SYNAPSE_BENCH_ONLY:-}" in
  store) filter='JobsClusterBench.DISABLED_StorePerItemOverhead' ;;
  cluster) filter='JobsClusterBench.DISABLED_ItemsPerSecond' ;;
  *) filter='JobsClusterBench.DISABLED_StorePerItemOverhead:JobsClusterBench.DISABLED_ItemsPerSecond' ;;
esac
echo "{\"bench\":\"jobs_env\",\"cpus\":$(nproc),\"build\":\"$build\",\"commit\":\"$(git rev-parse --short HEAD)\"}"
"$binary" --gtest_also_run_disabled_tests --gtest_filter="$filter" --gtest_color=no |
  grep '^{"bench"'
