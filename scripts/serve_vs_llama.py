#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Serving throughput side by side with llama-server, over HTTP, on this machine.

For each concurrency level N, starts `synapse serve --parallel N` and `llama-server -np N` on the
same file with the same threads (one at a time, the order alternating by round), sends N
concurrent greedy /v1/completions requests whose prompts are token ids (the prompts
bench/serve_bench.cc uses: distinct per stream, so no prefix is shared), and prints one JSON line
per run: the aggregate completion tokens per second from the first request sent to the last
answer. Then the median per engine and level, Synapse's ratio to llama-server, and each engine's
speedup over its own single stream. Before each timed round both engines are warmed with N
streamed requests of the round's length, dropped once all have a token (warm_up). Each engine
runs its defaults otherwise (Synapse's KV cache is f32, llama-server's f16). llama.cpp is built
outside the project tree (never committed).

  LLAMA_SERVER=../peer/llama.cpp/build/bin/llama-server scripts/serve_vs_llama.py MODEL.gguf
  PEER=isolate scripts/serve_vs_llama.py MODEL.gguf   # against `synapse serve --isolate` instead

Environment: SYNAPSE (default build/release/src/cli/synapse), THREADS (2), ROUNDS (2),
PROMPT (64), GEN (128), LEVELS ("1 4 8 16"), N_VOCAB (151936: the Qwen2 vocabulary).
"""

import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def env_int(name, default):
    return int(os.environ.get(name, default))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_prompt(n, salt, n_vocab):
    # The same ids as serve_bench's bench_prompt().
    return [(i * 7919 + salt * 104729 + 17) % (n_vocab - 1000) + 500 for i in range(n)]


def post(port, body, timeout=600):
    request = urllib.request.Request(
        "http://127.0.0.1:%d/v1/completions" % port,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.load(answer)


def warm_up(port, level, tokens, n_vocab):
    """`level` streamed requests as long as the timed ones grow (prompt plus completion), all in
    flight at once, each dropped once every one has its first token: a dropped request is
    cancelled, and Synapse returns its KV pages to the pool rather than to the prefix cache, so
    the timed round runs on memory already touched -- as llama-server's does, which clears its
    whole KV cache at load -- and on step buffers already grown to the level. The same for both
    engines; serve_bench does the same in process."""
    first_tokens = threading.Barrier(level)
    errors = []

    def stream(i):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            body = {"prompt": bench_prompt(tokens, 900 + i, n_vocab), "max_tokens": 1000,
                    "temperature": 0, "stream": True}
            connection.request("POST", "/v1/completions", json.dumps(body),
                               {"Content-Type": "application/json"})
            answer = connection.getresponse()
            while True:  # to the first event, or a refusal's end
                line = answer.readline()
                if not line:
                    raise RuntimeError("HTTP %d before any token" % answer.status)
                if line.startswith(b"data:"):
                    break
            first_tokens.wait(timeout=600)
        except Exception as e:  # the timed round reports any real failure
            errors.append(repr(e))
            first_tokens.abort()
        finally:
            connection.close()

    workers = [threading.Thread(target=stream, args=(i,)) for i in range(level)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise RuntimeError("warm-up: %s" % errors[0])


def wait_healthy(port, process, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited with %d" % process.returncode)
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError("the server was not healthy within %d s" % seconds)


def command(engine, model, port, level, threads, state_dir):
    if engine in ("synapse", "isolate"):
        synapse = os.environ.get("SYNAPSE", os.path.join(ROOT, "build/release/src/cli/synapse"))
        # "isolate": the same server with the engine in a worker process (docs/serving.md).
        return [synapse, "serve", "-m", model, "--parallel", str(level), "--threads",
                str(threads), "--port", str(port), "--no-jobs", "--store", state_dir] + (
                    ["--isolate"] if engine == "isolate" else [])
    llama = os.environ["LLAMA_SERVER"]
    # -c is shared by the slots: 256 tokens each hold a prompt and its completion.
    return [llama, "-m", model, "-np", str(level), "-t", str(threads), "-c",
            str(256 * level), "--host", "127.0.0.1", "--port", str(port)]


def measure(engine, model, level, threads, prompt, gen, n_vocab):
    port = free_port()
    with tempfile.TemporaryDirectory() as state_dir:
        log = open(os.path.join(state_dir, "server.log"), "w")
        process = subprocess.Popen(command(engine, model, port, level, threads, state_dir),
                                   stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_healthy(port, process)
            warm_up(port, level, prompt + gen, n_vocab)
            tokens = [0] * level
            errors = []

            def stream(i):
                try:
                    body = {"prompt": bench_prompt(prompt, 100 + i, n_vocab), "max_tokens": gen,
                            "temperature": 0}
                    tokens[i] = post(port, body)["usage"]["completion_tokens"]
                except Exception as e:  # reported below, the run is not counted
                    errors.append(repr(e))

            workers = [threading.Thread(target=stream, args=(i,)) for i in range(level)]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            seconds = time.perf_counter() - t0
            if errors:
                raise RuntimeError("%s: %s" % (engine, errors[0]))
            return {"engine": engine, "concurrency": level, "tokens": sum(tokens),
                    "seconds": round(seconds, 3), "tokens_per_s": round(sum(tokens) / seconds, 2)}
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


def main():
    peer = "isolate" if os.environ.get("PEER") == "isolate" else "llama-server"
    if len(sys.argv) != 2 or (peer == "llama-server" and "LLAMA_SERVER" not in os.environ):
        print("usage: LLAMA_SERVER=.../llama-server %s MODEL.gguf\n"
              "       PEER=isolate %s MODEL.gguf" % (sys.argv[0], sys.argv[0]), file=sys.stderr)
        return 2
    model = os.path.abspath(sys.argv[1])
    threads, rounds = env_int("THREADS", 2), env_int("ROUNDS", 2)
    prompt, gen, n_vocab = env_int("PROMPT", 64), env_int("GEN", 128), env_int("N_VOCAB", 151936)
    levels = [int(x) for x in os.environ.get("LEVELS", "1 4 8 16").split()]
    with open(model, "rb") as f:  # page cache: the first engine would otherwise pay the disk
        while f.read(1 << 24):
            pass
    runs = []
    for r in range(rounds):
        engines = ["synapse", peer] if r % 2 == 0 else [peer, "synapse"]
        for level in levels:
            for engine in engines:
                run = measure(engine, model, level, threads, prompt, gen, n_vocab)
                run["round"] = r + 1
                print(json.dumps(run), flush=True)
                runs.append(run)

    def med(engine, level):
        return statistics.median(x["tokens_per_s"] for x in runs
                                 if x["engine"] == engine and x["concurrency"] == level)

    for level in levels:
        ours, theirs = med("synapse", level), med(peer, level)
        key = peer.replace("-", "_")
        print(json.dumps({
            "concurrency": level, "synapse": round(ours, 2), key: round(theirs, 2),
            "ratio": round(ours / theirs, 3),
            "synapse_speedup": round(ours / med("synapse", levels[0]), 2),
            key + "_speedup": round(theirs / med(peer, levels[0]), 2),
        }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
