// SPDX-License-Identifier: Apache-2.0
#include "speculative/speculative_decoder.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"

namespace synapse {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

SpeculativeDecoder::SpeculativeDecoder(Session& target, Drafter* drafter, size_t draft_max)
    : target_(target),
      drafter_(drafter),
      draft_max_(std::min(draft_max, kMaxDraftTokens)),
      n_vocab_(target.engine().model().n_vocab()) {}

Status SpeculativeDecoder::advance(std::span<const int32_t> context) {
  SYN_CHECK(!context.empty(), "advance: the context ends with the chosen token");
  n_before_ = target_.n_tokens();
  const size_t n_ctx = target_.engine().model().n_ctx();
  // Room for the chosen token and the drafts in the target's context.
  const size_t room = n_ctx > n_before_ + 1 ? n_ctx - n_before_ - 1 : 0;
  draft_.clear();
  if (drafter_ != nullptr && draft_max_ > 0 && room > 0) {
    const auto t_draft = std::chrono::steady_clock::now();
    SYN_RETURN_IF_ERROR(drafter_->propose(context, std::min(draft_max_, room), draft_));
    stats_.draft_ms += ms_since(t_draft);
    // A drafter cannot put ids the target does not have into its step.
    const auto bad = std::find_if(draft_.begin(), draft_.end(), [&](int32_t t) {
      return t < 0 || static_cast<size_t>(t) >= n_vocab_;
    });
    draft_.erase(bad, draft_.end());
  }
  input_.assign(1, context.back());
  input_.insert(input_.end(), draft_.begin(), draft_.end());
  const auto t_target = std::chrono::steady_clock::now();
  Result<std::span<const float>> rows = target_.append_all(input_);
  if (!rows.ok()) return rows.status();
  stats_.target_ms += ms_since(t_target);
  rows_ = *rows;
  ++stats_.steps;
  return ok_status();
}

std::span<const float> SpeculativeDecoder::row(size_t i) const {
  SYN_CHECK(i <= draft_.size(), "row: past the step's drafts");
  return rows_.subspan(i * n_vocab_, n_vocab_);
}

void SpeculativeDecoder::settle(size_t n_accepted, bool rejected) {
  SYN_CHECK(n_accepted + (rejected ? 1 : 0) <= draft_.size(), "settle: more drafts than drafted");
  stats_.accepted += n_accepted;
  stats_.drafted += n_accepted + (rejected ? 1 : 0);
  target_.truncate(n_before_ + 1 + n_accepted);
}

}  // namespace synapse
