#!/usr/bin/env bash
# clang-tidy with the project's checks (.clang-tidy) over the dev build's compile database.
#   ./scripts/lint.sh [FILE ...]        the given files, else every file under src/ (slow on 2
#                                       cores; findings are printed, not fatal)
#   ./scripts/lint.sh --changed [BASE]  the C++ files changed since BASE (default: the commit in
#                                       .ci/lint-base) that the dev build compiles; any finding in
#                                       them fails the run (scripts/test.sh runs this)
#
# --changed reports findings only in the changed files themselves: a changed .cc, and a changed
# header through the .cc of the same name (its own file, when the build has one) or any other
# changed .cc that includes it. Code that did not change is not held to checks added after it was
# written. .ci/lint-base names the last commit CI passed; a stale one only lints more files.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/dev/compile_commands.json ] || cmake --preset dev >/dev/null
tidy=(clang-tidy -p build/dev --quiet --extra-arg=-Wno-unknown-warning-option)

if [ "${1:-}" != "--changed" ]; then
  if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files 'src/*.cc'); fi
  exec "${tidy[@]}" "${files[@]}"
fi

base="${2:-$(tr -d '[:space:]' < .ci/lint-base)}"
if ! git cat-file -e "${base}^{commit}" 2>/dev/null; then
  echo "lint: base commit '$base' is not in this repository (.ci/lint-base)" >&2
  exit 2
fi
# Changed since the base, committed or not; deleted files left out.
mapfile -t changed < <(git diff --name-only --diff-filter=d "$base" -- '*.cc' '*.h')
mapfile -t compiled < <(python3 -c '
import json, os, sys
root = os.getcwd() + "/"
for entry in json.load(open("build/dev/compile_commands.json")):
    print(entry["file"].removeprefix(root))
' | sort -u)

declare -A in_build=()
for f in "${compiled[@]}"; do in_build["$f"]=1; done
declare -A sources=()
headers=()
for f in "${changed[@]}"; do
  case "$f" in
    *.cc) [ -n "${in_build[$f]:-}" ] && sources["$f"]=1 ;;
    *.h)
      headers+=("$f")
      own="${f%.h}.cc"
      [ -n "${in_build[$own]:-}" ] && sources["$own"]=1
      ;;
  esac
done
if [ ${#sources[@]} -eq 0 ]; then
  echo "lint: no C++ file the dev build compiles changed since ${base:0:12}"
  exit 0
fi

# Findings are reported for the translation unit's own file and, among headers, the changed ones.
filter='^$'
if [ ${#headers[@]} -gt 0 ]; then
  filter="$(printf '%s\n' "${headers[@]}" | sed 's/[.[\*^$+?(){}|]/\\&/g' | paste -sd'|')"
  filter="($filter)\$"
fi
echo "lint: clang-tidy on ${#sources[@]} file(s) changed since ${base:0:12}"
# clang-tidy counts the (suppressed) warnings of every header it read: that line is dropped.
set +e
printf '%s\n' "${!sources[@]}" | sort |
  xargs -P 2 -n 1 "${tidy[@]}" --header-filter="$filter" --warnings-as-errors='*' 2>&1 |
  grep -v -E '^[0-9]+ warnings? generated\.$'
status=${PIPESTATUS[2]}
set -e
if [ "$status" -ne 0 ]; then
  echo "lint: findings above (checks: .clang-tidy; run ./scripts/lint.sh FILE to see one file's)" >&2
  exit 1
fi
echo "lint: no findings"
