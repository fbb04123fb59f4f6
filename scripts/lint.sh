#!/usr/bin/env bash
# clang-tidy over the dev build's compile database (slow on 2 cores; not part of scripts/test.sh).
#   ./scripts/lint.sh [FILE ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/dev/compile_commands.json ] || cmake --preset dev >/dev/null
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files 'src/*.cc'); fi
clang-tidy -p build/dev --quiet "${files[@]}"
