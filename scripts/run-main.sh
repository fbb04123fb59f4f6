#!/usr/bin/env bash
# The main job: installs what is missing, builds the release preset and serves a model over the
# OpenAI-compatible API on http://127.0.0.1:$PORT (default 8080): MODEL when given (argument or
# $SYNAPSE_MODEL: a GGUF, a package or a stored model's name), otherwise a small Qwen2-shaped
# model synthesized on the spot (random weights: the text is gibberish, the service is real).
# Prints curl examples, then serves until Ctrl-C (graceful shutdown). SYNAPSE_SERVE_ONCE=1
# stops after the examples (for scripts and CI).
#   ./scripts/run-main.sh [MODEL] [-- extra `synapse serve` options]
set -euo pipefail
cd "$(dirname "$0")/.."

preset="${SYNAPSE_PRESET:-release}"
SYNAPSE_SKIP_NPM=1 ./scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target synapse

synapse="build/$preset/src/cli/synapse"
port="${PORT:-8080}"
"$synapse" --version

model="${SYNAPSE_MODEL:-}"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then model="$1"; shift; fi
[ "${1:-}" = "--" ] && shift
extra=("$@")
if [ -z "$model" ]; then
  # Qwen2-like shape at a small size: 4 blocks, 512 wide, grouped-query attention, Q8_0
  # weights, 2048-token context; writes in about a second and serves at once.
  mkdir -p build/demo
  model=build/demo/synthetic-qwen2.gguf
  "$synapse" synth --arch qwen2 --n-embd 512 --n-ff 1408 --n-layer 4 --n-head 8 --n-head-kv 2 \
    --n-ctx 2048 --type q8_0 --name synthetic-qwen2 -o "$model"
  extra=(--chat-template chatml "${extra[@]}")  # the synthetic vocabulary has ChatML tokens
fi

log=$(mktemp)
"$synapse" serve -m "$model" --port "$port" "${extra[@]}" > >(tee "$log") &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server' INT TERM
for _ in $(seq 1 600); do
  grep -q "listening on" "$log" && break
  kill -0 $server 2>/dev/null || { wait $server; exit 1; }
  sleep 0.1
done
url=$(grep -o 'http://[^ ]*' "$log" | head -n1)
id=$(curl -s "$url/v1/models" ${SYNAPSE_API_KEY:+-H "Authorization: Bearer $SYNAPSE_API_KEY"} |
  sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
cat <<EOF

Try it (another terminal):

  curl -s $url/v1/completions -H 'Content-Type: application/json' \\
    -d '{"model": "$id", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0}'

  curl -sN $url/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model": "$id", "messages": [{"role": "user", "content": "Hello!"}], "stream": true}'

  curl -s $url/metrics

EOF
echo "example answer:"
curl -s "$url/v1/completions" -H 'Content-Type: application/json' \
  ${SYNAPSE_API_KEY:+-H "Authorization: Bearer $SYNAPSE_API_KEY"} \
  -d "{\"model\": \"$id\", \"prompt\": \"Once upon a time\", \"max_tokens\": 16, \"temperature\": 0}"
echo
rm -f "$log"
if [ "${SYNAPSE_SERVE_ONCE:-0}" = 1 ]; then
  kill -TERM $server
  wait $server
  exit 0
fi
echo "serving on $url; Ctrl-C stops"
wait $server
