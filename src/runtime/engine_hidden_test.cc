// SPDX-License-Identifier: Apache-2.0
// The final hidden states a step returns (StepInput::hidden) are the output head's input: an
// independent float64 product of each row with the (reference-dequantized) output weight gives
// the engine's logits for that token. Asking for hidden rows changes no logits (the head runs on
// the logits rows only, wherever they sit in the batch), and asking for logits changes no hidden
// row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "kernels/tolerance.h"
#include "runtime/engine.h"
#include "synth/synth_model.h"
#include "tensor/quant.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

std::vector<int32_t> test_ids(size_t n, uint32_t n_vocab, size_t salt) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 37 + 11 + salt) % n_vocab);
  return ids;
}

// The exact path (activations stay F32) and one matmul route, so that the only difference from
// a float64 product is float summation: weights dequantize exactly (kernels/tolerance.h).
DecoderOptions exact_options() {
  DecoderOptions o;
  o.matmul_mode.path = DotPath::kF32;
  o.matmul_mode.route = MatmulRoute::kStream;
  return o;
}

struct Loaded {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<DecoderModel> model;
};

Loaded load(const std::string& path) {
  Loaded l;
  l.pool = std::make_unique<ThreadPool>(2);
  l.backend = std::make_unique<CpuBackend>(selected_kernels(), *l.pool);
  auto model = DecoderModel::open(path, *l.backend, exact_options());
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  if (model.ok()) l.model = std::move(model).value();
  return l;
}

// Every logit of every row against sum_e W[v][e] * h[e] in float64, W dequantized by the tensor
// layer's reference dequantizer. Bound: the engine's float dot of n_embd products is within
// gamma_(n_embd + 1) * sum_e |W[v][e] h[e]| of the exact value (Higham); sum_order_tolerance is
// twice that, which also covers the float64 reference's own (far smaller) rounding.
void expect_logits_are_head_of_hidden(const DecoderModel& model, std::span<const float> hidden,
                                      std::span<const float> logits, size_t n_rows) {
  const ModelFile& file = model.file();
  const TensorView* w = file.tensor_view("output.weight");
  if (w == nullptr) w = file.tensor_view("token_embd.weight");
  ASSERT_NE(w, nullptr);
  const size_t d = model.n_embd(), n_vocab = model.n_vocab();
  ASSERT_EQ(w->dims[0], d);
  ASSERT_EQ(w->rows(), n_vocab);
  std::vector<float> row(d);
  size_t checked = 0;
  for (size_t v = 0; v < n_vocab; ++v) {
    dequantize_row(w->type, w->data.subspan(v * w->row_bytes(), w->row_bytes()), row);
    for (size_t r = 0; r < n_rows; ++r) {
      double exact = 0.0, magnitude = 0.0;
      for (size_t e = 0; e < d; ++e) {
        const double term = static_cast<double>(row[e]) * static_cast<double>(hidden[r * d + e]);
        exact += term;
        magnitude += std::abs(term);
      }
      const double tolerance = sum_order_tolerance(float_dot_roundings(d), magnitude);
      const double got = static_cast<double>(logits[r * n_vocab + v]);
      ASSERT_LE(std::abs(got - exact), tolerance)
          << "row " << r << " token " << v << ": engine " << got << ", float64 " << exact;
      ++checked;
    }
  }
  EXPECT_EQ(checked, n_rows * n_vocab);
}

void check_model(const std::string& path) {
  Loaded l = load(path);
  ASSERT_NE(l.model, nullptr);
  EngineConfig config;
  config.max_batch_tokens = 7;  // several chunks
  config.kv.page_tokens = 8;
  Engine engine(*l.model, config);
  const std::vector<int32_t> ids = test_ids(19, l.model->n_vocab(), 0);
  const SeqId seq = engine.new_sequence();
  const StepInput in{seq, ids, LogitsWanted::kAll, LogitsWanted::kAll};
  StepOutput out;
  ASSERT_TRUE(engine.step(std::span(&in, 1), out).ok());
  ASSERT_EQ(out.hidden_n_rows[0], ids.size());
  ASSERT_EQ(out.n_embd, l.model->n_embd());
  expect_logits_are_head_of_hidden(*l.model, out.hidden_rows(0), out.logits, ids.size());

  // The hidden rows alone (no logits anywhere: the head does not run) are the same bits.
  const SeqId seq2 = engine.new_sequence();
  const StepInput hidden_only{seq2, ids, LogitsWanted::kNone, LogitsWanted::kAll};
  StepOutput out2;
  ASSERT_TRUE(engine.step(std::span(&hidden_only, 1), out2).ok());
  EXPECT_TRUE(out2.logits.empty());
  ASSERT_EQ(out2.hidden, out.hidden);

  // Logits from token 11 on (a perplexity pass's scored rows): those rows only, the same bits,
  // and the head ran for them alone (8 rows out).
  const SeqId seq3 = engine.new_sequence();
  StepInput tail{seq3, ids, LogitsWanted::kAll};
  tail.logits_from = 11;
  StepOutput out3;
  ASSERT_TRUE(engine.step(std::span(&tail, 1), out3).ok());
  ASSERT_EQ(out3.n_rows[0], ids.size() - 11);
  const size_t n_vocab = l.model->n_vocab();
  ASSERT_EQ(out3.logits.size(), (ids.size() - 11) * n_vocab);
  EXPECT_TRUE(std::equal(out3.logits.begin(), out3.logits.end(),
                         out.logits.begin() + static_cast<ptrdiff_t>(11 * n_vocab)));
  // Past the last token is a clear error, nothing run.
  const SeqId seq4 = engine.new_sequence();
  StepInput past{seq4, ids, LogitsWanted::kAll};
  past.logits_from = ids.size();
  EXPECT_EQ(engine.step(std::span(&past, 1), out3).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(engine.n_tokens(seq4), 0u);
}

TEST(EngineHidden, LogitsAreTheHeadOfTheHiddenStateSynthF32) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "llama";
  ASSERT_TRUE(synthesize_model(o, dir.file("m.gguf")).ok());
  check_model(dir.file("m.gguf"));
}

TEST(EngineHidden, LogitsAreTheHeadOfTheHiddenStateSynthQuantizedTiedHead) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "qwen3";  // tied to token_embd by default
  o.type_embedding = TensorType::kQ8_0;
  o.type_output = TensorType::kQ8_0;
  o.type_attention = TensorType::kQ4_K;
  o.n_embd = 256;  // K-quants need rows of 256
  o.n_head = 4;
  o.n_head_kv = 2;
  ASSERT_TRUE(synthesize_model(o, dir.file("m.gguf")).ok());
  check_model(dir.file("m.gguf"));
}

TEST(EngineHidden, LogitsAreTheHeadOfTheHiddenStateStories260K) {
  SYN_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  check_model(path);
}

// A batch mixing sequences that want logits, hidden states or both, interleaved, gives each
// sequence the logits and hidden rows it gets alone (the head's rows are compacted correctly).
TEST(EngineHidden, MixedBatchEqualsEachAlone) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "qwen2";
  ASSERT_TRUE(synthesize_model(o, dir.file("m.gguf")).ok());
  Loaded l = load(dir.file("m.gguf"));
  ASSERT_NE(l.model, nullptr);
  EngineConfig config;
  config.kv.page_tokens = 8;
  Engine engine(*l.model, config);
  const uint32_t n_vocab = l.model->n_vocab();
  const std::vector<std::vector<int32_t>> prompts = {
      test_ids(5, n_vocab, 1), test_ids(9, n_vocab, 2), test_ids(3, n_vocab, 3),
      test_ids(12, n_vocab, 4)};
  const std::vector<std::pair<LogitsWanted, LogitsWanted>> wants = {
      {LogitsWanted::kLast, LogitsWanted::kNone},
      {LogitsWanted::kNone, LogitsWanted::kAll},
      {LogitsWanted::kAll, LogitsWanted::kLast},
      {LogitsWanted::kNone, LogitsWanted::kLast}};
  std::vector<StepOutput> alone(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const StepInput in{engine.new_sequence(), prompts[i], wants[i].first, wants[i].second};
    ASSERT_TRUE(engine.step(std::span(&in, 1), alone[i]).ok());
    ASSERT_TRUE(engine.release(in.sequence).ok());
  }
  std::vector<StepInput> batch;
  for (size_t i = 0; i < prompts.size(); ++i) {
    batch.push_back(StepInput{engine.new_sequence(), prompts[i], wants[i].first, wants[i].second});
  }
  StepOutput together;
  ASSERT_TRUE(engine.step(batch, together).ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::span<const float> logits(together.logits.data() + together.first_row[i] * n_vocab,
                                        together.n_rows[i] * n_vocab);
    EXPECT_TRUE(
        std::equal(logits.begin(), logits.end(), alone[i].logits.begin(), alone[i].logits.end()))
        << "logits of input " << i;
    const std::span<const float> hidden = together.hidden_rows(i);
    EXPECT_TRUE(
        std::equal(hidden.begin(), hidden.end(), alone[i].hidden.begin(), alone[i].hidden.end()))
        << "hidden rows of input " << i;
  }
}

TEST(EngineHidden, HiddenRowsOfAnEmptyInputAreRefused) {
  testing::TempDir dir;
  SynthOptions o;
  ASSERT_TRUE(synthesize_model(o, dir.file("m.gguf")).ok());
  Loaded l = load(dir.file("m.gguf"));
  ASSERT_NE(l.model, nullptr);
  Engine engine(*l.model);
  const StepInput in{engine.new_sequence(), {}, LogitsWanted::kNone, LogitsWanted::kLast};
  StepOutput out;
  EXPECT_EQ(engine.step(std::span(&in, 1), out).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace synapse
