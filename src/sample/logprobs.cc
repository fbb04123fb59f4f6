// SPDX-License-Identifier: Apache-2.0
#include "sample/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sample/portable_random.h"

namespace synapse {

Result<Logprobs> compute_logprobs(std::span<const float> logits, int32_t token, int32_t n_top) {
  if (logits.empty()) {
    return Status(ErrorCode::kInvalidArgument, "no logits").with_field("logits");
  }
  if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
    return Status(ErrorCode::kInvalidArgument,
                  "token id " + std::to_string(token) + " is outside the vocabulary")
        .with_field("logprobs");
  }
  if (n_top < 0 || n_top > kMaxTopLogprobs) {
    return Status(ErrorCode::kInvalidArgument, "top_logprobs must be in [0, " +
                                                   std::to_string(kMaxTopLogprobs) + "], got " +
                                                   std::to_string(n_top))
        .with_field("top_logprobs");
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float max_logit = kNegInf;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (std::isnan(x) || x > std::numeric_limits<float>::max()) {
      return Status(ErrorCode::kNumericFault,
                    "logit of token " + std::to_string(i) + " is " + std::to_string(x))
          .with_field("logits");
    }
    max_logit = std::max(max_logit, x);
  }
  if (max_logit == kNegInf) {
    return Status(ErrorCode::kInvalidArgument, "every logit is -infinity").with_field("logits");
  }

  // Sum of exp(logit - max) in double, and the n_top best in a small heap (worst on top).
  const auto better = [](const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
  };
  Logprobs out;
  const auto heap_begin = out.top_storage.begin();
  const auto k = static_cast<size_t>(n_top);
  size_t size = 0;
  const auto max_d = static_cast<double>(max_logit);
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    sum += portable_exp(static_cast<double>(x) - max_d);
    if (k == 0 || x == kNegInf) continue;
    // Ids ascend, so a tie with the heap's worst never displaces it (ties to the lower id).
    if (size < k) {
      out.top_storage[size++] = {static_cast<int32_t>(i), x};
      std::push_heap(heap_begin, heap_begin + static_cast<ptrdiff_t>(size), better);
    } else if (x > out.top_storage[0].logprob) {
      std::pop_heap(heap_begin, heap_begin + static_cast<ptrdiff_t>(size), better);
      out.top_storage[size - 1] = {static_cast<int32_t>(i), x};
      std::push_heap(heap_begin, heap_begin + static_cast<ptrdiff_t>(size), better);
    }
  }
  std::sort_heap(heap_begin, heap_begin + static_cast<ptrdiff_t>(size), better);

  // log softmax = (x - max) - log(sum); sum >= 1 because the top token contributes exp(0).
  const double log_sum = std::log(sum);
  const auto log_prob = [&](float x) {
    return static_cast<float>((static_cast<double>(x) - max_d) - log_sum);
  };
  for (size_t i = 0; i < size; ++i) {
    out.top_storage[i].logprob = log_prob(out.top_storage[i].logprob);  // held the logit so far
  }
  out.n_top = static_cast<int32_t>(size);
  out.chosen = {token, log_prob(logits[static_cast<size_t>(token)])};
  return out;
}

}  // namespace synapse
