#!/usr/bin/env bash
# What `synapse serve` keeps after large uploads (issue 22): starts a server on MODEL in a fresh
# state directory, uploads a SIZE_MB batch-input file to /v1/files N times in a row with curl, and
# prints RSS (VmRSS, KiB) before, after the first upload and after the last, as JSON.
#   scripts/upload-rss.sh build/release/src/cli/synapse MODEL.gguf [N=50] [SIZE_MB=50]
set -euo pipefail
synapse=$1 model=$2 n=${3:-50} size=${4:-50}
dir=$(mktemp -d)
python3 - "$dir/in.jsonl" "$size" <<'PY'
import sys
line = '{"custom_id":"%d","method":"POST","url":"/v1/completions","body":{"prompt":"%s","max_tokens":1}}\n'
target = int(sys.argv[2]) << 20
with open(sys.argv[1], "w") as f:
    i = 0; written = 0
    while written < target - 4096:
        s = line % (i, "x" * 3000); f.write(s); written += len(s); i += 1
PY
SYNAPSE_HOME=$dir "$synapse" serve -m "$model" --port 0 --max-body $(( (size + 8) << 20 )) --threads 1 \
  > "$dir/out" 2> "$dir/err" &
pid=$!
for _ in $(seq 100); do grep -q listening "$dir/out" 2>/dev/null && break; sleep 0.2; done
port=$(grep -o '127.0.0.1:[0-9]*' "$dir/out" | cut -d: -f2)
rss() { awk '/VmRSS/ {print $2}' /proc/$pid/status; }
echo "{\"before_kb\": $(rss)}"
for i in $(seq "$n"); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/files" \
    -F purpose=batch -F "file=@$dir/in.jsonl")
  [ "$code" = 200 ] || { echo "upload $i: HTTP $code" >&2; cat "$dir/err" >&2; break; }
  [ "$i" = 1 ] && first=$(rss)
done
last=$(rss)
echo "{\"uploads\": $n, \"size_mb\": $size, \"rss_after_first_kb\": $first, \"rss_after_last_kb\": $last, \"growth_kb\": $((last - first))}"
kill -TERM $pid; wait $pid || true
rm -rf "$dir"
