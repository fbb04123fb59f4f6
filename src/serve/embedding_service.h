// SPDX-License-Identifier: Apache-2.0
// The embedding side of `synapse serve` for an encoder model: one executor thread owns the
// EmbeddingRuntime (the model on its Engine, through the Model IR like any model) and runs
// embedding and rerank requests for the HTTP threads, which only parse, submit and wait. Requests
// waiting at the same time are run together: every queued embedding request with the same options
// (pooling, normalization, truncation, text or token ids) goes into one Embedder call, which packs
// all their inputs into shared forward passes; should that call fail, each request runs again alone
// so that the error names its own input. Rerank requests run one at a time. The queue is bounded
// (submit answers queue_full, HTTP 429 with Retry-After); a request cancelled before its turn (its
// client went away) is skipped. Waiting requests are taken by class (EmbeddingQueue): interactive
// before batch before background while inputs are short, shared by weight (as serve::Scheduler
// does) when all wait.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "encoder/embedding_runtime.h"
#include "serve/request.h"

namespace synapse::serve {

struct EmbeddingServiceConfig {
  size_t max_queued = 64;          // requests waiting for the executor; more get queue_full
  size_t max_batch_inputs = 1024;  // inputs merged into one Embedder call (one request may exceed)
  // Each class's share of the executor's inputs while several wait (SchedulerConfig's defaults).
  std::array<uint32_t, kRequestClassCount> weights = {16, 4, 1};
};

struct EmbeddingJob {
  enum class Kind { kEmbedText, kEmbedTokens, kRerank };
  Kind kind = Kind::kEmbedText;
  std::vector<std::string> texts;            // kEmbedText inputs, or kRerank documents
  std::vector<std::vector<int32_t>> tokens;  // kEmbedTokens inputs
  EmbedOptions options;                      // embedding; rerank uses options.truncate
  std::string query;                         // kRerank
  size_t top_n = 0;                          // kRerank; 0: all
  RequestClass request_class = RequestClass::kInteractive;
};

// A submitted job's shared state: the HTTP thread waits on it, the executor fills it.
class EmbeddingTicket {
 public:
  // True once the outcome is ready (then status(), embed() and rerank() may be read).
  bool wait_for(std::chrono::milliseconds timeout);
  // The executor skips a cancelled job that has not started.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

  const Status& status() const { return status_; }
  EmbedResult& embed() { return embed_; }
  RerankResult& rerank() { return rerank_; }

 private:
  friend class EmbeddingService;
  void finish(Status status);

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
  Status status_;
  EmbedResult embed_;
  RerankResult rerank_;
};

class EmbeddingTicket;

// The executor's waiting requests, one queue per class (pure policy, no threads: tested by
// popping). pop_batch takes heads by weighted fair share: the class with the smallest virtual
// time goes next and its virtual time advances by the inputs taken / its weight (ties: the
// higher class); a class that starts waiting joins at the others' virtual time, so idleness
// earns no credit. Arrival order within a class.
class EmbeddingQueue {
 public:
  struct Entry {
    EmbeddingJob job;
    std::shared_ptr<EmbeddingTicket> ticket;
  };
  explicit EmbeddingQueue(const std::array<uint32_t, kRequestClassCount>& weights);

  void push(Entry entry);
  // Heads in fair-share order up to max_inputs inputs (always at least one entry if any wait).
  std::deque<Entry> pop_batch(size_t max_inputs);
  size_t size() const;
  bool empty() const { return size() == 0; }

 private:
  std::array<uint32_t, kRequestClassCount> weights_;
  std::array<std::deque<Entry>, kRequestClassCount> waiting_;
  std::array<double, kRequestClassCount> virtual_time_{};
};

class EmbeddingService {
 public:
  EmbeddingService(std::unique_ptr<EmbeddingRuntime> runtime, EmbeddingServiceConfig config);
  ~EmbeddingService();  // shutdown()
  EmbeddingService(const EmbeddingService&) = delete;
  EmbeddingService& operator=(const EmbeddingService&) = delete;

  // Facts fixed at load, safe from any thread.
  size_t n_embd() const { return n_embd_; }
  size_t n_ctx() const { return n_ctx_; }
  bool can_rerank() const { return can_rerank_; }

  // queue_full (transient) when max_queued requests wait; unavailable after shutdown().
  Result<std::shared_ptr<EmbeddingTicket>> submit(EmbeddingJob job);
  // Seconds a refused client should wait (1..60), from the queue depth.
  uint32_t retry_after_s() const;
  // Stops admitting, finishes what is queued, joins the executor. Idempotent.
  void shutdown();

 private:
  using Entry = EmbeddingQueue::Entry;
  void loop();
  void run_group(std::vector<Entry*>& group);
  void run_one(Entry& entry);

  std::unique_ptr<EmbeddingRuntime> runtime_;
  EmbeddingServiceConfig config_;
  size_t n_embd_ = 0;
  size_t n_ctx_ = 0;
  bool can_rerank_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  EmbeddingQueue queue_;
  bool stopping_ = false;
  std::atomic<double> mean_batch_s_{0.1};
  std::thread executor_;
};

}  // namespace synapse::serve
