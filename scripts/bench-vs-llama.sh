#!/usr/bin/env bash
# Side by side with llama.cpp on this machine: for each model, alternates `synapse bench` and
# `llama-bench` (prompt processing and generation, same threads and sizes) for a few rounds and
# prints one JSON line per run, then the median ratio per model and test. The machine is shared
# and noisy, so runs alternate and the ratio of medians is what to quote, beside the bandwidth
# `synapse bench` measures in the same run. llama.cpp is built outside the project tree (never
# committed); point LLAMA_BENCH at its llama-bench.
#   LLAMA_BENCH=../peer/llama.cpp/build/bin/llama-bench scripts/bench-vs-llama.sh MODEL.gguf...
# Environment: SYNAPSE (default build/release/src/cli/synapse), THREADS (2), ROUNDS (2),
# PROMPT (512), GEN (128), REPS (3), SYNAPSE_ISA (passed on to synapse: avx2 on an AVX-512
# machine stands in for an AVX2-only one; build llama.cpp with -DGGML_AVX512=OFF to match).
set -euo pipefail
cd "$(dirname "$0")/.."
synapse=${SYNAPSE:-build/release/src/cli/synapse}
llama=${LLAMA_BENCH:?set LLAMA_BENCH to the llama-bench of a llama.cpp build}
threads=${THREADS:-2} rounds=${ROUNDS:-2} prompt=${PROMPT:-512} gen=${GEN:-128} reps=${REPS:-3}
[ $# -gt 0 ] || { echo "usage: LLAMA_BENCH=... $0 MODEL.gguf..." >&2; exit 2; }
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for model in "$@"; do
  cat "$model" >/dev/null  # page cache: the first engine would otherwise pay the disk
  for round in $(seq "$rounds"); do
    echo "round $round/$rounds: $(basename "$model")" >&2
    "$synapse" bench -m "$model" -p "$prompt" -n "$gen" -r "$reps" --threads "$threads" --json |
      python3 -c '
import json, sys
r = json.load(sys.stdin)
for kind, n in (("pp", r["n_prompt"]), ("tg", r["n_gen"])):
    if n > 0:
        print(json.dumps({"engine": "synapse", "model": sys.argv[1], "test": "%s%d" % (kind, n),
                          "tokens_per_s": r[kind + "_tokens_per_s"], "isa": r["isa"],
                          "memory_read_gb_per_s": r["memory_read_gb_per_s"]}))
' "$(basename "$model")" | tee -a "$runs"
    "$llama" -m "$model" -p "$prompt" -n "$gen" -r "$reps" -t "$threads" -o json 2>/dev/null |
      python3 -c '
import json, sys
for t in json.load(sys.stdin):
    name = "pp%d" % t["n_prompt"] if t["n_gen"] == 0 else "tg%d" % t["n_gen"]
    print(json.dumps({"engine": "llama.cpp", "model": sys.argv[1], "test": name,
                      "tokens_per_s": t["avg_ts"]}))
' "$(basename "$model")" | tee -a "$runs"
  done
done
python3 - "$runs" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for model in dict.fromkeys(r["model"] for r in rows):
    for test in dict.fromkeys(r["test"] for r in rows if r["model"] == model):
        pick = lambda e: [r["tokens_per_s"] for r in rows
                          if r["model"] == model and r["test"] == test and r["engine"] == e]
        ours, theirs = pick("synapse"), pick("llama.cpp")
        if ours and theirs:
            print(json.dumps({"model": model, "test": test,
                              "synapse": statistics.median(ours),
                              "llama_cpp": statistics.median(theirs),
                              "ratio": round(statistics.median(ours) / statistics.median(theirs), 3)}))
EOF
