// SPDX-License-Identifier: Apache-2.0
// A BERT cross-encoder on the service's engine loop, the one path every model's embeddings and
// rerank scores take: vectors (mean, CLS) and scores equal the direct Embedder's bit for bit,
// alone or with 16 requests from many threads at once (batch invariance); a prompt longer than
// the step runs whole; generation, bad poolings and token types are refused.
#include <gtest/gtest.h>

#include <thread>

#include "backend/cpu_backend.h"
#include "encoder/embedder.h"
#include "kernels/kernel_selection.h"
#include "serve/service.h"
#include "serve/service_test_support.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse::serve {
namespace {

class ServiceEncoderTest : public ServingModelTest {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.arch = "bert";
    o.n_ctx = 64;
    o.classifier_labels = 1;
    open_synthetic(o);
  }

  static GenerationRequest request(std::vector<int32_t> prompt, PoolingType pooling,
                                   std::vector<int32_t> types = {}) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.embedding = EmbeddingSpec{.pooling = pooling, .token_types = std::move(types)};
    return r;
  }

  const std::vector<std::string> texts_ = {"the cat sat", "a", "on the mat with a hat",
                                           "dog and bat on the mat the cat"};
};

TEST_F(ServiceEncoderTest, VectorsAndScoresEqualTheDirectEmbedderUnderConcurrency) {
  // The direct path first (the engine is free again before the service takes the model).
  std::vector<std::vector<float>> mean, cls;
  std::vector<float> scores;
  std::vector<RerankPair> pairs;
  {
    Engine engine(*model_);
    Embedder direct(engine, *tokenizer_);
    for (const PoolingType p : {PoolingType::kMean, PoolingType::kCls}) {
      auto r = direct.embed(texts_, {.pooling = p});
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      for (const EmbeddingItem& item : r->items) {
        (p == PoolingType::kMean ? mean : cls).push_back(item.values);
      }
    }
    auto ranked = direct.rerank("the cat", texts_, 0, false);
    ASSERT_TRUE(ranked.ok()) << ranked.status().to_string();
    scores.resize(texts_.size());
    for (const RerankItem& item : ranked->items) scores[item.index] = item.score;
    auto made = rerank_pairs(*tokenizer_, "the cat", texts_, model_->n_ctx(), false);
    ASSERT_TRUE(made.ok());
    pairs = std::move(*made);
  }
  Service service(*model_, *tokenizer_, small_service_config(4));
  EXPECT_FALSE(service.generates());
  EXPECT_TRUE(service.can_rerank());
  // 16 requests at once from as many threads: each text as mean, as CLS and as a rerank pair.
  std::vector<std::thread> threads;
  std::vector<GenerationEvent> events(3 * texts_.size());
  for (size_t i = 0; i < events.size(); ++i) {
    threads.emplace_back([&, i] {
      const size_t t = i % texts_.size();
      const size_t kind = i / texts_.size();
      GenerationRequest r = kind == 2 ? request(pairs[t].tokens, PoolingType::kRank, pairs[t].types)
                                      : request(embedding_tokens(*tokenizer_, texts_[t]),
                                                kind == 0 ? PoolingType::kMean : PoolingType::kCls);
      auto h = service.submit(std::move(r));
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      events[i] = final_event(**h);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < events.size(); ++i) {
    const size_t t = i % texts_.size();
    const size_t kind = i / texts_.size();
    ASSERT_EQ(events[i].finish_reason, FinishReason::kStop) << events[i].error.to_string();
    if (kind == 2) {
      ASSERT_EQ(events[i].embedding.size(), 1u);
      EXPECT_EQ(events[i].embedding[0], scores[t]) << "pair " << t;
    } else {
      EXPECT_EQ(events[i].embedding, (kind == 0 ? mean : cls)[t]) << "text " << t << " " << kind;
    }
  }
}

TEST_F(ServiceEncoderTest, APromptLongerThanTheStepRunsWhole) {
  ServiceConfig config = small_service_config(2);
  config.max_step_tokens = 8;  // prompts of up to 64 tokens still run in one pass each
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 40; ++i) prompt.push_back(5 + i % 50);
  std::vector<float> alone;
  {
    Engine engine(*model_);
    Embedder direct(engine, *tokenizer_);
    auto r = direct.embed_tokens(std::vector<std::vector<int32_t>>{prompt},
                                 {.pooling = PoolingType::kMean});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    alone = r->items[0].values;
  }
  Service service(*model_, *tokenizer_, config);
  auto a = service.submit(request(prompt, PoolingType::kMean));
  auto b = service.submit(request(prompt, PoolingType::kMean));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(final_event(**a).embedding, alone);
  EXPECT_EQ(final_event(**b).embedding, alone);
}

TEST_F(ServiceEncoderTest, RefusesGenerationBadPoolingsAndTokenTypes) {
  Service service(*model_, *tokenizer_, small_service_config(1));
  auto gen = service.submit(greedy_request({3, 4, 5}, 4));
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(gen.status().where().field, "model");
  auto types = service.submit(request({3, 4, 5}, PoolingType::kRank, {0, 2, 1}));
  ASSERT_FALSE(types.ok());
  EXPECT_EQ(types.status().where().field, "token_types");
  auto short_types = service.submit(request({3, 4, 5}, PoolingType::kRank, {0, 1}));
  EXPECT_EQ(short_types.status().where().field, "token_types");
  auto last = service.submit(request({3, 4, 5}, PoolingType::kLast, {0, 0, 1}));
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(final_event(**last).finish_reason, FinishReason::kStop);
}

TEST_F(ServiceEncoderTest, RankNeedsAClassifier) {
  const std::string plain = dir_.file("plain.gguf");
  SynthOptions o;
  o.arch = "bert";
  ASSERT_TRUE(synthesize_model(o, plain).ok());
  auto model = DecoderModel::open(plain, *backend_, serving_decoder_options());
  ASSERT_TRUE(model.ok());
  Service service(**model, *tokenizer_, small_service_config(1));
  EXPECT_FALSE(service.can_rerank());
  auto rank = service.submit(request({3, 4, 5}, PoolingType::kRank));
  ASSERT_FALSE(rank.ok());
  EXPECT_EQ(rank.status().where().field, "pooling");
  auto cls = service.submit(request({3, 4, 5}, PoolingType::kCls));
  ASSERT_TRUE(cls.ok()) << cls.status().to_string();
  EXPECT_EQ(final_event(**cls).embedding.size(), model.value()->n_embd());
}

}  // namespace
}  // namespace synapse::serve
