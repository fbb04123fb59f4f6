#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a serving step's time goes, at each concurrency level: docs/serving.md's table.

For each level N, runs `serve_bench --only throughput --levels N` (N concurrent greedy streams in
process: 64-token prompts, 128-token completions) under `perf record -a` (every CPU, so the time a
core sits idle counts too), keeps the samples of the timed round -- the benchmark's own seconds up
to the last sample in a matrix-product kernel, so neither the load nor the warm-up round counts --
and sorts them into categories by symbol. Prints one JSON line per level: the level, tokens/s, the window's length and each
category's share of all CPU time in it. Needs `perf` (Debian's linux-perf) allowed to sample the
whole system (root, or kernel.perf_event_paranoid <= 0).

  scripts/step_profile.py MODEL.gguf                  # levels 1 8 32
  SYNAPSE_ISA=avx2 SYNAPSE_VNNI=0 LEVELS="8" scripts/step_profile.py MODEL.gguf

Environment: SERVE_BENCH (default build/release/bench/serve_bench), THREADS (2), LEVELS
("1 8 32"); SYNAPSE_ISA / SYNAPSE_VNNI pass through to the benchmark.
"""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MATMUL = re.compile(r"q8::|q4k::|nibbles|::dot<|dot_legacy|dot_interleaved|group_kernel|"
                    r"cover_groups|matmul|::tile|::dot_")
# First match wins, in this order.
CATEGORIES = [
    ("matmul kernels", MATMUL),
    ("attention", re.compile(r"attend|dot8|attention")),
    ("thread pool", re.compile(r"ThreadPool")),
    ("other ops and activation quantization",
     re.compile(r"quantize|prepare_column|swiglu|gelu|rms_norm|layer_norm|rope|sincos|::add|"
                r"softmax|expf|silu|::mul")),
]
SAMPLE = re.compile(r"\s*(\S+)\s+\d+\s+([\d.]+):\s+\S+\s+(.*)")


def categorize(comm, symbol, bench_comm):
    if comm == "swapper":
        return "idle"
    if comm != bench_comm:
        return "other processes"
    for name, pattern in CATEGORIES:
        if pattern.search(symbol):
            return name
    return "rest: sampling, the service loop, libc, the kernel"


def profile(model, level, bench, threads):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        run = subprocess.run(
            ["perf", "record", "-a", "-F", "1999", "-o", data, "--", bench, "--model", model,
             "--threads", str(threads), "--only", "throughput", "--levels", str(level)],
            capture_output=True, text=True, check=True)
        bench_json = json.loads(run.stdout)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym"],
                                capture_output=True, text=True, check=True)
    samples = []
    for line in script.stdout.splitlines():
        m = SAMPLE.match(line)
        if m:
            samples.append((m.group(1), float(m.group(2)), m.group(3)))
    timed = bench_json["throughput"][0]
    end = max((t for c, t, s in samples if MATMUL.search(s)), default=0.0)
    start = end - timed["seconds"]
    bench_comm = os.path.basename(bench)[:15]  # the kernel keeps 15 characters of a name
    counts = collections.Counter(
        categorize(c, s, bench_comm) for c, t, s in samples if start < t <= end)
    total = sum(counts.values())
    if total == 0:
        sys.exit(f"step_profile: no samples in the timed round at level {level}")
    return {
        "concurrency": level,
        "isa": bench_json.get("isa"),
        "tokens_per_s": timed["tokens_per_s"],
        "seconds": timed["seconds"],
        "shares_percent": {k: round(100.0 * v / total, 1) for k, v in counts.most_common()},
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    bench = os.environ.get("SERVE_BENCH", os.path.join(ROOT, "build/release/bench/serve_bench"))
    threads = int(os.environ.get("THREADS", "2"))
    for level in os.environ.get("LEVELS", "1 8 32").split():
        print(json.dumps(profile(sys.argv[1], int(level), bench, threads)), flush=True)


if __name__ == "__main__":
    main()
