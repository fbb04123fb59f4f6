#!/usr/bin/env bash
# The main job, on embedded defaults: installs what is missing, builds the release preset, writes a
# synthetic model and inspects it, then inspects MODEL.gguf when one is given (argument or
# $SYNAPSE_MODEL).
#   ./scripts/run-main.sh [MODEL.gguf]
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target synapse

synapse=build/release/src/cli/synapse
mkdir -p build/demo
"$synapse" --version
"$synapse" synth --arch llama --n-embd 256 --n-ff 768 --n-layer 2 --n-head 4 --n-head-kv 2 \
  --type f16 -o build/demo/synthetic-llama.gguf
"$synapse" inspect build/demo/synthetic-llama.gguf

model="${1:-${SYNAPSE_MODEL:-}}"
if [ -n "$model" ]; then
  "$synapse" inspect "$model"
fi
