// SPDX-License-Identifier: Apache-2.0
// Log-probabilities for the API: log-softmax of the *raw* logits (before bias, penalties, filters
// and temperature), as OpenAI reports them. Computed only when a request asks for them.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "base/status.h"

namespace synapse {

// OpenAI's limit on top_logprobs.
inline constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;  // natural log; -infinity for a token whose logit is -infinity
  bool operator==(const TokenLogprob&) const = default;
};

// Fixed capacity, so a decode loop that reports log-probabilities allocates nothing.
struct Logprobs {
  TokenLogprob chosen;
  std::array<TokenLogprob, kMaxTopLogprobs> top_storage{};
  int32_t n_top = 0;
  bool operator==(const Logprobs&) const = default;

  // The most likely tokens, best first (ties to the lower id); tokens of logit -infinity are
  // never listed, so there may be fewer than asked for.
  std::span<const TokenLogprob> top() const {
    return std::span<const TokenLogprob>(top_storage).first(static_cast<size_t>(n_top));
  }
};

// Log-probability of `token` and the `n_top` (0..kMaxTopLogprobs) most likely tokens under
// softmax(logits). Two passes over the logits, no allocation. Errors: kInvalidArgument (token out
// of range, field "logprobs"; n_top out of range, field "top_logprobs"; empty logits, field
// "logits"), kNumericFault (NaN or +infinity, field "logits").
Result<Logprobs> compute_logprobs(std::span<const float> logits, int32_t token, int32_t n_top);

}  // namespace synapse
