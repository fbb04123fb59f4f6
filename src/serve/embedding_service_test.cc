// SPDX-License-Identifier: Apache-2.0
// EmbeddingService on a synthetic BERT: requests submitted together from many threads get the
// vectors the Embedder gives each alone, to rounding (whether or not the executor merged them), a
// bad input fails only its own request, a full queue answers queue_full, and after shutdown
// unavailable. The executor's queue takes waiting requests by class share (EmbeddingQueue).
#include "serve/embedding_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <thread>

#include "serve/service.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse::serve {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EmbeddingRuntime> open_bert(const std::string& path, uint32_t n_ctx) {
  SynthOptions o;
  o.arch = "bert";
  o.n_ctx = n_ctx;
  EXPECT_TRUE(synthesize_model(o, path).ok());
  auto file = open_model_file(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  auto embedder = EmbeddingRuntime::open(std::move(file).value(), 1, serving_decoder_options());
  EXPECT_TRUE(embedder.ok()) << embedder.status().to_string();
  return std::move(embedder).value();
}

std::shared_ptr<EmbeddingTicket> submit_text(EmbeddingService& s, std::vector<std::string> texts) {
  EmbeddingJob job;
  job.texts = std::move(texts);
  auto ticket = s.submit(std::move(job));
  EXPECT_TRUE(ticket.ok()) << ticket.status().to_string();
  return ticket.ok() ? *ticket : nullptr;
}

TEST(EmbeddingService, ConcurrentRequestsGetTheirOwnVectors) {
  testing::TempDir dir;
  const std::vector<std::string> texts = {"the cat", "a hat on the mat", "dog", "x y z w"};
  // The expected vectors, one request at a time, from a second Embedder of the same file.
  auto reference = open_bert(dir.file("bert.gguf"), 16);
  std::vector<std::vector<float>> expected;
  for (const std::string& t : texts) {
    auto r = reference->embedder().embed(std::span(&t, 1), {});
    ASSERT_TRUE(r.ok());
    expected.push_back(r->items[0].values);
  }
  EmbeddingService service(open_bert(dir.file("bert2.gguf"), 16), {.max_queued = 64});
  std::vector<std::shared_ptr<EmbeddingTicket>> tickets(16);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < tickets.size(); ++i) {
    threads.emplace_back([&, i] { tickets[i] = submit_text(service, {texts[i % texts.size()]}); });
  }
  for (std::thread& t : threads) t.join();
  // One bad request among them fails alone, naming its input.
  auto bad = submit_text(service, {"fine", ""});
  for (size_t i = 0; i < tickets.size(); ++i) {
    ASSERT_TRUE(tickets[i]->wait_for(60s));
    ASSERT_TRUE(tickets[i]->status().ok()) << tickets[i]->status().to_string();
    ASSERT_EQ(tickets[i]->embed().items.size(), 1u);
    const std::vector<float>& got = tickets[i]->embed().items[0].values;
    const std::vector<float>& want = expected[i % texts.size()];
    ASSERT_EQ(got.size(), want.size());
    // Packed with other requests, a sequence's sums may round differently (the matrix products
    // block over the batch's rows): a few float epsilons per dot product of n_embd terms.
    const double tolerance = static_cast<double>(std::numeric_limits<float>::epsilon()) *
                             static_cast<double>(got.size());
    for (size_t e = 0; e < got.size(); ++e) {
      EXPECT_NEAR(got[e], want[e], tolerance) << i << " " << e;
    }
    EXPECT_EQ(tickets[i]->embed().prompt_tokens, tickets[i]->embed().items[0].n_tokens);
  }
  ASSERT_TRUE(bad->wait_for(60s));
  EXPECT_EQ(bad->status().where().field, "input[1]") << bad->status().to_string();
}

TEST(EmbeddingService, BoundedQueueAndShutdown) {
  testing::TempDir dir;
  EmbeddingService service(open_bert(dir.file("bert.gguf"), 16), {.max_queued = 0});
  EmbeddingJob job;
  job.texts = {"a"};
  EXPECT_EQ(service.submit(job).status().code(), ErrorCode::kQueueFull);
  EXPECT_GE(service.retry_after_s(), 1u);
  service.shutdown();
  EXPECT_EQ(service.submit(job).status().code(), ErrorCode::kUnavailable);
  EXPECT_FALSE(service.can_rerank());
  EXPECT_EQ(service.n_ctx(), 16u);
}

EmbeddingQueue::Entry queued(RequestClass c, size_t inputs, const std::string& tag) {
  EmbeddingQueue::Entry e;
  e.job.request_class = c;
  e.job.texts.assign(inputs, tag);
  return e;
}

// One input per pop: interactive work goes first; batch and background then share by weight
// (4:1), so background still progresses; a class that arrives late gets no back credit.
TEST(EmbeddingQueue, TakesRequestsByClassShare) {
  EmbeddingQueue q({16, 4, 1});
  for (int i = 0; i < 10; ++i) q.push(queued(RequestClass::kBackground, 1, "g"));
  for (int i = 0; i < 10; ++i) q.push(queued(RequestClass::kBatch, 1, "b"));
  for (int i = 0; i < 2; ++i) q.push(queued(RequestClass::kInteractive, 1, "i"));
  EXPECT_EQ(q.size(), 22u);
  std::string order;
  for (int i = 0; i < 12; ++i) {
    std::deque<EmbeddingQueue::Entry> one = q.pop_batch(1);
    ASSERT_EQ(one.size(), 1u);
    order += one.front().job.texts.front();
  }
  // All joined at virtual time 0 (ties go to the higher class); an interactive input costs 1/16,
  // a batch one 1/4, a background one 1: "ibgibbbbgbbb".
  EXPECT_EQ(order, "ibgibbbbgbbb");
  EXPECT_EQ(std::count(order.begin(), order.end(), 'b'), 8) << order;
  EXPECT_EQ(std::count(order.begin(), order.end(), 'g'), 2) << order;
  // A batch takes heads up to the input budget, the first always.
  std::deque<EmbeddingQueue::Entry> big = q.pop_batch(3);
  EXPECT_EQ(big.size(), 3u);
  // A class that starts waiting joins at the others' virtual time: interactive goes next, alone
  // although over the budget.
  q.push(queued(RequestClass::kInteractive, 5, "i"));
  std::deque<EmbeddingQueue::Entry> late = q.pop_batch(2);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late.front().job.texts.size(), 5u);
  EXPECT_EQ(q.pop_batch(100).size(), 7u);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace synapse::serve
