// SPDX-License-Identifier: Apache-2.0
// Speculative decoding on one sequence: each step appends the token just chosen together with the
// drafter's guesses at the next ones, so one forward pass of the target yields the logits after
// each of them. The caller chooses tokens from those rows in order (Sampler::sample_against_draft
// keeps the distribution) until a choice differs from the draft; settle() then drops the rejected
// drafts from the target's cache. With no drafter it is plain decoding, one row per step.
//
// Exactness: the drafted rows plus one stay below kMatmulMinColumns, so a verification pass takes
// the same matmul route as a one-token decode step, and each row's arithmetic does not depend on
// the other rows (the engine's batch invariance); every row's logits are bit-identical to plain
// decoding's, so greedy output is byte-identical with and without a drafter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/matmul.h"
#include "runtime/engine.h"
#include "speculative/drafter.h"

namespace synapse {

inline constexpr size_t kMaxDraftTokens = kMatmulMinColumns - 2;

struct SpeculativeStats {
  size_t steps = 0;        // target forward passes after the prompt
  size_t drafted = 0;      // drafted tokens verified (accepted or rejected)
  size_t accepted = 0;     // drafted tokens that were chosen
  double draft_ms = 0.0;   // time in the drafter
  double target_ms = 0.0;  // time in the target's steps
  double acceptance_rate() const {
    return drafted == 0 ? 0.0 : static_cast<double>(accepted) / static_cast<double>(drafted);
  }
};

class SpeculativeDecoder {
 public:
  // `drafter` may be null (plain decoding); draft_max is clamped to kMaxDraftTokens.
  SpeculativeDecoder(Session& target, Drafter* drafter, size_t draft_max);

  // Runs the last token of `context` (chosen, not yet in the target) and the drafts that follow
  // it through the target in one step. Afterwards row(0) decides the token after the context and
  // row(i) the one after drafts()[i - 1], valid only while drafts()[0..i) were all chosen.
  Status advance(std::span<const int32_t> context);
  std::span<const int32_t> drafts() const { return draft_; }
  std::span<const float> row(size_t i) const;
  // The caller chose drafts()[0..n_accepted) and then, if `rejected`, something other than the
  // next draft (otherwise the last row's token, or generation ended): the target keeps the
  // context and those drafts. Drafts never looked at (generation ended first) are not counted.
  void settle(size_t n_accepted, bool rejected);

  const SpeculativeStats& stats() const { return stats_; }

 private:
  Session& target_;
  Drafter* drafter_;
  size_t draft_max_;
  size_t n_vocab_;
  size_t n_before_ = 0;  // target tokens before the current step
  std::vector<int32_t> draft_;
  std::vector<int32_t> input_;  // the chosen token and the drafts
  std::span<const float> rows_;
  SpeculativeStats stats_;
};

}  // namespace synapse
