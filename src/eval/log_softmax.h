// SPDX-License-Identifier: Apache-2.0
// Log-probabilities of one row of logits. `token_log_prob` computes the way llama-perplexity
// does (maximum in float, exp in float, the sum in double) so that perplexities agree with it to
// the printed digits; `log_softmax_row` is the full distribution in double for KL divergence.
#pragma once

#include <cstdint>
#include <span>

namespace synapse {

struct TokenLogProb {
  double log_prob = 0.0;  // log p(token)
  float prob = 0.0f;      // p(token)
};

// Requires 0 <= token < logits.size() and finite logits (the caller checks).
TokenLogProb token_log_prob(std::span<const float> logits, int32_t token);

// out[i] = log p(i), in double; returns the index of the largest logit (ties to the lowest).
int32_t log_softmax_row(std::span<const float> logits, std::span<double> out);

// Whether every value is finite; `first_bad` receives the first index that is not.
bool all_finite(std::span<const float> values, size_t* first_bad);

}  // namespace synapse
