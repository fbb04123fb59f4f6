// SPDX-License-Identifier: Apache-2.0
#include "speculative/draft_model.h"

#include <algorithm>

namespace synapse {

DraftModelDrafter::DraftModelDrafter(DecoderModel& draft) : engine_(draft), session_(engine_) {}

Status DraftModelDrafter::propose(std::span<const int32_t> context, size_t max_tokens,
                                  std::vector<int32_t>& draft) {
  draft.clear();
  const size_t n_ctx = engine_.model().n_ctx();
  // Drafting appends max_tokens - 1 tokens after the context; past the draft's context it stops.
  if (context.empty() || max_tokens == 0 || context.size() >= n_ctx) return ok_status();
  max_tokens = std::min(max_tokens, n_ctx - context.size() + 1);
  const auto mismatch =
      std::mismatch(cached_.begin(), cached_.end(), context.begin(), context.end());
  // The last context token is run again when everything is cached: its logits were not kept.
  const size_t keep =
      std::min(static_cast<size_t>(mismatch.first - cached_.begin()), context.size() - 1);
  session_.truncate(keep);
  cached_.resize(keep);
  Result<std::span<const float>> logits = session_.append(context.subspan(keep));
  if (!logits.ok()) {
    // The draft's sequence is whatever the engine kept; start over next time.
    session_.truncate(0);
    cached_.clear();
    return logits.status();
  }
  cached_.insert(cached_.end(), context.begin() + static_cast<long>(keep), context.end());
  for (;;) {
    const int32_t token = greedy_token(*logits);
    draft.push_back(token);
    if (draft.size() == max_tokens) break;
    const int32_t next[] = {token};
    logits = session_.append(next);
    if (!logits.ok()) return logits.status();
    cached_.push_back(token);
  }
  return ok_status();
}

}  // namespace synapse
