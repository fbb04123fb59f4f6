// SPDX-License-Identifier: Apache-2.0
// The service's private state, shared by its translation units (service.cc: admission, the loop
// and its steps; service_emit.cc: choosing tokens from logits and emitting events): a request's
// Job and the loop thread's LoopState. Only the loop thread touches them after submission.
// Not part of the serve interface: include service.h.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "encoder/pooling.h"
#include "runtime/engine.h"
#include "sample/sampler.h"
#include "sample/stop_matcher.h"
#include "serve/prefix_cache.h"
#include "serve/service.h"
#include "speculative/prompt_lookup.h"
#include "tokenizer/detokenizer.h"

namespace synapse::serve {

// One request from submission to its final event. Created by submit() (caller thread), owned by
// the loop thread from the first locked section on.
struct Service::Job {
  Job(Ticket t, GenerationRequest r, std::shared_ptr<RequestHandle> h, Sampler s, StopMatcher m,
      const tokenizer::Tokenizer& tok)
      : ticket(t),
        request(std::move(r)),
        handle(std::move(h)),
        sampler(std::move(s)),
        stop(std::move(m)),
        // Generated text continues the prompt: no leading-space stripping, no control tokens.
        detok(tok,
              tokenizer::DecodeOptions{.render_special = false, .strip_leading_space = false}) {}

  Ticket ticket;
  GenerationRequest request;
  std::shared_ptr<RequestHandle> handle;
  Sampler sampler;
  StopMatcher stop;
  tokenizer::StreamingDetokenizer detok;

  Clock::time_point submitted = Clock::now();
  Clock::time_point first_token{};
  Clock::time_point last_token{};
  double queued_ms = 0.0;

  bool has_sequence = false;  // started: holds a KV sequence
  bool running = false;       // holds a slot now
  bool finished = false;
  SeqId sequence = 0;
  size_t prompt_done = 0;  // prompt tokens in the KV
  size_t cached = 0;       // of which from the prefix cache
  std::vector<int32_t> generated;
  size_t fed = 0;                // generated tokens in the KV
  std::vector<int32_t> pending;  // chosen (sampled, then any forced), fed in the next steps
  // Speculative decoding: the prompt and every token chosen (what drafts are looked up in; empty
  // when the request does not speculate), this step's drafts, and the tokens the step feeds
  // (pending, then the drafts).
  std::vector<int32_t> context;
  std::vector<int32_t> drafts;
  std::vector<int32_t> step_tokens;
  size_t draft_tokens = 0;  // drafts verified, and taken
  size_t draft_tokens_accepted = 0;
  std::unique_ptr<Drafter>
      draft_model;  // its own sequence on the draft model, if the service has one
  // Embedding requests, across prompt chunks: the mean so far (kMean), or the rows kept (the
  // last for kLast, the first for kCls, every one for kNone).
  std::optional<MeanPoolAccumulator> mean;
  std::vector<float> kept_rows;
  // Constrained requests: where the text is in the grammar, and the step's mask and logits.
  std::optional<constrain::Matcher> matcher;
  std::vector<uint64_t> mask;
  bool mask_ready = false;  // `mask` is this step's, computed during the forward pass
  std::vector<float> masked_logits;
};

struct Service::LoopState {
  LoopState(DecoderModel& model, const EngineConfig& engine_config, size_t max_cached)
      : engine(model, engine_config), cache(max_cached) {}

  struct Slot {
    Job* job = nullptr;
    size_t n_tokens = 0;  // fed this step, drafts included
    bool decode = false;
    size_t n_drafts = 0;  // of n_tokens, the drafts to verify
  };

  Engine engine;
  PrefixCache cache;
  PromptLookupDrafter lookup;
  std::unordered_map<Ticket, std::unique_ptr<Job>> jobs;
  std::vector<Ticket> finished;                    // to remove from the scheduler
  std::vector<std::pair<Ticket, size_t>> charges;  // decoded tokens, for the scheduler
  Scheduler::Decision decision;
  std::vector<Job*> running;
  std::vector<StepInput> inputs;
  std::vector<Slot> slots;
  StepOutput out;
  std::string piece;
  std::vector<SeqId> evicted;
  uint64_t step = 0;
  uint64_t lru_clock = 0;
  ComputeGate::Grant grant;  // held from step to step while this loop has work
};

}  // namespace synapse::serve
