// SPDX-License-Identifier: Apache-2.0
// Embedding throughput of a model of all-MiniLM-L6-v2's shape (6 blocks, embedding 384, 12 heads,
// feed-forward 1536, the bert-bge vocabulary of 30522 tokens; random weights from synth) in F32,
// F16 and Q8_0, at batch 1, 8 and 64 inputs of mixed lengths (8..128 tokens, [CLS]/[SEP]
// included, fixed seed), mean pooling with L2 normalization, on a 2-thread pool. Reports
// inputs/s (items_per_second) and tokens/s. Inputs are token ids: tokenization (~10+ MB/s) is
// not what this measures.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "encoder/embedding_runtime.h"
#include "format/model_file.h"
#include "serve/service.h"
#include "synth/synth_model.h"

namespace synapse {
namespace {

constexpr int kThreads = 2;

std::string bench_dir() {
  static const std::string dir = [] {
    std::string templ =
        (std::filesystem::temp_directory_path() / "synapse-embed-bench-XXXXXX").string();
    const char* made = ::mkdtemp(templ.data());
    return std::string(made != nullptr ? made : "/tmp");
  }();
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    std::filesystem::remove_all(bench_dir(), ec);
  }
} cleanup;

Embedder& minilm(TensorType type) {
  static std::map<TensorType, std::unique_ptr<EmbeddingRuntime>> models;
  auto& slot = models[type];
  if (slot) return slot->embedder();
  SynthOptions o;
  o.arch = "bert";
  o.n_embd = 384;
  o.n_layer = 6;
  o.n_head = 12;
  o.n_ff = 1536;
  o.n_ctx = 512;
  // The real bert-base-uncased vocabulary (30522 tokens) from the fixtures; the synthetic one
  // is too small for this shape.
  o.vocab_from = std::string(SYNAPSE_FIXTURES_DIR) + "/tokenizer/vocab/ggml-vocab-bert-bge.gguf";
  if (const char* env = std::getenv("SYNAPSE_FIXTURES"); env != nullptr) {
    o.vocab_from = std::string(env) + "/tokenizer/vocab/ggml-vocab-bert-bge.gguf";
  }
  o.type_embedding = type;
  o.type_attention = type;
  o.type_feed_forward = type;
  const std::string path = bench_dir() + "/minilm-" + std::string(tensor_type_name(type)) + ".gguf";
  if (const Status st = synthesize_model(o, path); !st.ok()) {
    std::fprintf(stderr, "synth: %s\n", st.to_string().c_str());
    std::abort();
  }
  auto file = open_model_file(path);
  auto embedder =
      EmbeddingRuntime::open(std::move(file).value(), kThreads, serve::serving_decoder_options());
  if (!embedder.ok()) {
    std::fprintf(stderr, "open: %s\n", embedder.status().to_string().c_str());
    std::abort();
  }
  slot = std::move(embedder).value();
  return slot->embedder();
}

// Inputs of 8..128 tokens: [CLS] random word-piece ids [SEP].
std::vector<std::vector<int32_t>> inputs(size_t n) {
  std::vector<std::vector<int32_t>> out;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  for (size_t i = 0; i < n; ++i) {
    const size_t len = 8 + next() % 121;
    std::vector<int32_t> ids = {101};
    while (ids.size() + 1 < len) ids.push_back(static_cast<int32_t>(1000 + next() % 29000));
    ids.push_back(102);
    out.push_back(std::move(ids));
  }
  return out;
}

void BM_Embed(benchmark::State& state, TensorType type) {
  Embedder& embedder = minilm(type);
  const auto batch = inputs(static_cast<size_t>(state.range(0)));
  size_t tokens = 0;
  for (const auto& s : batch) tokens += s.size();
  const EmbedOptions options{.pooling = PoolingType::kMean};
  for (auto _ : state) {
    auto r = embedder.embed_tokens(batch, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().to_string().c_str());
      return;
    }
    benchmark::DoNotOptimize(r->items.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  state.counters["tokens_per_second"] =
      benchmark::Counter(static_cast<double>(tokens) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["tokens_per_batch"] = static_cast<double>(tokens);
  state.counters["threads"] = kThreads;
}

BENCHMARK_CAPTURE(BM_Embed, f32, TensorType::kF32)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Embed, f16, TensorType::kF16)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Embed, q8_0, TensorType::kQ8_0)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace synapse

BENCHMARK_MAIN();
