// SPDX-License-Identifier: Apache-2.0
// What the service is asked to do (GenerationRequest) and what it answers (GenerationEvent): the
// HTTP layer fills a request from the OpenAI body (token ids already templated and encoded) and
// turns each event into an SSE chunk or the pieces of one JSON response.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "constrain/token_masker.h"
#include "model/hparams.h"
#include "sample/logprobs.h"
#include "sample/sampling_params.h"

namespace synapse::serve {

using Clock = std::chrono::steady_clock;

// Scheduling classes, highest priority first (the enum order is the priority order).
enum class RequestClass : uint8_t { kInteractive = 0, kBatch = 1, kBackground = 2 };
inline constexpr size_t kRequestClassCount = 3;
std::string_view request_class_name(RequestClass c);  // "interactive", "batch", "background"
std::optional<RequestClass> request_class_from_name(std::string_view name);

// An embedding request: the prompt is prefilled like any other (same slots, classes and step
// batching) but nothing is sampled; the final event carries the prompt's final hidden state
// (after the final norm, if the model has one) pooled over its tokens. kCls (the first token's)
// needs a bidirectional model, which runs each prompt whole in one step. kRank asks a
// cross-encoder for its classifier's outputs on the first token instead: the event's
// `embedding` holds those scores (the relevance score first), not normalized.
struct EmbeddingSpec {
  PoolingType pooling = PoolingType::kLast;  // kLast, kMean, kCls, kNone (every row) or kRank
  bool normalize = true;                     // L2-normalize the pooled vector
  // One token type per prompt token (a cross-encoder's query 0, document 1); empty: all 0.
  std::vector<int32_t> token_types;
  bool operator==(const EmbeddingSpec&) const = default;
};

struct GenerationRequest {
  std::string id;               // the caller's id (e.g. "cmpl-..."), echoed in logs and metrics
  std::vector<int32_t> prompt;  // token ids, at least one; BOS and template already applied
  int32_t max_tokens = 16;      // > 0; generation also ends when the context is full
  SamplingParams sampling;
  std::vector<std::string> stop;    // stop strings (StopMatcher's limits)
  std::vector<int32_t> eog_tokens;  // end-of-generation ids; empty: the service's defaults
  bool logprobs = false;            // report each token's log-probability
  int32_t top_logprobs = 0;         // 0..kMaxTopLogprobs alternatives per token (needs logprobs)
  RequestClass request_class = RequestClass::kInteractive;
  std::optional<Clock::time_point> deadline;  // past it: finished with deadline_exceeded
  // Set: embed the prompt instead of generating (max_tokens, sampling, stop, logprobs unused).
  std::optional<EmbeddingSpec> embedding;
  // Set: structured output. Before each draw, tokens that would take the text out of this
  // grammar get -infinity, and end-of-generation tokens are allowed exactly when the text is a
  // whole sentence. Shared with other requests using the same compiled grammar; only the
  // service's loop thread touches it after submission.
  std::shared_ptr<constrain::TokenMasker> constraint;
  // What `constraint` was compiled from (request::OutputConstraints' recipe, opaque here), so a
  // service in another process can compile it again; empty when `constraint` is null.
  std::string constraint_recipe;
  // Speculative decoding when the service drafts (ServiceConfig::draft_max > 0); false opts this
  // request out (its output is the same either way: only its speed differs).
  bool speculative = true;
  // Called on the service's loop thread when the request starts running (admitted, before its
  // first engine step); null: nothing. A worker process tells its front so, before anything can
  // crash on the request, and quarantine counts only the requests that were running at a crash,
  // not those waiting in the queue. Must be quick; not sent between processes.
  std::function<void()> on_start;
};

enum class FinishReason : uint8_t { kStop, kLength, kCancelled, kError };
std::string_view finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct GeneratedToken {
  int32_t token = 0;
  std::optional<Logprobs> logprobs;  // when the request asked for them
  bool operator==(const GeneratedToken&) const = default;
};

struct Usage {
  size_t prompt_tokens = 0;
  size_t cached_prompt_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  size_t completion_tokens = 0;     // sampled tokens, an end-of-generation token included
  bool operator==(const Usage&) const = default;
};

struct Timings {
  double queued_ms = 0.0;               // submit -> first scheduled
  double time_to_first_token_ms = 0.0;  // submit -> first token sampled
  double total_ms = 0.0;                // submit -> final event
  double decode_tokens_per_s = 0.0;     // after the first token
  size_t draft_tokens = 0;              // speculative decoding: drafts verified
  size_t draft_tokens_accepted = 0;     // ... and taken
  bool operator==(const Timings&) const = default;
};

// One event per engine step that produced something for the request, then exactly one final
// event. Concatenating every event's `text` gives the completion: whole UTF-8 characters only,
// never any part of a matched stop string.
struct GenerationEvent {
  std::string text;                    // new text (may be empty: held back, or no text)
  std::vector<GeneratedToken> tokens;  // tokens sampled this step (no end-of-generation token)
  uint64_t step = 0;                   // engine step that produced it (for tests and tracing)
  bool final = false;
  // Final event only.
  FinishReason finish_reason = FinishReason::kStop;
  Status error;                        // set when finish_reason is kError
  std::optional<size_t> matched_stop;  // index into GenerationRequest::stop
  Usage usage;
  Timings timings;
  std::vector<float> embedding;  // an embedding request's vector (n_embd floats), finish kStop
};

// What a request is checked against: the served model's limits and abilities.
struct ModelLimits {
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  uint32_t n_token_types = 0;
  bool bidirectional = false;  // embeds and reranks only: whole prompts, no generation
  bool can_rerank = false;     // a cross-encoder's classifier head
  bool operator==(const ModelLimits&) const = default;
};

// The checks Service::submit makes before queueing, each error naming its field:
// invalid_argument ("prompt", "pooling", "token_types", "max_tokens", "top_logprobs",
// "eog_tokens"), limit_exceeded ("prompt" longer than the context), unsupported ("model":
// generation on a bidirectional encoder). `request.eog_tokens` is checked as given.
Status check_request(const GenerationRequest& request, const ModelLimits& model);

}  // namespace synapse::serve
