// SPDX-License-Identifier: Apache-2.0
// Per-request sampling settings with llama.cpp's defaults, and their validation. The service fills
// one from an OpenAI request, `synapse generate` from its options.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace synapse {

// An additive bias on one token's logit; -infinity bans the token.
struct LogitBias {
  int32_t token = 0;
  float bias = 0.0f;
  bool operator==(const LogitBias&) const = default;
};

struct SamplingParams {
  // `seed` value that asks the sampler to draw a seed from std::random_device; the sampler reports
  // the seed it drew (Sampler::seed()), so the request can be replayed.
  static constexpr uint64_t kRandomSeed = UINT64_MAX;

  float temperature = 0.8f;        // <= 0: greedy (argmax, ties to the lowest id)
  int32_t top_k = 40;              // <= 0: off
  float top_p = 0.95f;             // in (0, 1]; 1: off
  float min_p = 0.05f;             // in [0, 1]; 0: off
  float repeat_penalty = 1.0f;     // > 0; 1: off
  float frequency_penalty = 0.0f;  // subtracted once per occurrence in the window
  float presence_penalty = 0.0f;   // subtracted once if the token occurs in the window
  int32_t penalty_last_n = 64;     // recent tokens the penalties look at; -1: all, 0: off
  // Applied in order (so repeated tokens add up); ids must be below the vocabulary size.
  std::vector<LogitBias> logit_bias;
  uint64_t seed = kRandomSeed;
  bool operator==(const SamplingParams&) const = default;
};

// Checks every field's range; the error is kInvalidArgument with `where().field` naming the field
// ("temperature", "top_p", "logit_bias", ...). Vocabulary bounds of logit_bias are checked by
// Sampler::create, which knows the vocabulary size.
Status validate(const SamplingParams& params);

}  // namespace synapse
