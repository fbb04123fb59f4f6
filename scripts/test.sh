#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, checks formatting, builds the dev
# preset (Debug, AddressSanitizer + UndefinedBehaviorSanitizer), runs clang-tidy on the files
# changed since .ci/lint-base and every unit, golden and e2e test, the worker soak for 3 minutes,
# the threading tests (label `threads`) under ThreadSanitizer, then builds the fuzz preset
# (clang + libFuzzer) and runs each fuzz target for a bounded time. Fixtures come from
# $SYNAPSE_FIXTURES (default ../shared/fixtures); under CI=true a missing fixture fails the run
# instead of being skipped.
#   ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
./scripts/check-format.sh

cmake --preset dev >/dev/null
cmake --build --preset dev
./scripts/lint.sh --changed
ctest --preset dev --label-exclude 'slow|fuzz'
# The worker-process soak (label slow), bounded to 3 minutes here; 20 when run on its own.
SYNAPSE_SOAK_SECONDS=180 ctest --preset dev -L slow

# ThreadSanitizer on the tests of code whose threads meet (label `threads`: the service and its
# scheduler, the job worker, the worker supervisor, the thread pool); only those are built.
cmake --preset tsan >/dev/null
mapfile -t threads_tests < <(ctest --preset tsan -L threads -N | sed -n 's/^ *Test *#[0-9]*: //p')
cmake --build --preset tsan --target "${threads_tests[@]}"
ctest --preset tsan -L threads

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
ctest --preset fuzz
