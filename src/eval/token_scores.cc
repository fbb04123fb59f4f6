// SPDX-License-Identifier: Apache-2.0
#include "eval/token_scores.h"

#include <cmath>

#include "eval/log_softmax.h"

namespace synapse {

Result<SequenceScore> score_sequence(std::span<const int32_t> tokens, size_t n_vocab,
                                     size_t model_n_ctx, const ChunkScorer& scorer) {
  if (tokens.size() < 2) {
    return Status(ErrorCode::kInvalidArgument,
                  "scoring needs at least two tokens (one to predict from and one to score); "
                  "the text has " +
                      std::to_string(tokens.size()))
        .with_field("prompt");
  }
  if (model_n_ctx != 0 && tokens.size() > model_n_ctx) {
    return Status(ErrorCode::kInvalidArgument, "the text has " + std::to_string(tokens.size()) +
                                                   " tokens, more than the context of " +
                                                   std::to_string(model_n_ctx))
        .with_field("prompt");
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= n_vocab) {
      return Status(ErrorCode::kInvalidArgument, "token id " + std::to_string(tokens[i]) +
                                                     " at position " + std::to_string(i) +
                                                     " is outside the vocabulary");
    }
  }
  const size_t n_rows = tokens.size() - 1;
  std::vector<std::vector<int32_t>> chunk(1, std::vector<int32_t>(tokens.begin(), tokens.end()));
  std::vector<float> logits(n_rows * n_vocab);
  SYN_RETURN_IF_ERROR(scorer(chunk, 0, n_rows, logits));
  SequenceScore out;
  out.tokens.reserve(n_rows);
  for (size_t r = 0; r < n_rows; ++r) {
    const std::span<const float> row(logits.data() + r * n_vocab, n_vocab);
    size_t bad = 0;
    if (!all_finite(row, &bad)) {
      return Status(ErrorCode::kInternal, "non-finite logit at row " + std::to_string(r));
    }
    const int32_t target = tokens[r + 1];
    TokenScore score;
    score.id = target;
    score.log_prob = token_log_prob(row, target).log_prob;
    size_t best = 0;
    for (size_t i = 1; i < n_vocab; ++i) {
      if (row[i] > row[best]) best = i;
    }
    score.top = static_cast<int32_t>(best) == target;
    out.sum_log_prob += score.log_prob;
    out.tokens.push_back(score);
  }
  out.perplexity = std::exp(-out.sum_log_prob / static_cast<double>(n_rows));
  return out;
}

}  // namespace synapse
