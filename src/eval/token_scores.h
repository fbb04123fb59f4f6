// SPDX-License-Identifier: Apache-2.0
// Teacher-forced scoring: the log-probability the model gives each token of a text given the
// tokens before it, from one prefill of the whole sequence (logits of every row). The first
// token (BOS, or the first text token) has no prediction and is not scored.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "eval/perplexity.h"

namespace synapse {

struct TokenScore {
  int32_t id = 0;
  double log_prob = 0.0;  // natural log
  bool top = false;       // the token was the model's most likely one
};

struct SequenceScore {
  std::vector<TokenScore> tokens;  // tokens[1..]: one entry per scored token
  double sum_log_prob = 0.0;
  double perplexity = 0.0;  // exp(-mean log-prob)
};

// `model_n_ctx`: the longest sequence the model runs (0: unchecked); a longer text is an
// invalid_argument error, never truncated.
Result<SequenceScore> score_sequence(std::span<const int32_t> tokens, size_t n_vocab,
                                     size_t model_n_ctx, const ChunkScorer& scorer);

}  // namespace synapse
