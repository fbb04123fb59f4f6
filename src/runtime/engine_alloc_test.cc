// SPDX-License-Identifier: Apache-2.0
// The engine's steady state allocates nothing: once the KV pool and the step buffers have grown
// to a workload, steps of that workload (prefill chunks, batched decode, page boundaries) make
// no heap allocation, on the calling thread or on the pool's. Counted by the test binary's
// replaced allocation functions (tests/support/allocation_counter.h).
#include <gtest/gtest.h>

#include <memory>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "runtime/engine.h"
#include "synth/synth_model.h"
#include "tests/support/allocation_counter.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

// A two-layer Qwen2-shaped Q8_0 model and an engine on it, KV pages of 16 tokens.
class EngineAllocations : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.arch = "qwen2";
    o.n_embd = 64;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.n_layer = 2;
    o.n_ctx = 256;
    o.type_attention = TensorType::kQ8_0;
    o.type_feed_forward = TensorType::kQ8_0;
    const std::string path = dir_.file("m.gguf");
    ASSERT_TRUE(synthesize_model(o, path).ok());
    auto model = DecoderModel::open(path, backend_);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = std::move(model).value();
    EngineConfig config;
    config.kv.page_tokens = 16;
    engine_ = std::make_unique<Engine>(*model_, config);
  }

  testing::TempDir dir_;
  ThreadPool pool_{2};
  CpuBackend backend_{selected_kernels(), pool_};
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineAllocations, StepsOfAWorkloadSeenBeforeAllocateNothing) {
  Engine& engine = *engine_;

  // One scenario twice: 8 sequences prefill 8 tokens each, then decode 72 steps together
  // (five page boundaries each). The first run grows the KV pool and the step buffers; the
  // second, on new sequences, must find everything in place.
  constexpr size_t kSequences = 8;
  const std::vector<int32_t> prompt = {11, 48, 85, 122, 159, 196, 233, 270};
  std::vector<std::vector<int32_t>> next(kSequences, std::vector<int32_t>(1));
  std::vector<StepInput> inputs;
  inputs.reserve(kSequences);
  StepOutput out;
  const auto scenario = [&]() -> uint64_t {
    std::vector<SeqId> sequences;
    for (size_t i = 0; i < kSequences; ++i) sequences.push_back(engine.new_sequence());
    uint64_t allocations = 0;
    const auto step = [&] {
      const uint64_t before = testing::allocation_count();
      const Status status = engine.step(inputs, out);
      allocations += testing::allocation_count() - before;
      EXPECT_TRUE(status.ok()) << status.to_string();
    };
    inputs.clear();
    for (size_t i = 0; i < kSequences; ++i) {
      inputs.push_back(StepInput{sequences[i], prompt, LogitsWanted::kLast});
    }
    step();
    for (size_t s = 0; s < 72; ++s) {
      inputs.clear();
      for (size_t i = 0; i < kSequences; ++i) {
        next[i][0] = static_cast<int32_t>((s * 7 + i * 13) % 200);
        inputs.push_back(StepInput{sequences[i], next[i], LogitsWanted::kLast});
      }
      step();
    }
    for (SeqId id : sequences) EXPECT_TRUE(engine.release(id).ok());
    return allocations;
  };
  const uint64_t growing = scenario();
  EXPECT_GT(growing, 0u) << "the counter sees the pool and buffers grow";
  const uint64_t warm = scenario();
  EXPECT_EQ(warm, 0u) << "allocations in the 73 steps of a scenario already run (the first run: "
                      << growing << ")";
}

// A service's steps vary in rows -- a prefill chunk beside however many sequences decode -- so
// the step buffers and the engine's row vectors meet a new largest row count step after step.
// Growing to each exactly made every buffer again each time (fresh memory, zeroed at its first
// touch: 2.5% of a 2-core machine's time at 8 streams); grown at least twofold from the 4 rows of
// the first steps, twelve steps of 9, 10, ..., 20 rows grow them at 9, 10 and 19 rows only.
TEST_F(EngineAllocations, StepsOfGrowingRowCountsMakeTheBuffersAgainRarely) {
  Engine& engine = *engine_;
  StepOutput out;
  const auto chunk = [](size_t n, size_t salt) {
    std::vector<int32_t> tokens(n);
    for (size_t i = 0; i < n; ++i) tokens[i] = static_cast<int32_t>((i * 37 + salt * 11) % 200);
    return tokens;
  };

  // The KV pool grown first, by steps of 4 rows, and given back: the steps below take its pages.
  const SeqId first = engine.new_sequence();
  for (size_t s = 0; s < 50; ++s) {
    const std::vector<int32_t> tokens = chunk(4, s);
    const StepInput in{first, tokens, LogitsWanted::kLast};
    ASSERT_TRUE(engine.step({&in, 1}, out).ok());
  }
  ASSERT_TRUE(engine.release(first).ok());

  const SeqId growing = engine.new_sequence();
  size_t allocating_steps = 0;
  for (size_t rows = 9; rows <= 20; ++rows) {  // 174 tokens: within the 200 grown
    const std::vector<int32_t> tokens = chunk(rows, rows);
    const StepInput in{growing, tokens, LogitsWanted::kLast};
    const uint64_t before = testing::allocation_count();
    ASSERT_TRUE(engine.step({&in, 1}, out).ok());
    if (testing::allocation_count() != before) ++allocating_steps;
  }
  EXPECT_LE(allocating_steps, 3u) << "of 12 steps, each a new largest row count";
}

}  // namespace
}  // namespace synapse
