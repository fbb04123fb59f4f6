// SPDX-License-Identifier: Apache-2.0
// Prompt lookup (n-gram) drafting: when the last few tokens appeared earlier in the context, the
// tokens that followed them then are proposed now. No second model; it pays off where the output
// repeats its input (code edits, RAG answers quoting their sources, extraction, loops).
#pragma once

#include "speculative/drafter.h"

namespace synapse {

struct PromptLookupOptions {
  size_t ngram_max = 3;  // the longest suffix tried first
  size_t ngram_min = 2;  // shorter suffixes match too often to be worth a verification row
};

class PromptLookupDrafter final : public Drafter {
 public:
  explicit PromptLookupDrafter(const PromptLookupOptions& options = {});
  // The most recent earlier occurrence of the longest matching suffix (ngram_max down to
  // ngram_min tokens) followed by max_tokens tokens, else the one followed by the most, wins; the
  // tokens after it, up to max_tokens, are the draft.
  Status propose(std::span<const int32_t> context, size_t max_tokens,
                 std::vector<int32_t>& draft) override;

 private:
  PromptLookupOptions options_;
};

}  // namespace synapse
