// SPDX-License-Identifier: Apache-2.0
#include "serve/service.h"

#include <algorithm>
#include <future>

#include "base/fail_point.h"
#include "encoder/embedder.h"
#include "encoder/pooling.h"
#include "runtime/engine.h"
#include "sample/sampler.h"
#include "sample/stop_matcher.h"
#include "serve/prefix_cache.h"
#include "serve/service_state.h"
#include "speculative/draft_model.h"
#include "tokenizer/detokenizer.h"

namespace synapse::serve {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

size_t pages_for(size_t tokens, size_t page_tokens) {
  return (tokens + page_tokens - 1) / page_tokens;
}

}  // namespace

DecoderOptions serving_decoder_options(uint32_t n_ctx) {
  DecoderOptions options;
  options.n_ctx = n_ctx;
  options.matmul_mode.route = MatmulRoute::kStream;
  return options;
}

bool batch_invariant(const DecoderModel& model) {
  return model.plan().matmul_mode.route != MatmulRoute::kAuto;
}

Service::Service(DecoderModel& model, const tokenizer::Tokenizer& tokenizer, ServiceConfig config)
    : tokenizer_(tokenizer),
      config_(std::move(config)),
      n_embd_(model.n_embd()),
      limits_{model.n_vocab(), model.n_ctx(), model.hparams().n_token_types, model.bidirectional(),
              synapse::can_rerank(model)},
      wakeup_(std::make_shared<LoopWakeup>()),
      scheduler_(config_.scheduler) {
  if (!config_.clock) config_.clock = [] { return Clock::now(); };
  config_.max_step_tokens = std::max(config_.max_step_tokens, config_.scheduler.max_active + 1);
  config_.prefill_chunk_tokens = std::max<size_t>(config_.prefill_chunk_tokens, 1);
  config_.bulk_prefill_chunk_tokens =
      std::clamp<size_t>(config_.bulk_prefill_chunk_tokens, 1, config_.prefill_chunk_tokens);
  config_.page_tokens = std::max<size_t>(config_.page_tokens, 1);
  EngineConfig engine_config;
  engine_config.max_batch_tokens = config_.max_step_tokens;
  engine_config.kv.page_tokens = config_.page_tokens;
  engine_config.kv.max_pages =
      config_.max_kv_pages != 0
          ? config_.max_kv_pages
          : (scheduler_.config().max_active + 2) * pages_for(limits_.n_ctx, config_.page_tokens);
  state_ = std::make_unique<LoopState>(model, engine_config, config_.max_cached_sequences);
  const KvCacheStats kv = state_->engine.cache().stats();
  kv_capacity_bytes_ = static_cast<uint64_t>(kv.max_pages) * kv.page_bytes;
  if (config_.compute_gate) gate_member_ = config_.compute_gate->join();
  publish_stats();
  thread_ = std::thread([this] { loop(); });
}

Service::~Service() {
  shutdown(std::chrono::milliseconds(0));
  if (config_.compute_gate) config_.compute_gate->leave(gate_member_);
}

Result<std::shared_ptr<RequestHandle>> Service::submit(GenerationRequest request) {
  const RequestClass c = request.request_class;
  auto refuse = [&](Status status) -> Result<std::shared_ptr<RequestHandle>> {
    metrics_.count_request(c, error_code_name(status.code()));
    return status;
  };
  if (request.eog_tokens.empty()) request.eog_tokens = config_.eog_tokens;
  if (Status checked = check_request(request, limits_); !checked.ok()) {
    return refuse(std::move(checked));
  }
  Result<Sampler> sampler =
      Sampler::create(request.sampling, static_cast<int32_t>(limits_.n_vocab));
  if (!sampler.ok()) return refuse(std::move(sampler).take_status());
  Result<StopMatcher> stop = StopMatcher::create(request.stop);
  if (!stop.ok()) return refuse(std::move(stop).take_status());

  std::shared_ptr<RequestHandle> handle;
  {
    std::lock_guard lock(mu_);
    if (!accepting_) {
      return refuse(Status(ErrorCode::kUnavailable, "the service is shutting down"));
    }
    const Ticket ticket = next_ticket_++;
    if (Status s = scheduler_.enqueue(ticket, c, steps_.load()); !s.ok()) {
      return refuse(std::move(s));
    }
    handle = std::make_shared<RequestHandle>(request.id, c, wakeup_);
    inbox_.push_back(std::make_unique<Job>(ticket, std::move(request), handle, std::move(*sampler),
                                           std::move(*stop), tokenizer_));
    waiting_.store(scheduler_.waiting());
    metrics_.set_queue_depth(c, scheduler_.waiting(c));
  }
  wakeup_->notify();
  return handle;
}

uint32_t Service::retry_after_s(RequestClass c) const {
  size_t depth = 0;
  size_t slots = 1;
  {
    std::lock_guard lock(mu_);
    depth = scheduler_.waiting(c);
    slots = scheduler_.config().max_active;
  }
  const double s = mean_request_s_.load() * static_cast<double>(depth + 1) /
                   static_cast<double>(std::max<size_t>(slots, 1));
  return static_cast<uint32_t>(std::clamp(s + 0.999, 1.0, 60.0));
}

void Service::shutdown(std::chrono::milliseconds grace) {
  std::lock_guard shutdown_lock(shutdown_mu_);
  {
    std::lock_guard lock(mu_);
    if (!accepting_ && !thread_.joinable()) return;
    if (accepting_ || Clock::now() + grace < drain_deadline_) {
      drain_deadline_ = Clock::now() + grace;
    }
    accepting_ = false;
    draining_ = true;
  }
  wakeup_->notify();
  if (thread_.joinable()) thread_.join();
}

ServiceStats Service::stats() const {
  ServiceStats s;
  s.steps = steps_.load();
  s.kv_pages_in_use = kv_pages_in_use_.load();
  s.kv_pages_total = kv_pages_total_.load();
  s.active = active_.load();
  s.waiting = waiting_.load();
  s.cached_sequences = cached_sequences_.load();
  s.prefix_hits = prefix_hits_.load();
  return s;
}

void Service::publish_stats() {
  const KvCacheStats kv = state_->engine.cache().stats();
  kv_pages_in_use_.store(kv.pages_in_use);
  kv_pages_total_.store(kv.max_pages);
  cached_sequences_.store(state_->cache.size());
  metrics_.set_kv_pages(kv.pages_in_use, kv.max_pages);
}

void Service::take_inbox_locked() {
  for (std::unique_ptr<Job>& job : inbox_) {
    const Ticket t = job->ticket;
    state_->jobs.emplace(t, std::move(job));
  }
  inbox_.clear();
}

void Service::retire_expired_locked(bool cancel_all) {
  const Clock::time_point now = config_.clock();
  for (auto& [ticket, job_ptr] : state_->jobs) {
    Job& job = *job_ptr;
    if (job.finished) continue;
    GenerationEvent event;
    event.step = state_->step;
    if (job.handle->cancel_requested()) {
      finish(job, event, FinishReason::kCancelled,
             Status(ErrorCode::kCancelled, "cancelled by the caller"));
    } else if (job.request.deadline && now >= *job.request.deadline) {
      finish(job, event, FinishReason::kError,
             Status(ErrorCode::kDeadlineExceeded, "the request's deadline passed",
                    ErrorWhere{.field = "deadline"}));
    } else if (cancel_all) {
      finish(job, event, FinishReason::kCancelled,
             Status(ErrorCode::kUnavailable, "the service is shutting down"));
    }
  }
}

void Service::loop() {
  LoopState& s = *state_;
  for (;;) {
    bool exit = false;
    {
      std::lock_guard lock(mu_);
      take_inbox_locked();
      retire_expired_locked(draining_ && Clock::now() >= drain_deadline_);
      for (const auto& [ticket, tokens] : s.charges) scheduler_.charge(ticket, tokens);
      s.charges.clear();
      for (Ticket t : s.finished) {
        scheduler_.remove(t);
        s.jobs.erase(t);
      }
      s.finished.clear();
      scheduler_.schedule(s.step, s.decision);
      for (size_t c = 0; c < kRequestClassCount; ++c) {
        const auto rc = static_cast<RequestClass>(c);
        metrics_.set_queue_depth(rc, scheduler_.waiting(rc));
        metrics_.set_running_sequences(rc, scheduler_.active(rc));
      }
      waiting_.store(scheduler_.waiting());
      active_.store(scheduler_.active());
      exit = draining_ && s.jobs.empty();
    }
    if (exit) break;
    metrics_.set_active_sequences(active_.load());
    for (Ticket t : s.decision.preempted) {
      s.jobs.at(t)->running = false;
      metrics_.count_preemption();
    }
    for (Ticket t : s.decision.started) {
      Job& job = *s.jobs.at(t);
      job.running = true;
      if (!job.has_sequence) start_job(job);
    }
    if (!run_step()) {
      s.grant.release();  // idle: the other models' loops take the cores
      wakeup_->wait_until(Clock::now() + config_.idle_poll);
    }
  }
  s.grant.release();
  // Drop the prefix cache; the engine goes with the service.
  while (std::optional<SeqId> seq = s.cache.evict_lru()) (void)s.engine.release(*seq);
  publish_stats();
}

void Service::start_job(Job& job) {
  LoopState& s = *state_;
  job.queued_ms = ms_between(job.submitted, Clock::now());
  const std::vector<int32_t>& prompt = job.request.prompt;
  if (job.request.on_start) job.request.on_start();
  // Test-only (SYNAPSE_FAILPOINTS): the prompt is detokenized only when a point is set.
  if (fail_points_armed()) {
    const Result<std::string> text = tokenizer_.decode(prompt);
    fail_point("engine.prompt", text.ok() ? std::string_view(*text) : std::string_view());
  }
  if (job.request.embedding) {
    // Every prompt row's hidden state may be pooled: no prefix reuse.
    job.sequence = s.engine.new_sequence();
    job.has_sequence = true;
    if (job.request.embedding->pooling == PoolingType::kMean) job.mean.emplace(n_embd_);
    metrics_.add_prompt_tokens(prompt.size(), 0);
    return;
  }
  const std::optional<PrefixCache::Match> match =
      s.cache.longest_match(prompt, std::max<size_t>(config_.min_prefix_reuse_tokens, 1));
  // Keep at least one prompt token to run: its logits give the first generated token.
  const size_t reuse = match ? std::min(match->common, prompt.size() - 1) : 0;
  bool hit = false;
  if (reuse > 0 && reuse >= config_.min_prefix_reuse_tokens) {
    const PrefixCache::Entry& entry = s.cache.entry(match->index);
    if (reuse == entry.tokens.size()) {
      // The new prompt extends the cached sequence: take it over instead of forking.
      job.sequence = s.cache.take(match->index).sequence;
      hit = true;
    } else if (Result<SeqId> fork = s.engine.fork(entry.sequence); fork.ok()) {
      s.cache.touch(match->index, ++s.lru_clock);
      job.sequence = *fork;
      s.engine.truncate(job.sequence, reuse);
      hit = true;
    }
  }
  if (config_.draft_max > 0 && job.request.speculative) {
    job.context = prompt;
    if (config_.draft_model != nullptr) {
      job.draft_model = std::make_unique<DraftModelDrafter>(*config_.draft_model);
    }
  }
  if (hit) {
    job.prompt_done = job.cached = reuse;
    prefix_hits_.fetch_add(1);
  } else {
    job.sequence = s.engine.new_sequence();
  }
  job.has_sequence = true;
  metrics_.count_prefix_lookup(hit);
  metrics_.add_prompt_tokens(prompt.size(), job.cached);
}

void Service::make_room(size_t pages_needed) {
  LoopState& s = *state_;
  KvCacheStats kv = s.engine.cache().stats();
  while (kv.pages_in_use + pages_needed > kv.max_pages) {
    const std::optional<SeqId> seq = s.cache.evict_lru();
    if (!seq) break;
    (void)s.engine.release(*seq);
    kv = s.engine.cache().stats();
  }
}

bool Service::run_step() {
  LoopState& s = *state_;
  s.running.clear();
  for (auto& [ticket, job] : s.jobs) {
    if (job->running && !job->finished) s.running.push_back(job.get());
  }
  if (s.running.empty()) return false;
  fail_point("engine.step");  // test-only: a crash, abort or hang at the Nth step
  // Test-only: slow steps, so that a stream is still generating whatever the build's speed.
  static const int64_t step_delay_ms = fail_point_value("serve.step_delay_ms");
  if (step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_delay_ms));
  // Decodes in ticket order, then prompt chunks by class and arrival.
  std::sort(s.running.begin(), s.running.end(), [](const Job* a, const Job* b) {
    if (a->request.request_class != b->request.request_class) {
      return a->request.request_class < b->request.request_class;
    }
    return a->ticket < b->ticket;
  });
  s.inputs.clear();
  s.slots.clear();
  size_t pages_needed = 0;
  auto add = [&](Job* job, std::span<const int32_t> tokens, LogitsWanted logits, bool decode,
                 LogitsWanted hidden = LogitsWanted::kNone, size_t n_drafts = 0) {
    std::span<const int32_t> types;
    if (job->request.embedding && !job->request.embedding->token_types.empty()) {
      types =
          std::span(job->request.embedding->token_types).subspan(job->prompt_done, tokens.size());
    }
    // Drafts: the logits of the last chosen token's row and of every draft's.
    const size_t logits_from = n_drafts > 0 ? tokens.size() - n_drafts - 1 : 0;
    s.inputs.push_back(StepInput{job->sequence, tokens, logits, hidden, types, logits_from});
    s.slots.push_back(LoopState::Slot{job, tokens.size(), decode, n_drafts});
    const size_t n = s.engine.n_tokens(job->sequence);
    pages_needed += pages_for(n + tokens.size(), config_.page_tokens) -
                    pages_for(n, config_.page_tokens) + (n % config_.page_tokens != 0 ? 1 : 0);
  };
  // Decodes: each job's chosen tokens, as many as the step holds (the logits only once the
  // last is in), and after them the drafts of a job that speculates.
  size_t step_tokens = 0;
  const size_t decoding = static_cast<size_t>(std::count_if(
      s.running.begin(), s.running.end(), [](const Job* job) { return !job->pending.empty(); }));
  const bool drafts = config_.draft_max > 0 && decoding <= config_.draft_max_batch;
  for (Job* job : s.running) {
    if (job->pending.empty()) continue;
    const size_t take = std::min(job->pending.size(), config_.max_step_tokens - step_tokens);
    if (take == 0) continue;
    if (drafts && take == job->pending.size() && propose_drafts(*job, step_tokens + take)) {
      job->step_tokens.assign(job->pending.begin(), job->pending.end());
      job->step_tokens.insert(job->step_tokens.end(), job->drafts.begin(), job->drafts.end());
      add(job, job->step_tokens, LogitsWanted::kAll, true, LogitsWanted::kNone, job->drafts.size());
      step_tokens += job->step_tokens.size();
      continue;
    }
    add(job, std::span(job->pending).first(take),
        take == job->pending.size() ? LogitsWanted::kLast : LogitsWanted::kNone, true);
    step_tokens += take;
  }
  // Prompt chunks come from the highest class with a prompt left, alone: an interactive prompt
  // never shares its step with bulk prefill, and bulk prompts go in smaller chunks so that the
  // step an interactive request arrives during ends soon (s.running is sorted by class).
  std::optional<RequestClass> prefill_class;
  for (const Job* job : s.running) {
    if (job->pending.empty() && job->prompt_done < job->request.prompt.size()) {
      prefill_class = job->request.request_class;
      break;
    }
  }
  const size_t chunk_rows = prefill_class == RequestClass::kInteractive
                                ? config_.prefill_chunk_tokens
                                : config_.bulk_prefill_chunk_tokens;
  // A bidirectional model has no decodes to keep pace with, and runs each prompt whole: its
  // prompts fill the step, and one longer than the step runs alone.
  size_t budget = limits_.bidirectional
                      ? config_.max_step_tokens - step_tokens
                      : std::min(chunk_rows, config_.max_step_tokens - step_tokens);
  for (Job* job : s.running) {
    const size_t left = job->request.prompt.size() - job->prompt_done;
    if (job->request.request_class != prefill_class) continue;
    if (!job->pending.empty() || left == 0 || budget == 0) continue;
    if (limits_.bidirectional && left > budget && !s.inputs.empty()) continue;
    const size_t take = limits_.bidirectional ? left : std::min(left, budget);
    const std::span<const int32_t> chunk =
        std::span(job->request.prompt).subspan(job->prompt_done, take);
    if (job->request.embedding && job->request.embedding->pooling == PoolingType::kRank) {
      // The classifier on the first row.
      add(job, chunk, LogitsWanted::kFirst, false);
    } else if (job->request.embedding) {
      // Prefill only: the hidden rows it pools instead of logits (the last row only from the
      // prompt's last chunk).
      const LogitsWanted rows = pooling_rows(job->request.embedding->pooling);
      add(job, chunk, LogitsWanted::kNone, false,
          rows == LogitsWanted::kLast && take != left ? LogitsWanted::kNone : rows);
    } else {
      add(job, chunk, take == left ? LogitsWanted::kLast : LogitsWanted::kNone, false);
    }
    budget -= std::min(take, budget);
  }
  if (s.inputs.empty()) return false;
  make_room(pages_needed);
  // Other models' loops share the cores: this step runs when the gate gives them to it, in the
  // most urgent class among its rows.
  if (config_.compute_gate) {
    RequestClass urgent = RequestClass::kBackground;
    for (const LoopState::Slot& slot : s.slots) {
      urgent = std::min(urgent, slot.job->request.request_class);
    }
    config_.compute_gate->take_turn(s.grant, gate_member_, urgent);
    metrics_.add_compute_wait(s.grant.waited_s());
  }

  const Clock::time_point started = Clock::now();
  // Constrained requests that sample this step: their masks depend only on the text so far, so
  // they are computed on another thread while the forward pass runs, and one slow mask adds
  // to the step only what it takes beyond the pass.
  std::vector<Job*> masked;
  for (size_t i = 0; i < s.slots.size(); ++i) {
    Job* job = s.slots[i].job;
    // A mask left by fast-forward (forced_token) is already this step's.
    if (job->request.constraint && s.inputs[i].logits != LogitsWanted::kNone && !job->mask_ready) {
      masked.push_back(job);
    }
  }
  std::future<void> masks;
  if (!masked.empty()) {
    masks = std::async(std::launch::async, [&masked] {
      for (Job* job : masked) {
        if (!job->matcher) job->matcher.emplace(job->request.constraint->new_matcher());
        constrain::compute_step_mask(*job->request.constraint, *job->matcher,
                                     job->request.eog_tokens, job->mask);
        job->mask_ready = true;
      }
    });
  }
  const Status status = s.engine.step(s.inputs, s.out);
  if (masks.valid()) masks.get();
  if (!status.ok()) {
    if (status.code() == ErrorCode::kResourceExhausted) {
      // The pool cannot hold this step even without the prefix cache: the lowest-priority,
      // newest request gives way (nothing ran; the others retry next step).
      const auto victim = std::max_element(
          s.slots.begin(), s.slots.end(), [](const LoopState::Slot& a, const LoopState::Slot& b) {
            const RequestClass ca = a.job->request.request_class;
            const RequestClass cb = b.job->request.request_class;
            return ca != cb ? ca < cb : a.job->ticket < b.job->ticket;
          });
      GenerationEvent event;
      event.step = s.step;
      finish(*victim->job, event, FinishReason::kError, status);
    } else {
      for (LoopState::Slot& slot : s.slots) {
        if (slot.job->finished) continue;
        GenerationEvent event;
        event.step = s.step;
        finish(*slot.job, event, FinishReason::kError, status);
      }
    }
    return true;
  }
  size_t rows = 0;
  for (size_t i = 0; i < s.slots.size(); ++i) {
    LoopState::Slot& slot = s.slots[i];
    Job& job = *slot.job;
    rows += slot.n_tokens;
    if (slot.decode) {
      // The drafts are not the request's tokens until verified (verify_and_emit).
      const size_t fed = slot.n_tokens - slot.n_drafts;
      job.fed += fed;
      job.pending.erase(job.pending.begin(),
                        job.pending.begin() + static_cast<std::ptrdiff_t>(fed));
      s.charges.emplace_back(job.ticket, slot.n_tokens);
    } else {
      job.prompt_done += slot.n_tokens;
    }
    if (job.request.embedding) {
      // Prompt work is the whole of an embedding's cost: it counts toward the class's fair
      // share and the quantum, so bulk embedding yields to waiting interactive requests.
      s.charges.emplace_back(job.ticket, slot.n_tokens);
      if (job.request.embedding->pooling == PoolingType::kRank) {
        emit_scores(job, s.out.last(i));
      } else {
        pool_and_emit(job, s.out.hidden_rows(i));
      }
    } else if (slot.n_drafts > 0) {
      verify_and_emit(job, i);
    } else if (s.inputs[i].logits != LogitsWanted::kNone) {
      sample_and_emit(job, s.out.last(i));
    }
  }
  metrics_.observe_step(s.slots.size(), rows,
                        std::chrono::duration<double>(Clock::now() - started).count());
  ++s.step;
  steps_.store(s.step);
  publish_stats();
  return true;
}

void Service::release_sequence(Job& job, bool keep_in_cache) {
  LoopState& s = *state_;
  if (!job.has_sequence) return;
  job.has_sequence = false;
  // Drafts of the last step past the request's tokens (it ended among them) are not its text.
  if (s.engine.n_tokens(job.sequence) > job.prompt_done + job.fed) {
    s.engine.truncate(job.sequence, job.prompt_done + job.fed);
  }
  const std::vector<int32_t>& prompt = job.request.prompt;
  // Embedding prompts stay out of the prefix cache: bulk embedding would evict the prefixes
  // that generation reuses.
  if (keep_in_cache && !job.request.embedding && config_.max_cached_sequences > 0 &&
      job.prompt_done == prompt.size()) {
    std::vector<int32_t> tokens(prompt);
    tokens.insert(tokens.end(), job.generated.begin(),
                  job.generated.begin() + static_cast<std::ptrdiff_t>(job.fed));
    if (tokens.size() == s.engine.n_tokens(job.sequence)) {
      s.evicted.clear();
      s.cache.insert(job.sequence, std::move(tokens), ++s.lru_clock, s.evicted);
      for (SeqId seq : s.evicted) (void)s.engine.release(seq);
      return;
    }
  }
  (void)s.engine.release(job.sequence);
}

void Service::finish(Job& job, GenerationEvent& event, FinishReason reason, Status error) {
  LoopState& s = *state_;
  job.finished = true;
  job.running = false;
  release_sequence(job, reason == FinishReason::kStop || reason == FinishReason::kLength);
  publish_stats();
  s.finished.push_back(job.ticket);

  const Clock::time_point now = Clock::now();
  event.final = true;
  event.finish_reason = reason;
  event.matched_stop = job.stop.matched_stop();
  event.usage.prompt_tokens = job.request.prompt.size();
  event.usage.cached_prompt_tokens = job.cached;
  event.usage.completion_tokens = job.generated.size();
  event.timings.queued_ms = job.queued_ms;
  event.timings.total_ms = ms_between(job.submitted, now);
  event.timings.draft_tokens = job.draft_tokens;
  event.timings.draft_tokens_accepted = job.draft_tokens_accepted;
  if (!job.generated.empty()) {
    event.timings.time_to_first_token_ms = ms_between(job.submitted, job.first_token);
    const double decode_s = ms_between(job.first_token, job.last_token) / 1000.0;
    if (decode_s > 0) {
      event.timings.decode_tokens_per_s = static_cast<double>(job.generated.size() - 1) / decode_s;
    }
  }
  metrics_.count_request(job.request.request_class, reason == FinishReason::kError
                                                        ? error_code_name(error.code())
                                                        : finish_reason_name(reason));
  if (reason == FinishReason::kStop || reason == FinishReason::kLength) {
    mean_request_s_.store(0.9 * mean_request_s_.load() + 0.1 * event.timings.total_ms / 1000.0);
  }
  event.error = std::move(error);
  job.handle->push(std::move(event));
}

}  // namespace synapse::serve
