// SPDX-License-Identifier: Apache-2.0
#include "serve/embedding_service.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace synapse::serve {

bool EmbeddingTicket::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return done_; });
}

void EmbeddingTicket::finish(Status status) {
  {
    std::lock_guard lock(mu_);
    status_ = std::move(status);
    done_ = true;
  }
  cv_.notify_all();
}

EmbeddingQueue::EmbeddingQueue(const std::array<uint32_t, kRequestClassCount>& weights)
    : weights_(weights) {
  for (uint32_t& w : weights_) w = std::max<uint32_t>(w, 1);
}

size_t EmbeddingQueue::size() const {
  size_t n = 0;
  for (const auto& q : waiting_) n += q.size();
  return n;
}

void EmbeddingQueue::push(Entry entry) {
  const auto c = static_cast<size_t>(entry.job.request_class);
  if (waiting_[c].empty()) {
    double floor = std::numeric_limits<double>::infinity();
    for (size_t o = 0; o < kRequestClassCount; ++o) {
      if (o != c && !waiting_[o].empty()) floor = std::min(floor, virtual_time_[o]);
    }
    if (floor != std::numeric_limits<double>::infinity()) {
      virtual_time_[c] = std::max(virtual_time_[c], floor);
    }
  }
  waiting_[c].push_back(std::move(entry));
}

std::deque<EmbeddingQueue::Entry> EmbeddingQueue::pop_batch(size_t max_inputs) {
  std::deque<Entry> batch;
  size_t inputs = 0;
  for (;;) {
    int best = -1;
    for (size_t c = 0; c < kRequestClassCount; ++c) {
      if (waiting_[c].empty()) continue;
      if (best < 0 || virtual_time_[c] < virtual_time_[static_cast<size_t>(best)]) {
        best = static_cast<int>(c);
      }
    }
    if (best < 0) break;
    const auto c = static_cast<size_t>(best);
    const EmbeddingJob& job = waiting_[c].front().job;
    const size_t n = std::max<size_t>(job.texts.size() + job.tokens.size(), 1);
    if (!batch.empty() && inputs + n > max_inputs) break;
    inputs += n;
    virtual_time_[c] += static_cast<double>(n) / weights_[c];
    batch.push_back(std::move(waiting_[c].front()));
    waiting_[c].pop_front();
  }
  return batch;
}

EmbeddingService::EmbeddingService(std::unique_ptr<EmbeddingRuntime> runtime,
                                   EmbeddingServiceConfig config)
    : runtime_(std::move(runtime)), config_(config), queue_(config.weights) {
  n_embd_ = runtime_->embedder().n_embd();
  n_ctx_ = runtime_->n_ctx();
  can_rerank_ = runtime_->embedder().can_rerank();
  executor_ = std::thread([this] { loop(); });
}

EmbeddingService::~EmbeddingService() { shutdown(); }

Result<std::shared_ptr<EmbeddingTicket>> EmbeddingService::submit(EmbeddingJob job) {
  auto ticket = std::make_shared<EmbeddingTicket>();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status(ErrorCode::kUnavailable, "the server is shutting down");
    if (queue_.size() >= config_.max_queued) {
      return Status(ErrorCode::kQueueFull, "too many embedding requests are waiting (" +
                                               std::to_string(config_.max_queued) +
                                               "); retry later");
    }
    queue_.push({std::move(job), ticket});
  }
  cv_.notify_one();
  return ticket;
}

uint32_t EmbeddingService::retry_after_s() const {
  size_t depth = 0;
  {
    std::lock_guard lock(mu_);
    depth = queue_.size();
  }
  const double s = std::ceil(static_cast<double>(depth) * mean_batch_s_.load());
  return static_cast<uint32_t>(std::clamp(s, 1.0, 60.0));
}

void EmbeddingService::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (executor_.joinable()) executor_.join();
}

void EmbeddingService::loop() {
  for (;;) {
    std::deque<Entry> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      // Everything waiting now, up to max_batch_inputs inputs (the first request always), by
      // class share.
      batch = queue_.pop_batch(config_.max_batch_inputs);
    }
    const auto start = std::chrono::steady_clock::now();
    // Group the embedding requests by what must be equal within one Embedder call.
    std::vector<bool> taken(batch.size(), false);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (taken[i]) continue;
      taken[i] = true;
      Entry& first = batch[i];
      if (first.ticket->cancelled()) {
        first.ticket->finish(Status(ErrorCode::kCancelled, "the request was cancelled"));
        continue;
      }
      if (first.job.kind == EmbeddingJob::Kind::kRerank) {
        run_one(first);
        continue;
      }
      std::vector<Entry*> group = {&first};
      for (size_t j = i + 1; j < batch.size(); ++j) {
        const EmbeddingJob& a = first.job;
        const EmbeddingJob& b = batch[j].job;
        if (taken[j] || b.kind != a.kind || b.options.pooling != a.options.pooling ||
            b.options.normalize != a.options.normalize ||
            b.options.truncate != a.options.truncate || batch[j].ticket->cancelled()) {
          continue;
        }
        taken[j] = true;
        group.push_back(&batch[j]);
      }
      run_group(group);
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    mean_batch_s_ = 0.8 * mean_batch_s_.load() + 0.2 * s;
  }
}

void EmbeddingService::run_one(Entry& entry) {
  EmbeddingJob& job = entry.job;
  EmbeddingTicket& ticket = *entry.ticket;
  if (job.kind == EmbeddingJob::Kind::kRerank) {
    Result<RerankResult> r =
        runtime_->embedder().rerank(job.query, job.texts, job.top_n, job.options.truncate);
    if (!r.ok()) return ticket.finish(r.status());
    ticket.rerank_ = std::move(*r);
    return ticket.finish(ok_status());
  }
  Result<EmbedResult> r = job.kind == EmbeddingJob::Kind::kEmbedText
                              ? runtime_->embedder().embed(job.texts, job.options)
                              : runtime_->embedder().embed_tokens(job.tokens, job.options);
  if (!r.ok()) return ticket.finish(r.status());
  ticket.embed_ = std::move(*r);
  ticket.finish(ok_status());
}

void EmbeddingService::run_group(std::vector<Entry*>& group) {
  if (group.size() == 1) return run_one(*group.front());
  const bool text = group.front()->job.kind == EmbeddingJob::Kind::kEmbedText;
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> tokens;
  for (Entry* e : group) {
    for (std::string& t : e->job.texts) texts.push_back(t);
    for (std::vector<int32_t>& t : e->job.tokens) tokens.push_back(t);
  }
  const EmbedOptions& options = group.front()->job.options;
  Result<EmbedResult> all = text ? runtime_->embedder().embed(texts, options)
                                 : runtime_->embedder().embed_tokens(tokens, options);
  if (!all.ok()) {
    // One request's input is bad: run each alone, so that each error names its own input.
    for (Entry* e : group) run_one(*e);
    return;
  }
  size_t next = 0;
  for (Entry* e : group) {
    const size_t n = text ? e->job.texts.size() : e->job.tokens.size();
    EmbedResult& mine = e->ticket->embed_;
    mine.n_embd = all->n_embd;
    mine.pooling = all->pooling;
    for (size_t k = 0; k < n; ++k, ++next) {
      mine.prompt_tokens += all->items[next].n_tokens;
      mine.items.push_back(std::move(all->items[next]));
    }
    e->ticket->finish(ok_status());
  }
}

}  // namespace synapse::serve
