// SPDX-License-Identifier: Apache-2.0
#include "eval/log_softmax.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace synapse {

TokenLogProb token_log_prob(std::span<const float> logits, int32_t token) {
  SYN_CHECK(!logits.empty() && token >= 0 && static_cast<size_t>(token) < logits.size(),
            "token outside the logits row");
  float max_logit = logits[0];
  for (float v : logits) max_logit = std::max(max_logit, v);
  double sum_exp = 0.0;
  for (float v : logits) sum_exp += static_cast<double>(std::exp(v - max_logit));
  const float shifted = logits[static_cast<size_t>(token)] - max_logit;
  return {static_cast<double>(shifted) - std::log(sum_exp),
          std::exp(shifted) / static_cast<float>(sum_exp)};
}

int32_t log_softmax_row(std::span<const float> logits, std::span<double> out) {
  SYN_CHECK(!logits.empty() && out.size() == logits.size(), "log_softmax_row: size mismatch");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  const double max_logit = static_cast<double>(logits[best]);
  double sum_exp = 0.0;
  for (float v : logits) sum_exp += std::exp(static_cast<double>(v) - max_logit);
  const double log_sum = std::log(sum_exp);
  for (size_t i = 0; i < logits.size(); ++i) {
    out[i] = static_cast<double>(logits[i]) - max_logit - log_sum;
  }
  return static_cast<int32_t>(best);
}

bool all_finite(std::span<const float> values, size_t* first_bad) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      if (first_bad != nullptr) *first_bad = i;
      return false;
    }
  }
  return true;
}

}  // namespace synapse
