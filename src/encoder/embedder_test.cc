// SPDX-License-Identifier: Apache-2.0
// Decoder embeddings (Embedder on a causal model) against the engine's own final hidden rows, which
// runtime's engine_hidden_test ties to the logits: last pooling is the last row, mean pooling the
// float64 mean of the rows, vectors are unit length, an input's vector is the same bits alone
// and batched with inputs of other lengths, and bad input gets its stable code.
#include "encoder/embedder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

// One matmul route for every step, as serve::serving_decoder_options chooses (serve is a layer
// above): a sequence's rows then do not depend on the rest of the batch.
DecoderOptions batch_invariant_options(uint32_t n_ctx = 0) {
  DecoderOptions o;
  o.n_ctx = n_ctx;
  o.matmul_mode.route = MatmulRoute::kStream;
  return o;
}

class DecoderEmbeddingTest : public ::testing::Test {
 protected:
  void open(const std::string& path, uint32_t n_ctx = 0) {
    pool_ = std::make_unique<ThreadPool>(2);
    backend_ = std::make_unique<CpuBackend>(selected_kernels(), *pool_);
    auto model = DecoderModel::open(path, *backend_, batch_invariant_options(n_ctx));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = std::move(model).value();
    auto tok = tokenizer::Tokenizer::from_gguf(model_->file().metadata());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tokenizer_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
    EngineConfig config;
    config.kv.page_tokens = 8;
    engine_ = std::make_unique<Engine>(*model_, config);
    embedder_ = std::make_unique<Embedder>(*engine_, *tokenizer_);
  }

  void open_synth(const std::string& arch, std::optional<PoolingType> pooling = std::nullopt,
                  uint32_t n_ctx = 0) {
    SynthOptions o;
    o.arch = arch;
    o.pooling = pooling;
    const std::string path = dir_.file(arch + ".gguf");
    ASSERT_TRUE(synthesize_model(o, path).ok());
    open(path, n_ctx);
  }

  // The final hidden rows of every token of `text`, straight from one engine step.
  std::vector<float> hidden_rows(const std::string& text) {
    const std::vector<int32_t> ids = embedding_tokens(*tokenizer_, text);
    const StepInput in{engine_->new_sequence(), ids, LogitsWanted::kNone, LogitsWanted::kAll};
    StepOutput out;
    EXPECT_TRUE(engine_->step(std::span(&in, 1), out).ok());
    EXPECT_TRUE(engine_->release(in.sequence).ok());
    return out.hidden;
  }

  testing::TempDir dir_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Embedder> embedder_;
};

double norm(std::span<const float> v) {
  double s = 0.0;
  for (const float x : v) s += static_cast<double>(x) * static_cast<double>(x);
  return std::sqrt(s);
}

TEST_F(DecoderEmbeddingTest, LastPoolingIsTheLastHiddenRowNormalized) {
  open_synth("qwen3");
  const std::string text = "the quick brown fox";
  auto r = embedder_->embed(std::vector<std::string>{text}, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->pooling, PoolingType::kLast);  // the decoder default
  const size_t d = model_->n_embd();
  ASSERT_EQ(r->n_embd, d);
  const std::vector<float> rows = hidden_rows(text);
  const size_t n = rows.size() / d;
  ASSERT_EQ(r->items[0].n_tokens, n);
  const std::span<const float> last(rows.data() + (n - 1) * d, d);
  const double last_norm = norm(last);
  ASSERT_GT(last_norm, 0.0);
  const std::vector<float>& v = r->items[0].values;
  // Normalization rounds 1/norm to float and the product: 2 roundings, 3 allowed.
  for (size_t e = 0; e < d; ++e) {
    const double exact = static_cast<double>(last[e]) / last_norm;
    EXPECT_NEAR(static_cast<double>(v[e]), exact, 3.0 * 0x1p-24 * std::abs(exact)) << e;
  }
  EXPECT_NEAR(norm(v), 1.0, 1e-6);

  auto raw = embedder_->embed(std::vector<std::string>{text}, {.normalize = false});
  ASSERT_TRUE(raw.ok());
  EXPECT_TRUE(std::equal(last.begin(), last.end(), raw->items[0].values.begin()));
}

TEST_F(DecoderEmbeddingTest, MeanPoolingIsTheMeanOfTheHiddenRows) {
  open_synth("llama");
  const std::string text = "a mean of several tokens";
  auto r = embedder_->embed(std::vector<std::string>{text},
                            {.pooling = PoolingType::kMean, .normalize = false});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const size_t d = model_->n_embd();
  const std::vector<float> rows = hidden_rows(text);
  const size_t n = rows.size() / d;
  ASSERT_GT(n, 2u);
  for (size_t e = 0; e < d; ++e) {
    double sum = 0.0;
    for (size_t t = 0; t < n; ++t) sum += static_cast<double>(rows[t * d + e]);
    // The mean is summed in double: only the final float rounding remains.
    const double mean = sum / static_cast<double>(n);
    EXPECT_NEAR(static_cast<double>(r->items[0].values[e]), mean, 0x1p-24 * std::abs(mean)) << e;
  }
  // Pooling none: the rows themselves.
  auto none = embedder_->embed(std::vector<std::string>{text},
                               {.pooling = PoolingType::kNone, .normalize = false});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->items[0].values, rows);
}

TEST_F(DecoderEmbeddingTest, AloneEqualsBatchedWithOtherLengths) {
  open_synth("qwen2");
  const std::vector<std::string> texts = {"short", "a somewhat longer input than the first one",
                                          "mid length text", "x"};
  for (const PoolingType pooling : {PoolingType::kLast, PoolingType::kMean}) {
    auto together = embedder_->embed(texts, {.pooling = pooling});
    ASSERT_TRUE(together.ok()) << together.status().to_string();
    // A small step budget splits the batch into several steps and chunks the long input.
    embedder_->set_max_batch_tokens(5);
    auto split = embedder_->embed(texts, {.pooling = pooling});
    embedder_->set_max_batch_tokens(4096);
    ASSERT_TRUE(split.ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      auto alone = embedder_->embed(std::vector<std::string>{texts[i]}, {.pooling = pooling});
      ASSERT_TRUE(alone.ok());
      EXPECT_EQ(alone->items[0].values, together->items[i].values)
          << pooling_type_name(pooling) << " input " << i;
      EXPECT_EQ(alone->items[0].values, split->items[i].values)
          << pooling_type_name(pooling) << " input " << i;
    }
    EXPECT_EQ(together->prompt_tokens, split->prompt_tokens);
  }
}

TEST_F(DecoderEmbeddingTest, PoolingFromTheFileAndRefusedPoolings) {
  open_synth("llama", PoolingType::kMean);
  EXPECT_EQ(model_->hparams().pooling, PoolingType::kMean);
  auto r = embedder_->embed(std::vector<std::string>{"hello"}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->pooling, PoolingType::kMean);
  for (const PoolingType p : {PoolingType::kCls, PoolingType::kRank}) {
    auto bad = embedder_->embed(std::vector<std::string>{"hello"}, {.pooling = p});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), ErrorCode::kUnsupported);
    EXPECT_EQ(bad.status().where().field, "pooling");
  }
  // One vector per input is required where the caller says so (the HTTP route).
  EXPECT_EQ(embedding_pooling(model_->hparams().pooling, false, PoolingType::kNone, false)
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(DecoderEmbeddingTest, BadInputsHaveStableCodes) {
  open_synth("qwen3", std::nullopt, /*n_ctx=*/16);
  auto empty_list = embedder_->embed(std::vector<std::string>{}, {});
  EXPECT_EQ(empty_list.status().code(), ErrorCode::kInvalidArgument);
  auto empty = embedder_->embed(std::vector<std::string>{"fine", ""}, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(empty.status().where().field, "input[1]");
  const std::vector<int32_t> long_ids(40, 5);
  auto too_long = embedder_->embed_tokens(std::vector<std::vector<int32_t>>{long_ids}, {});
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), ErrorCode::kContextLengthExceeded);
  EXPECT_EQ(too_long.status().where().field, "input[0]");
  auto cut =
      embedder_->embed_tokens(std::vector<std::vector<int32_t>>{long_ids}, {.truncate = true});
  ASSERT_TRUE(cut.ok()) << cut.status().to_string();
  EXPECT_EQ(cut->items[0].n_tokens, 16u);
  EXPECT_TRUE(cut->items[0].truncated);
  auto out_of_vocab = embedder_->embed_tokens(
      std::vector<std::vector<int32_t>>{{1, static_cast<int32_t>(model_->n_vocab())}}, {});
  EXPECT_EQ(out_of_vocab.status().code(), ErrorCode::kInvalidArgument);
  // Nothing leaked: every sequence was released, errors included.
  EXPECT_EQ(engine_->cache().stats().pages_in_use, 0u);
}

TEST_F(DecoderEmbeddingTest, Stories260K) {
  SYN_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  open(path);
  const std::vector<std::string> texts = {"Once upon a time", "there was a little girl"};
  auto r = embedder_->embed(texts, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->n_embd, model_->n_embd());
  for (const EmbeddingItem& item : r->items) EXPECT_NEAR(norm(item.values), 1.0, 1e-6);
  EXPECT_NE(r->items[0].values, r->items[1].values);
  auto alone = embedder_->embed(std::vector<std::string>{texts[1]}, {});
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->items[0].values, r->items[1].values);
}

}  // namespace
}  // namespace synapse
