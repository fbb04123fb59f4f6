// SPDX-License-Identifier: Apache-2.0
// Embedding requests on the service's engine loop: the vector is the same bits alone, beside
// running generations and as the direct Embedder computes it; batch-class embedding work
// leaves interactive generation its slot (counted in engine steps); embeddings stay out of the
// prefix cache; validation.
#include <gtest/gtest.h>

#include <thread>

#include "backend/cpu_backend.h"
#include "encoder/embedder.h"
#include "kernels/kernel_selection.h"
#include "serve/service.h"
#include "serve/service_test_support.h"
#include "synth/synth_model.h"
#include "synth/synthetic_vocab.h"
#include "tests/support/poison_model.h"
#include "tests/support/test_support.h"

namespace synapse::serve {
namespace {

class ServiceEmbeddingTest : public ServingModelTest {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.arch = "qwen3";
    o.n_embd = 64;
    o.n_ff = 128;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.type_feed_forward = TensorType::kQ8_0;
    open_synthetic(o);
  }

  std::unique_ptr<Service> make(size_t parallel, size_t cached = 0) {
    return std::make_unique<Service>(*model_, *tokenizer_, small_service_config(parallel, cached));
  }

  std::vector<int32_t> prompt(size_t i) const {
    const std::string_view corpus = synthetic_corpus();
    return tokenizer_->encode(corpus.substr(i * 41 % 200, 30 + i * 19 % 80));
  }

  static GenerationRequest embedding(std::vector<int32_t> prompt, PoolingType pooling,
                                     RequestClass c = RequestClass::kInteractive) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.embedding = EmbeddingSpec{.pooling = pooling};
    r.request_class = c;
    return r;
  }

  static GenerationRequest generation(std::vector<int32_t> prompt, int32_t max_tokens,
                                      RequestClass c = RequestClass::kInteractive) {
    return greedy_request(std::move(prompt), max_tokens, c);
  }
};

TEST_F(ServiceEmbeddingTest, SameVectorAloneBesideGenerationAndDirect) {
  for (const PoolingType pooling : {PoolingType::kLast, PoolingType::kMean}) {
    std::vector<std::vector<float>> alone;
    for (size_t i = 0; i < 3; ++i) {
      auto service = make(1);
      auto h = service->submit(embedding(prompt(i), pooling));
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      GenerationEvent e = final_event(**h);
      ASSERT_EQ(e.finish_reason, FinishReason::kStop) << e.error.to_string();
      EXPECT_EQ(e.embedding.size(), model_->n_embd());
      EXPECT_EQ(e.usage.prompt_tokens, prompt(i).size());
      EXPECT_EQ(e.usage.completion_tokens, 0u);
      alone.push_back(std::move(e.embedding));
    }
    EXPECT_NE(alone[0], alone[1]);

    // The same prompts while generations decode and prefill beside them.
    auto service = make(4, 4);
    std::vector<std::shared_ptr<RequestHandle>> generations;
    for (size_t g = 0; g < 2; ++g) {
      auto h = service->submit(generation(prompt(10 + g), 40));
      ASSERT_TRUE(h.ok());
      generations.push_back(*h);
    }
    GenerationEvent first;
    ASSERT_TRUE(generations[0]->next(first));  // generation is under way
    std::vector<std::shared_ptr<RequestHandle>> embeddings;
    for (size_t i = 0; i < 3; ++i) {
      auto h = service->submit(embedding(prompt(i), pooling, RequestClass::kBatch));
      ASSERT_TRUE(h.ok());
      embeddings.push_back(*h);
    }
    for (size_t i = 0; i < 3; ++i) {
      const GenerationEvent e = final_event(*embeddings[i]);
      ASSERT_EQ(e.finish_reason, FinishReason::kStop) << e.error.to_string();
      EXPECT_EQ(e.embedding, alone[i]) << pooling_type_name(pooling) << " prompt " << i;
    }
    for (auto& h : generations) EXPECT_EQ(final_event(*h).finish_reason, FinishReason::kLength);
    // Embedding prompts are not kept for prefix reuse.
    EXPECT_EQ(service->stats().cached_sequences, 2u);

    // The direct path (synapse embed) computes the same bits.
    Engine engine(*model_);
    Embedder direct(engine, *tokenizer_);
    std::vector<std::vector<int32_t>> prompts = {prompt(0), prompt(1), prompt(2)};
    auto r = direct.embed_tokens(prompts, {.pooling = pooling});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r->items[i].values, alone[i]) << i;
  }
}

// Batch-class embedding work saturating the engine leaves interactive generation the reserved
// slot: the interactive request's first token comes within a few steps of its arrival.
TEST_F(ServiceEmbeddingTest, BatchEmbeddingsDoNotStarveInteractiveGeneration) {
  auto service = make(2);
  std::vector<std::shared_ptr<RequestHandle>> bulk;
  for (size_t i = 0; i < 24; ++i) {
    auto h = service->submit(embedding(prompt(i), PoolingType::kMean, RequestClass::kBatch));
    ASSERT_TRUE(h.ok());
    bulk.push_back(*h);
  }
  while (service->stats().steps < 2) std::this_thread::yield();
  const uint64_t arrival = service->stats().steps;
  auto h = service->submit(generation(prompt(30), 4));
  ASSERT_TRUE(h.ok());
  GenerationEvent e;
  ASSERT_TRUE((*h)->next(e));
  // Its prompt (< 110 tokens) prefills in chunks of 16 ahead of batch work: at most 7 steps,
  // plus the step that was running when it arrived.
  EXPECT_LE(e.step, arrival + 8) << "first token at step " << e.step << ", arrived at " << arrival;
  size_t done_before = 0;
  for (auto& b : bulk) {
    GenerationEvent last = final_event(*b);
    EXPECT_EQ(last.finish_reason, FinishReason::kStop);
    if (last.step < e.step) ++done_before;
  }
  EXPECT_LT(done_before, bulk.size()) << "the interactive request waited for all batch work";
}

// Issue 22: NaN weights gave embeddings of nulls with success while generation on the same model
// failed with numeric_fault; both must fail alike.
TEST_F(ServiceEmbeddingTest, NanWeightsAreANumericFaultForEmbeddingsAsForGeneration) {
  const std::string broken = dir_.file("nan.gguf");
  SynthOptions o;
  o.arch = "qwen3";
  ASSERT_TRUE(synthesize_model(o, broken).ok());
  testing::poison_tensor_with_nan(broken, "token_embd.weight");
  auto model = DecoderModel::open(broken, *backend_, serving_decoder_options());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  Service service(**model, *tokenizer_, small_service_config(1, 0));
  for (const PoolingType pooling : {PoolingType::kLast, PoolingType::kMean}) {
    auto h = service.submit(embedding(prompt(0), pooling));
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    const GenerationEvent e = final_event(**h);
    EXPECT_EQ(e.finish_reason, FinishReason::kError);
    EXPECT_EQ(e.error.code(), ErrorCode::kNumericFault) << e.error.to_string();
    EXPECT_TRUE(e.embedding.empty());
  }
  auto g = service.submit(generation(prompt(0), 4));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(final_event(**g).error.code(), ErrorCode::kNumericFault);
}

TEST_F(ServiceEmbeddingTest, Validation) {
  auto service = make(1);
  auto cls = service->submit(embedding(prompt(0), PoolingType::kCls));
  ASSERT_FALSE(cls.ok());
  EXPECT_EQ(cls.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(cls.status().where().field, "pooling");
  auto empty = service->submit(embedding({}, PoolingType::kLast));
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument);
  auto long_prompt =
      service->submit(embedding(std::vector<int32_t>(service->n_ctx() + 1, 3), PoolingType::kLast));
  EXPECT_EQ(long_prompt.status().code(), ErrorCode::kLimitExceeded);
  // max_tokens is not looked at.
  GenerationRequest r = embedding(prompt(0), PoolingType::kLast);
  r.max_tokens = 0;
  auto ok = service->submit(std::move(r));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(final_event(**ok).finish_reason, FinishReason::kStop);
}

}  // namespace
}  // namespace synapse::serve
