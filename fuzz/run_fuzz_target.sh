#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time, as the `fuzz` CTest label does.
#   run_fuzz_target.sh FUZZER SEED_GENERATOR WORK_DIR DEFAULT_FIXTURES_DIR [DICT]
# The seeds are the generated ones plus every fixture GGUF under 2 MB from $SYNAPSE_FIXTURES
# (default DEFAULT_FIXTURES_DIR); under CI=true missing fixtures fail the run, otherwise they are
# skipped with a note. New inputs accumulate in WORK_DIR/corpus across runs; a crash leaves its
# input in WORK_DIR/artifacts and fails the run.
#   SYNAPSE_FUZZ_SECONDS   fuzzing time (default: $SYNAPSE_FUZZ_DEFAULT_SECONDS, which CTest sets
#                          per target, else 70)
#   SYNAPSE_FUZZ_ARGS      extra libFuzzer flags, e.g. "-jobs=2 -workers=2"
# Set per target by CTest: SYNAPSE_FUZZ_FIXTURE_SEEDS=none skips the fixture GGUF seeds (for
# targets that do not read GGUF input), SYNAPSE_FUZZ_MAX_LEN caps the input size.
set -euo pipefail

if [ $# -lt 4 ]; then
  echo "usage: $0 FUZZER SEED_GENERATOR WORK_DIR DEFAULT_FIXTURES_DIR [DICT]" >&2
  exit 2
fi
fuzzer=$1
seed_generator=$2
work_dir=$3
fixtures=${SYNAPSE_FIXTURES:-$4}
dict=${5:-}
seconds=${SYNAPSE_FUZZ_SECONDS:-${SYNAPSE_FUZZ_DEFAULT_SECONDS:-70}}
max_fixture_bytes=$((2 * 1024 * 1024))

seeds=$work_dir/seeds
corpus=$work_dir/corpus
artifacts=$work_dir/artifacts
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"

"$seed_generator" "$seeds"

if [ "${SYNAPSE_FUZZ_FIXTURE_SEEDS:-}" = "none" ]; then
  if [ ! -d "$fixtures" ] && [ "${CI:-}" = "true" ]; then
    echo "run_fuzz_target: fixtures directory $fixtures is missing (CI=true)" >&2
    exit 1
  fi
elif [ -d "$fixtures" ]; then
  count=0
  while IFS= read -r -d '' file; do
    # One flat directory: the fixture's relative path, slashes turned into underscores.
    relative=${file#"$fixtures"/}
    ln -s "$(realpath "$file")" "$seeds/fixture_${relative//\//_}"
    count=$((count + 1))
  done < <(find "$fixtures" -name '*.gguf' -type f -size -"${max_fixture_bytes}"c -print0 | sort -z)
  echo "run_fuzz_target: added $count fixture GGUFs under 2 MB from $fixtures"
elif [ "${CI:-}" = "true" ]; then
  echo "run_fuzz_target: fixtures directory $fixtures is missing (CI=true)" >&2
  exit 1
else
  echo "run_fuzz_target: fixtures directory $fixtures not found, fixtures skipped" \
       "(set SYNAPSE_FIXTURES); fuzzing from generated seeds only"
fi

dict_flag=()
if [ -n "$dict" ]; then dict_flag=(-dict="$dict"); fi
if [ -n "${SYNAPSE_FUZZ_MAX_LEN:-}" ]; then dict_flag+=(-max_len="$SYNAPSE_FUZZ_MAX_LEN"); fi

echo "run_fuzz_target: fuzzing $(basename "$fuzzer") for ${seconds}s"
# libFuzzer caps inputs at 1 MB unless -max_len says otherwise, so fixtures above that are fuzzed
# from their first megabyte; that measured more coverage per second than -max_len=2097152.
export SYNAPSE_FIXTURES="$fixtures"  # targets that load fixtures read the same folder
status=0
# shellcheck disable=SC2086  # SYNAPSE_FUZZ_ARGS is a list of flags
"$fuzzer" "$corpus" "$seeds" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 "${dict_flag[@]}" ${SYNAPSE_FUZZ_ARGS:-} \
  || status=$?
if [ "$status" -ne 0 ]; then
  echo "run_fuzz_target: $(basename "$fuzzer") failed (exit $status); the input is in" \
       "$artifacts/; reproduce with: $fuzzer $artifacts/<crash-file>" >&2
fi
exit "$status"
