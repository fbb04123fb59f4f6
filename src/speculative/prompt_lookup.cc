// SPDX-License-Identifier: Apache-2.0
#include "speculative/prompt_lookup.h"

#include <algorithm>

namespace synapse {

PromptLookupDrafter::PromptLookupDrafter(const PromptLookupOptions& options) : options_(options) {
  options_.ngram_min = std::max<size_t>(options_.ngram_min, 1);
  options_.ngram_max = std::max(options_.ngram_max, options_.ngram_min);
}

Status PromptLookupDrafter::propose(std::span<const int32_t> context, size_t max_tokens,
                                    std::vector<int32_t>& draft) {
  draft.clear();
  const size_t len = context.size();
  if (max_tokens == 0) return ok_status();
  for (size_t n = std::min(options_.ngram_max, len > 0 ? len - 1 : 0); n >= options_.ngram_min;
       --n) {
    const std::span<const int32_t> suffix = context.subspan(len - n);
    // Occurrences before the suffix itself, the most recent first (the likeliest to continue
    // the way the text goes now) unless it is followed by fewer than max_tokens tokens: then the
    // occurrence followed by the most (in a loop, the most recent is right before the suffix).
    size_t best_from = 0, best_count = 0;
    for (size_t start = len - n; start-- > 0 && best_count < max_tokens;) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + static_cast<long>(start))) {
        continue;
      }
      const size_t count = std::min(max_tokens, len - (start + n));
      if (count > best_count) {
        best_from = start + n;
        best_count = count;
      }
    }
    if (best_count > 0) {
      draft.assign(context.begin() + static_cast<long>(best_from),
                   context.begin() + static_cast<long>(best_from + best_count));
      return ok_status();
    }
  }
  return ok_status();
}

}  // namespace synapse
