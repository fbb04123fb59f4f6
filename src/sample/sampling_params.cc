// SPDX-License-Identifier: Apache-2.0
#include "sample/sampling_params.h"

#include <cmath>
#include <string>

namespace synapse {
namespace {

template <typename T>
Status out_of_range(const char* field, const std::string& rule, T value) {
  return Status(ErrorCode::kInvalidArgument,
                std::string(field) + " must be " + rule + ", got " + std::to_string(value))
      .with_field(field);
}

}  // namespace

Status validate(const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) {
    return out_of_range("temperature", "finite and >= 0", p.temperature);
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return out_of_range("top_p", "in (0, 1]", p.top_p);
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return out_of_range("min_p", "in [0, 1]", p.min_p);
  }
  if (!std::isfinite(p.repeat_penalty) || p.repeat_penalty <= 0.0f) {
    return out_of_range("repeat_penalty", "finite and > 0", p.repeat_penalty);
  }
  if (!std::isfinite(p.frequency_penalty)) {
    return out_of_range("frequency_penalty", "finite", p.frequency_penalty);
  }
  if (!std::isfinite(p.presence_penalty)) {
    return out_of_range("presence_penalty", "finite", p.presence_penalty);
  }
  if (p.penalty_last_n < -1) {
    return out_of_range("penalty_last_n", ">= -1", p.penalty_last_n);
  }
  for (const LogitBias& b : p.logit_bias) {
    if (b.token < 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "logit_bias token id must be >= 0, got " + std::to_string(b.token))
          .with_field("logit_bias");
    }
    // -inf bans a token; +inf or NaN would make every other token impossible or the result
    // undefined.
    if (std::isnan(b.bias) || b.bias == INFINITY) {
      return Status(ErrorCode::kInvalidArgument, "logit_bias of token " + std::to_string(b.token) +
                                                     " must be finite or -infinity")
          .with_field("logit_bias");
    }
  }
  return ok_status();
}

}  // namespace synapse
