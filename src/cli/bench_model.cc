// SPDX-License-Identifier: Apache-2.0
// `synapse bench -m MODEL [-p 512] [-n 128] [-r 3] [--threads N] [--json]`: prompt processing
// (one sequence of -p tokens from an empty cache) and token generation (-n single-token decode
// steps from an empty cache), as llama-bench measures them; medians and spread over -r
// repetitions after one warm-up, the effective weight bandwidth of decode and its fraction of
// the memory read bandwidth measured in the same run, and peak RSS.
#include "cli/bench_model.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/cpu_info.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "kernels/kernel_selection.h"
#include "kernels/memory_bandwidth.h"
#include "runtime/engine.h"
#include "worker/process.h"

namespace synapse::cli {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct Stats {
  double median = 0.0, min = 0.0, max = 0.0;
};

Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  if (v.empty()) return s;
  s.min = v.front();
  s.max = v.back();
  const size_t n = v.size();
  s.median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

std::vector<int32_t> bench_tokens(size_t n, uint32_t n_vocab) {
  std::vector<int32_t> ids(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ids[i] = static_cast<int32_t>(x % n_vocab);
  }
  return ids;
}

// The process's peak resident memory so far (since the last reset_peak_rss).
double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

// Starts the peak again from the current resident memory (Linux 4.0+: "5" to
// /proc/self/clear_refs); false where that is not possible.
bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool written = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && written;
}

}  // namespace

int run_model_bench(const ModelBenchOptions& o) {
  RunOptions run = o.run;
  if (run.n_ctx == 0) {
    run.n_ctx = static_cast<uint32_t>(o.depth + std::max({o.n_prompt, o.n_gen, 1}));
  }
  Result<LoadedModel> loaded = load_model(run);
  if (!loaded.ok()) return fail(loaded.status());
  DecoderModel& model = *loaded->model;
  EngineConfig config;
  config.max_batch_tokens = static_cast<size_t>(std::max(o.batch, 1));
  Engine engine(model, config);
  const std::vector<int32_t> prompt =
      bench_tokens(static_cast<size_t>(std::max(o.n_prompt, 1)), model.n_vocab());
  const std::vector<int32_t> context = bench_tokens(static_cast<size_t>(o.depth), model.n_vocab());

  // A new sequence holding `depth` tokens of context, prefilled batch rows at a time (untimed).
  const auto new_sequence = [&]() -> Result<SeqId> {
    const SeqId seq = engine.new_sequence();
    StepOutput out;
    for (size_t at = 0; at < context.size(); at += config.max_batch_tokens) {
      const size_t n = std::min(config.max_batch_tokens, context.size() - at);
      const StepInput in{seq, std::span(context).subspan(at, n), LogitsWanted::kNone};
      const Status s = engine.step(std::span(&in, 1), out);
      if (!s.ok()) return s;
    }
    return seq;
  };
  const auto time_pp = [&]() -> Result<double> {
    SYN_ASSIGN_OR_RETURN(const SeqId seq, new_sequence());
    StepOutput out;
    const StepInput in{seq, prompt, LogitsWanted::kLast};
    const auto t = Clock::now();
    const Status s = engine.step(std::span(&in, 1), out);
    const double seconds = std::chrono::duration<double>(Clock::now() - t).count();
    (void)engine.release(seq);
    if (!s.ok()) return s;
    return static_cast<double>(prompt.size()) / seconds;
  };
  const auto time_tg = [&]() -> Result<double> {
    SYN_ASSIGN_OR_RETURN(const SeqId seq, new_sequence());
    StepOutput out;
    int32_t token = prompt[0];
    const auto t = Clock::now();
    for (int i = 0; i < o.n_gen; ++i) {
      const StepInput in{seq, std::span(&token, 1), LogitsWanted::kLast};
      const Status s = engine.step(std::span(&in, 1), out);
      if (!s.ok()) return s;
      token = greedy_token(out.last(0));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t).count();
    (void)engine.release(seq);
    return static_cast<double>(o.n_gen) / seconds;
  };

  // Memory bandwidth on the same threads, in the same run. Its 512 MiB buffer is the probe's,
  // not the model's: the peak resident memory reported is the larger of the peak before the
  // probe (the load) and the peak after it, started again once the buffer is gone.
  const double load_peak_rss = peak_rss_bytes();
  double bandwidth_gb_per_s = 0.0;
  {
    const BandwidthBuffer buffer(size_t{512} << 20);
    bandwidth_gb_per_s =
        measure_read_bandwidth(loaded->backend->kernels(), buffer, *loaded->pool, 5)
            .median_gb_per_s;
  }
  const bool peak_restarted = reset_peak_rss();

  std::vector<double> pp, tg;
  if (o.n_prompt > 0) {
    Result<double> warm = time_pp();
    if (!warm.ok()) return fail(warm.status());
    for (int r = 0; r < o.repetitions; ++r) {
      Result<double> v = time_pp();
      if (!v.ok()) return fail(v.status());
      pp.push_back(*v);
    }
  }
  if (o.n_gen > 0) {
    Result<double> warm = time_tg();
    if (!warm.ok()) return fail(warm.status());
    for (int r = 0; r < o.repetitions; ++r) {
      Result<double> v = time_tg();
      if (!v.ok()) return fail(v.status());
      tg.push_back(*v);
    }
  }
  const Stats pps = stats_of(pp), tgs = stats_of(tg);
  const double weight_bytes = static_cast<double>(model.weight_bytes_per_token());
  const double effective_gb_per_s = weight_bytes * tgs.median / 1e9;
  const double fraction = bandwidth_gb_per_s > 0 ? effective_gb_per_s / bandwidth_gb_per_s : 0.0;
  // Where the peak could not start again, the resident memory now stands in for the run's.
  const double rss = std::max(
      load_peak_rss,
      peak_restarted ? peak_rss_bytes() : static_cast<double>(worker::resident_bytes(::getpid())));
  const HParams& hp = model.hparams();

  if (o.json) {
    Json out;
    out["model"] = loaded->resolved.label;
    out["arch"] = hp.arch;
    out["backend"] = std::string(loaded->backend->name());
    // Beside every figure: which machine and kernels made it, so that figures from different
    // machines (or SYNAPSE_ISA stand-ins) are never compared blindly.
    const KernelSelection& selection = kernel_selection();
    out["cpu"] = CpuInfo::detect().model;
    out["isa"] = selection.table.variant;
    out["isa_best"] = std::string(isa_level_name(selection.best));
    out["isa_forced"] = selection.requested != selection.best || selection.vnni_off;
    out["threads"] = loaded->pool->size();
    out["n_prompt"] = o.n_prompt;
    out["n_gen"] = o.n_gen;
    out["depth"] = o.depth;
    out["cache_type"] = o.run.cache_type;
    out["repetitions"] = o.repetitions;
    out["pp_tokens_per_s"] = pps.median;
    out["pp_tokens_per_s_min"] = pps.min;
    out["pp_tokens_per_s_max"] = pps.max;
    out["tg_tokens_per_s"] = tgs.median;
    out["tg_tokens_per_s_min"] = tgs.min;
    out["tg_tokens_per_s_max"] = tgs.max;
    out["weight_bytes_per_token"] = model.weight_bytes_per_token();
    out["tg_weight_gb_per_s"] = effective_gb_per_s;
    out["memory_read_gb_per_s"] = bandwidth_gb_per_s;
    out["tg_bandwidth_fraction"] = fraction;
    out["peak_rss_bytes"] = rss;
    out["load_ms"] = loaded->load_ms;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("model %s (%s, %u blocks, embedding %u, vocabulary %u), %s, %s KV cache\n",
                loaded->resolved.label.c_str(), hp.arch.c_str(), hp.n_layer, hp.n_embd, hp.n_vocab,
                std::string(loaded->backend->name()).c_str(), o.run.cache_type.c_str());
    // llama-bench's names: "tg128 @ d4096" is 128 tokens generated after 4096 of context.
    const std::string at_depth = o.depth > 0 ? " @ d" + std::to_string(o.depth) : "";
    std::printf("  %-14s %12s %12s %12s\n", "test", "median t/s", "min t/s", "max t/s");
    if (o.n_prompt > 0) {
      const std::string test = "pp" + std::to_string(o.n_prompt) + at_depth;
      std::printf("  %-14s %12.2f %12.2f %12.2f\n", test.c_str(), pps.median, pps.min, pps.max);
    }
    if (o.n_gen > 0) {
      const std::string test = "tg" + std::to_string(o.n_gen) + at_depth;
      std::printf("  %-14s %12.2f %12.2f %12.2f\n", test.c_str(), tgs.median, tgs.min, tgs.max);
    }
    std::printf(
        "decode weight stream %.1f GB/s (%s per token) = %.0f%% of the %.1f GB/s memory read "
        "bandwidth measured now; peak RSS %s; load %.0f ms\n",
        effective_gb_per_s, human_bytes(model.weight_bytes_per_token()).c_str(), 100.0 * fraction,
        bandwidth_gb_per_s, human_bytes(static_cast<uint64_t>(rss)).c_str(), loaded->load_ms);
  }
  return kExitOk;
}

void add_model_bench_options(CLI::App* cmd, ModelBenchOptions& o) {
  cmd->add_option("-m,--model", o.run.model, "Model to benchmark (GGUF, package or store name)");
  add_store_option(cmd, o.run.store);
  cmd->add_option("--threads", o.run.threads, "Threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--activations", o.run.activations, "Matmul activations: quantized|f32")
      ->check(CLI::IsMember({"quantized", "f32"}));
  cmd->add_option("-p,--n-prompt", o.n_prompt, "Prompt tokens (pp test)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("-n,--n-gen", o.n_gen, "Generated tokens (tg test)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("-d,--depth", o.depth,
                  "Tokens already in the context before each test (untimed), as llama-bench -d")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  add_cache_type_option(cmd, o.run.cache_type);
  cmd->add_option("-r,--repetitions", o.repetitions, "Timed repetitions (after one warm-up)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("-b,--batch", o.batch, "Rows per forward pass in prompt processing")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--json", o.json, "Print one JSON object");
}

}  // namespace synapse::cli
