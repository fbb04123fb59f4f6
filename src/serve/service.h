// SPDX-License-Identifier: Apache-2.0
// The service core that the HTTP layer calls: submit() a GenerationRequest, read its events from
// the returned RequestHandle, cancel() it from any thread, render_prometheus() for /metrics,
// shutdown() to stop.
//
// Threading: one engine-loop thread, started by the constructor, owns the Engine (and so the
// model's activations, the KV cache and the backend's thread pool), the prefix cache and every
// running request's sampler, stop matcher and detokenizer. Callers' threads only validate and
// enqueue requests (under one mutex that also guards the Scheduler) and pop events from their
// handles. Each loop iteration: retire cancelled and expired requests, let the Scheduler fill
// and preempt slots, build one step (one token for every decoding slot plus prefill chunks of
// starting prompts, bounded by max_step_tokens), run it, sample every sequence with its own
// Sampler, push events.
//
// Determinism: on a model opened with serving_decoder_options() the decoder's logits for a
// sequence do not depend on the rest of the batch (one matmul route; a column's result is
// independent of the column count), so greedy output is the same alone or batched, and a request
// served from the prefix cache gives the same tokens as one prefilled from scratch.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "model/decoder.h"
#include "serve/compute_gate.h"
#include "serve/metrics.h"
#include "serve/model_service.h"
#include "serve/request.h"
#include "serve/request_handle.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace synapse::serve {

// Decoder options for serving: one matmul route for every step (MatmulRoute::kStream: the
// streamed bits, through the tiles wherever they give them, and interleaved weights' one kernel).
// With the default kAuto the route follows the step's total row count, and where a level's tile
// rounds differently a sequence's logits would depend on what else is batched with it.
DecoderOptions serving_decoder_options(uint32_t n_ctx = 0);
// Whether the model's plan gives every sequence the same logits whatever the batch.
bool batch_invariant(const DecoderModel& model);

struct ServiceConfig {
  SchedulerConfig scheduler;
  size_t max_step_tokens = 512;       // rows per engine step (decodes + prefill chunks)
  size_t prefill_chunk_tokens = 128;  // prompt rows per step, so running streams keep pace
  // Prompt rows per step when the prompts waiting are batch or background ones: a step an
  // interactive request arrives during ends sooner (its time to first token under bulk work).
  size_t bulk_prefill_chunk_tokens = 32;
  size_t page_tokens = 32;           // KV page size
  size_t max_kv_pages = 0;           // 0: (max_active + 2) sequences of the full context
  size_t max_cached_sequences = 16;  // prefix cache entries; 0 turns the cache off
  size_t min_prefix_reuse_tokens = 16;
  std::vector<int32_t> eog_tokens;  // used by requests that name none
  // Fast-forward: a token that a request's grammar forces (the only one it allows) is emitted
  // without sampling, and the tokens forced after it are fed together with it in the next step
  // (one forward pass for all; the keys of an object in definition order are forced). The
  // first one is found by the mask computed during the forward pass, so the masks computed on
  // the loop thread are only those that replace a pass. Requests that ask for logprobs sample
  // every token. Off only to compare.
  bool fast_forward = true;
  static constexpr size_t kMaxForcedPerStep = 64;
  // Speculative decoding (docs/speculative.md): each decoding request's step also runs up to
  // draft_max drafted tokens -- by prompt lookup, the tokens that followed its last tokens
  // earlier in its prompt or output -- and takes those its sampler accepts (the same output,
  // fewer steps where the drafts are right). 0: off. The rows count toward max_step_tokens.
  size_t draft_max = 0;
  // Set: the drafts come from this smaller model of the same vocabulary instead of prompt
  // lookup, each speculating request decoding greedily ahead on a sequence of its own (on the
  // loop thread, in the step it drafts for). Not owned; it outlives the service.
  DecoderModel* draft_model = nullptr;
  // ... only in steps that decode at most this many sequences: a wider step is compute-bound
  // already on a few cores, where drafted rows cost about what a step does (docs/speculative.md).
  size_t draft_max_batch = 2;
  // The clock deadlines are checked against (tests pass a fake one). Timings use steady_clock.
  std::function<Clock::time_point()> clock;
  // Shared by the services of one server's models, so that their steps take the cores in turn
  // by class and fair share (compute_gate.h); null: this service has the cores alone.
  std::shared_ptr<ComputeGate> compute_gate;
  std::chrono::milliseconds idle_poll{50};  // how often an idle loop looks at deadlines
};

// A snapshot of the loop's state, published after every step and every retirement.
struct ServiceStats {
  uint64_t steps = 0;
  size_t kv_pages_in_use = 0;
  size_t kv_pages_total = 0;
  size_t active = 0;
  size_t waiting = 0;
  size_t cached_sequences = 0;
  uint64_t prefix_hits = 0;
};

class Service final : public ModelService {
 public:
  // Starts the engine loop. `model` and `tokenizer` must outlive the service; from here until
  // shutdown() only the loop thread touches the model (and its backend and thread pool).
  Service(DecoderModel& model, const tokenizer::Tokenizer& tokenizer, ServiceConfig config);
  ~Service() override;  // shutdown(0ms)
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Validates and enqueues. Errors, all immediate: invalid_argument (field named: "prompt",
  // "max_tokens", "top_logprobs", "eog_tokens", sampling fields, "stop", "pooling"),
  // limit_exceeded (field "prompt": longer than the context), queue_full (transient, HTTP 429:
  // answer with Retry-After: retry_after_s()), unavailable (shutting down, HTTP 503).
  // An embedding request (request.embedding) is scheduled like a generation of its class: its
  // prompt chunks count toward the class's share and quantum, it never uses or fills the prefix
  // cache, and its one final event carries the vector.
  Result<std::shared_ptr<RequestHandle>> submit(GenerationRequest request) override;

  // Seconds a refused client should wait before retrying (1..60), from the queue depth and the
  // recent request duration.
  uint32_t retry_after_s(RequestClass c) const override;

  // Stops admitting (submit answers unavailable), lets in-flight and queued requests finish for
  // up to `grace`, then cancels what remains (final event kCancelled, error unavailable), and
  // joins the loop. Idempotent; any thread but the loop's.
  void shutdown(std::chrono::milliseconds grace) override;

  ServiceStats stats() const;
  std::string render_prometheus() const override { return metrics_.render_prometheus(); }
  const ModelLimits& limits() const override { return limits_; }
  uint32_t n_embd() const override { return n_embd_; }
  uint64_t kv_capacity_bytes() const override { return kv_capacity_bytes_; }

 private:
  struct Job;

  void loop();
  // Loop-thread helpers.
  void take_inbox_locked();
  void retire_expired_locked(bool cancel_all);
  void start_job(Job& job);
  bool run_step();
  void make_room(size_t pages_needed);
  void sample_and_emit(Job& job, std::span<const float> logits);
  // The row a token is chosen from (masked for a constrained job); empty after finishing the
  // job when its grammar allows nothing (a complete text stops, anything else is an error).
  std::span<const float> choice_row(Job& job, std::span<const float> logits,
                                    GenerationEvent& event);
  // The chosen token into the job's grammar, and its log-probabilities over the raw `logits`
  // when asked; false after finishing the job with an error.
  bool take_choice(Job& job, std::span<const float> logits, int32_t token, GenerationEvent& event,
                   std::optional<Logprobs>& logprobs);
  // Adds a chosen token to the job's output and `event`; false when that finished the job.
  // `in_kv`: an accepted draft, whose KV the step computed (otherwise the token is pending: fed
  // in the next step).
  bool emit_token(Job& job, int32_t token, std::optional<Logprobs> logprobs, GenerationEvent& event,
                  bool in_kv = false);
  // Prompt lookup's drafts for a job about to decode into job.drafts, within the step's rows
  // (step_tokens already taken), the context and max_tokens; false when there are none.
  bool propose_drafts(Job& job, size_t step_tokens);
  // Chooses tokens from a speculative step's rows (the step's input `input`) while they agree
  // with the drafts, emits them and drops the rejected drafts from the KV.
  void verify_and_emit(Job& job, size_t input);
  // The token the job's mask (job.mask) allows alone, unless that is an end of generation.
  std::optional<int32_t> only_allowed_token(const Job& job) const;
  std::span<const float> constrain_logits(Job& job, std::span<const float> logits);
  // An embedding job's hidden rows of this step; finishes it once its prompt has run.
  void pool_and_emit(Job& job, std::span<const float> hidden_rows);
  // A rerank job's classifier outputs (its prompt ran whole): finishes it.
  void emit_scores(Job& job, std::span<const float> scores);
  void finish(Job& job, GenerationEvent& event, FinishReason reason, Status error = {});
  void release_sequence(Job& job, bool keep_in_cache);
  void publish_stats();

  const tokenizer::Tokenizer& tokenizer_;
  ServiceConfig config_;
  uint32_t n_embd_ = 0;
  ModelLimits limits_;
  std::shared_ptr<LoopWakeup> wakeup_;
  ServiceMetrics metrics_;

  // Guarded by mu_: admission, the scheduler and what the loop hands back to it.
  mutable std::mutex mu_;
  bool accepting_ = true;
  bool draining_ = false;
  Clock::time_point drain_deadline_;
  Scheduler scheduler_;
  std::vector<std::unique_ptr<Job>> inbox_;
  Ticket next_ticket_ = 1;
  std::atomic<double> mean_request_s_{1.0};  // moving average, for retry_after_s()

  // Published by the loop, read by stats().
  std::atomic<uint64_t> steps_{0};
  std::atomic<size_t> kv_pages_in_use_{0};
  std::atomic<size_t> kv_pages_total_{0};
  std::atomic<size_t> active_{0};
  std::atomic<size_t> waiting_{0};
  std::atomic<size_t> cached_sequences_{0};
  std::atomic<uint64_t> prefix_hits_{0};

  // Loop thread only (created before the thread starts).
  struct LoopState;
  std::unique_ptr<LoopState> state_;

  std::mutex shutdown_mu_;
  std::thread thread_;
  GateMember gate_member_ = 0;
  uint64_t kv_capacity_bytes_ = 0;
};

}  // namespace synapse::serve
