// SPDX-License-Identifier: Apache-2.0
// Sampling cost per token on a Qwen2-sized vocabulary (151936), the chain's variants and the
// log-probabilities. Run with --benchmark_format=json on the release preset.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "sample/logprobs.h"
#include "sample/portable_random.h"
#include "sample/sampler.h"

namespace synapse {
namespace {

constexpr int32_t kVocab = 151936;

// Bell-shaped logits (sum of four uniforms, scaled to a spread like a real model's: sd ~2.5) with
// a handful of clear favourites, as a language model's next-token row looks.
const std::vector<float>& logits() {
  static const std::vector<float> row = [] {
    PortableRandom random(1);
    std::vector<float> v(kVocab);
    for (float& x : v) {
      double s = 0.0;
      for (int i = 0; i < 4; ++i) s += random.next_unit();
      x = static_cast<float>((s - 2.0) * 4.3);
    }
    for (int i = 0; i < 8; ++i) v[random.next_u64() % kVocab] = 14.0f + static_cast<float>(i);
    return v;
  }();
  return row;
}

void run(benchmark::State& state, const SamplingParams& params) {
  Result<Sampler> sampler = Sampler::create(params, kVocab);
  if (!sampler.ok()) {
    state.SkipWithError(sampler.status().to_string().c_str());
    return;
  }
  const std::vector<float>& row = logits();
  for (auto _ : state) {
    Result<int32_t> token = sampler->sample(row);
    benchmark::DoNotOptimize(token);
    if (params.repeat_penalty != 1.0f) sampler->accept(*token);
  }
  state.SetItemsProcessed(state.iterations());
}

SamplingParams with_seed() {
  SamplingParams p;
  p.seed = 7;
  return p;
}

void BM_SampleDefault(benchmark::State& state) { run(state, with_seed()); }

void BM_SampleGreedy(benchmark::State& state) {
  SamplingParams p = with_seed();
  p.temperature = 0.0f;
  run(state, p);
}

void BM_SamplePenalties(benchmark::State& state) {
  SamplingParams p = with_seed();
  p.repeat_penalty = 1.1f;
  p.presence_penalty = 0.5f;
  p.logit_bias = {{100, -10.0f}, {200, 5.0f}};
  run(state, p);
}

// top-k off: top-p over the whole vocabulary (partial sorts of a growing prefix).
void BM_SampleTopPOnly(benchmark::State& state) {
  SamplingParams p = with_seed();
  p.top_k = 0;
  p.min_p = 0.0f;
  run(state, p);
}

// Every filter off: a draw from the softmax of the whole vocabulary.
void BM_SampleUnfiltered(benchmark::State& state) {
  SamplingParams p = with_seed();
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.0f;
  run(state, p);
}

void BM_Logprobs(benchmark::State& state) {
  const std::vector<float>& row = logits();
  const auto n_top = static_cast<int32_t>(state.range(0));
  for (auto _ : state) {
    Result<Logprobs> lp = compute_logprobs(row, 5, n_top);
    benchmark::DoNotOptimize(lp);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_SampleDefault);
BENCHMARK(BM_SampleGreedy);
BENCHMARK(BM_SamplePenalties);
BENCHMARK(BM_SampleTopPOnly);
BENCHMARK(BM_SampleUnfiltered);
BENCHMARK(BM_Logprobs)->Arg(0)->Arg(20);

}  // namespace
}  // namespace synapse

BENCHMARK_MAIN();
