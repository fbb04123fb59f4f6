// SPDX-License-Identifier: Apache-2.0
// The engine over small synthetic models: chunked prefill equals whole prefill, batched decode
// of several sequences equals each alone, forked prefixes equal recomputation, and logits are
// bit-identical across thread counts. A logit's bits depend on the matmul route (streamed below
// kMatmulMinColumns rows per pass, tiled from there on: kernels/matmul.h), so comparisons keep
// the route of each token the same.
#include "runtime/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

std::vector<int32_t> test_ids(size_t n, uint32_t n_vocab) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 37 + 11) % n_vocab);
  return ids;
}

class EngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.arch = GetParam();
    o.n_embd = 64;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.head_dim = 24;  // head size != n_embd / n_head
    o.n_layer = 2;
    o.type_attention = TensorType::kQ8_0;
    path_ = dir_.file("m.gguf");
    ASSERT_TRUE(synthesize_model(o, path_).ok());
  }

  std::vector<float> run_all(int threads, const std::vector<int32_t>& ids, size_t batch) {
    ThreadPool pool(threads);
    CpuBackend backend(selected_kernels(), pool);
    auto model = DecoderModel::open(path_, backend);
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    EngineConfig config;
    config.max_batch_tokens = batch;
    config.kv.page_tokens = 8;
    Engine engine(**model, config);
    Session s(engine);
    auto logits = s.append_all(ids);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    return {logits->begin(), logits->end()};
  }

  testing::TempDir dir_;
  std::string path_;
};

TEST_P(EngineTest, ChunkedPrefillEqualsDecodeAndThreadCounts) {
  const std::vector<int32_t> ids = test_ids(40, 300);
  const std::vector<float> whole = run_all(1, ids, 512);  // tiled route
  EXPECT_EQ(run_all(1, ids, 20), whole) << "chunked prefill differs";
  EXPECT_EQ(run_all(2, ids, 512), whole) << "2 threads differ";
  EXPECT_EQ(run_all(3, ids, 20), whole) << "3 threads differ";
  const std::vector<float> streamed = run_all(1, ids, 1);  // one token per pass
  EXPECT_EQ(run_all(1, ids, 7), streamed) << "chunks of 7 differ from token-by-token decode";
  EXPECT_EQ(run_all(3, ids, 13), streamed) << "3 threads differ";
  // The two routes agree to rounding (~1e-5 on logits of magnitude up to ~24 where a level's
  // tiles round differently, e.g. AVX-512's F32 feed-forward tiles), except where that rounding
  // moves a quantized activation across a Q8_0 rounding boundary: one level of one activation
  // moves a logit by a few 1e-3 (measured 3.5e-3 on one token of 40 for qwen2 on AVX-512 VNNI,
  // the other 39 within 6e-6 of the scalar reference). So: every token within 5e-3, and at most
  // one token beyond 1e-4.
  const size_t n_vocab = whole.size() / ids.size();
  size_t tokens_beyond_rounding = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    float worst = 0.0f;
    for (size_t i = t * n_vocab; i < (t + 1) * n_vocab; ++i) {
      ASSERT_NEAR(whole[i], streamed[i], 5e-3) << i;
      worst = std::max(worst, std::abs(whole[i] - streamed[i]));
    }
    if (worst > 1e-4f) ++tokens_beyond_rounding;
  }
  EXPECT_LE(tokens_beyond_rounding, 1u);
}

TEST_P(EngineTest, BatchedSequencesAndForkMatchSingleRuns) {
  ThreadPool pool(2);
  CpuBackend backend(selected_kernels(), pool);
  auto model = DecoderModel::open(path_, backend);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const uint32_t n_vocab = (*model)->n_vocab();
  EngineConfig config;
  config.kv.page_tokens = 8;
  Engine engine(**model, config);
  const std::vector<int32_t> a = test_ids(19, n_vocab), b = test_ids(21, n_vocab);

  // Alone: the prompt but its last token (tiled), then the last token (streamed).
  const auto alone = [&](const std::vector<int32_t>& ids) {
    Session s(engine);
    EXPECT_TRUE(s.append(std::span(ids).first(ids.size() - 1)).ok());
    auto l = s.append(std::span(ids).last(1));
    EXPECT_TRUE(l.ok());
    return std::vector<float>(l->begin(), l->end());
  };
  const std::vector<float> alone_a = alone(a), alone_b = alone(b);
  // Together: both prompts in one step, then both last tokens in one decode step.
  const SeqId sa = engine.new_sequence(), sb = engine.new_sequence();
  StepOutput out;
  std::vector<StepInput> first = {{sa, std::span(a).first(18), LogitsWanted::kNone},
                                  {sb, std::span(b).first(20), LogitsWanted::kNone}};
  ASSERT_TRUE(engine.step(first, out).ok());
  std::vector<StepInput> second = {{sa, std::span(a).subspan(18), LogitsWanted::kLast},
                                   {sb, std::span(b).subspan(20), LogitsWanted::kLast}};
  ASSERT_TRUE(engine.step(second, out).ok());
  EXPECT_TRUE(std::equal(alone_a.begin(), alone_a.end(), out.last(0).begin()));
  EXPECT_TRUE(std::equal(alone_b.begin(), alone_b.end(), out.last(1).begin()));

  // A fork of a's first 18 tokens, continued with a's last token, equals a.
  const SeqId prefix = engine.new_sequence();
  std::vector<StepInput> p = {{prefix, std::span(a).first(18), LogitsWanted::kNone}};
  ASSERT_TRUE(engine.step(p, out).ok());
  Result<SeqId> forked = engine.fork(prefix);
  ASSERT_TRUE(forked.ok());
  std::vector<StepInput> cont = {{*forked, std::span(a).subspan(18), LogitsWanted::kLast}};
  ASSERT_TRUE(engine.step(cont, out).ok());
  EXPECT_TRUE(std::equal(alone_a.begin(), alone_a.end(), out.last(0).begin()));
  EXPECT_GE(engine.cache().stats().copies_on_write, 1u);
  // The prefix itself is unchanged by the fork's write.
  std::vector<StepInput> again = {{prefix, std::span(a).subspan(18), LogitsWanted::kLast}};
  ASSERT_TRUE(engine.step(again, out).ok());
  EXPECT_TRUE(std::equal(alone_a.begin(), alone_a.end(), out.last(0).begin()));
}

TEST_P(EngineTest, ContextOverflowIsAnErrorBeforeAnythingRuns) {
  ThreadPool pool(1);
  CpuBackend backend(selected_kernels(), pool);
  DecoderOptions options;
  options.n_ctx = 16;
  auto model = DecoderModel::open(path_, backend, options);
  ASSERT_TRUE(model.ok());
  Engine engine(**model);
  Session s(engine);
  const std::vector<int32_t> ids = test_ids(17, (*model)->n_vocab());
  auto r = s.append(ids);
  EXPECT_EQ(r.status().code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(s.n_tokens(), 0u);
  const std::vector<int32_t> bad = {-1};
  EXPECT_EQ(s.append(bad).status().code(), ErrorCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Archs, EngineTest, ::testing::Values("llama", "qwen2", "qwen3"));

}  // namespace
}  // namespace synapse
