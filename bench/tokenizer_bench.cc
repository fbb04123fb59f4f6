// SPDX-License-Identifier: Apache-2.0
// Tokenizer throughput on one thread: the whole of War and Peace (3.2 MB) encoded in one call, as
// llama.cpp's figures in fixtures/README.md were measured (qwen2 2.23 MB/s, llama-spm 0.93 MB/s),
// and its ids decoded back to text. The counter `MB` (a rate: MB/s) is input megabytes (10^6 bytes)
// per second for encoding and output megabytes per second for decoding. Each encode starts from an
// empty scratch, so the word cache is built inside the timed call.
//
//   build/release/bench/tokenizer_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "format/gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace synapse {
namespace {

std::string fixtures_dir() {
  const char* dir = std::getenv("SYNAPSE_FIXTURES");
  return dir != nullptr ? dir : SYNAPSE_SOURCE_DIR "/../shared/fixtures";
}

const std::string& corpus() {
  static const std::string text = [] {
    std::ifstream in(fixtures_dir() + "/text/en_war_and_peace.txt", std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return text;
}

// Loads a fixture vocabulary once; null (the benchmark skips) when it is missing.
const tokenizer::Tokenizer* load(const std::string& vocab_file) {
  static std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> cache;
  auto& slot = cache[vocab_file];
  if (!slot) {
    auto file = GgufFile::open(fixtures_dir() + "/tokenizer/vocab/" + vocab_file);
    if (!file.ok()) return nullptr;
    auto tok = tokenizer::Tokenizer::from_gguf(file->metadata());
    if (!tok.ok()) return nullptr;
    slot = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  }
  return slot.get();
}

void add_rate(benchmark::State& state, size_t bytes) {
  state.counters["MB"] = benchmark::Counter(static_cast<double>(bytes) / 1e6,
                                            benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void BM_Encode(benchmark::State& state, const std::string& vocab_file) {
  const tokenizer::Tokenizer* tok = load(vocab_file);
  if (tok == nullptr || corpus().empty()) {
    state.SkipWithError("fixture missing (set SYNAPSE_FIXTURES)");
    return;
  }
  std::vector<tokenizer::TokenId> ids;
  ids.reserve(corpus().size());
  for (auto _ : state) {
    tokenizer::EncodeScratch scratch;
    ids.clear();
    tok->encode(corpus(), {.add_special = false}, scratch, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["tokens"] = static_cast<double>(ids.size());
  add_rate(state, corpus().size());
}

void BM_Decode(benchmark::State& state, const std::string& vocab_file) {
  const tokenizer::Tokenizer* tok = load(vocab_file);
  if (tok == nullptr || corpus().empty()) {
    state.SkipWithError("fixture missing (set SYNAPSE_FIXTURES)");
    return;
  }
  const std::vector<tokenizer::TokenId> ids = tok->encode(corpus(), {.add_special = false});
  size_t bytes = 0;
  for (auto _ : state) {
    auto text = tok->decode(ids);
    if (!text.ok()) {
      state.SkipWithError("decode failed");
      return;
    }
    bytes = text->size();
    benchmark::DoNotOptimize(text->data());
  }
  add_rate(state, bytes);
}

BENCHMARK_CAPTURE(BM_Encode, qwen2, std::string("qwen2-vocab.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama_spm, std::string("ggml-vocab-llama-spm.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama3, std::string("llama3-vocab.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, bert_bge, std::string("ggml-vocab-bert-bge.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, qwen2, std::string("qwen2-vocab.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, llama_spm, std::string("ggml-vocab-llama-spm.gguf"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace synapse

BENCHMARK_MAIN();
