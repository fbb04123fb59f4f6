// SPDX-License-Identifier: Apache-2.0
#include "serve/embedding_service.h"

#include <algorithm>
#include <cmath>

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

EmbeddingService::EmbeddingService(std::unique_ptr<Embedder> embedder,
                                   EmbeddingServiceConfig config)
    : embedder_(std::move(embedder)), config_(config), pool_(std::max(1, config.threads)) {
  n_embd_ = embedder_->n_embd();
  n_ctx_ = embedder_->model().hparams().n_ctx_train;
  can_rerank_ = embedder_->can_rerank();
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
    queue_.push_back({std::move(job), ticket});
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
      // Everything waiting now, up to max_batch_inputs inputs (the first request always).
      size_t inputs = 0;
      while (!queue_.empty()) {
        const EmbeddingJob& job = queue_.front().job;
        const size_t n = job.texts.size() + job.tokens.size();
        if (!batch.empty() && inputs + n > config_.max_batch_inputs) break;
        inputs += n;
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
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
        embedder_->rerank(job.query, job.texts, job.top_n, job.options.truncate, pool_);
    if (!r.ok()) return ticket.finish(r.status());
    ticket.rerank_ = std::move(*r);
    return ticket.finish(ok_status());
  }
  Result<EmbedResult> r = job.kind == EmbeddingJob::Kind::kEmbedText
                              ? embedder_->embed(job.texts, job.options, pool_)
                              : embedder_->embed_tokens(job.tokens, job.options, pool_);
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
  Result<EmbedResult> all = text ? embedder_->embed(texts, options, pool_)
                                 : embedder_->embed_tokens(tokens, options, pool_);
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
