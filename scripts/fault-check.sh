#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Break the code on purpose, one fault at a time, and report which fault no test caught.
#   scripts/fault-check.sh [--build-dir DIR] [--timeout S] [--jobs N] [--baseline] [FAULT_ID...]
# Faults live in scripts/faults.txt; see docs/testing-faults.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SYNAPSE_FIXTURES="${SYNAPSE_FIXTURES:-$here/../../shared/fixtures}"
exec python3 "$here/fault_check.py" "$@"
