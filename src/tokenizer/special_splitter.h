// SPDX-License-Identifier: Apache-2.0
// Finds special and added tokens in input text before the subword model sees it. Control (and
// unknown) tokens are recognised only when the caller asks (parse_special); user-defined tokens
// always, as the reference tokenizers do. Matching is leftmost-longest (Hugging Face's
// AddedVocabulary); a token marked lstrip/rstrip also takes the white space beside it.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace synapse::tokenizer {

class SpecialSplitter {
 public:
  SpecialSplitter() = default;
  // Collects the vocabulary's control, unknown and user-defined tokens.
  explicit SpecialSplitter(const Vocab& vocab);

  // Calls `on_text(text)` for ordinary text and `on_token(id)` for each special token found, in
  // input order. Text fragments are never empty.
  template <typename OnText, typename OnToken>
  void split(std::string_view text, bool parse_special, OnText&& on_text, OnToken&& on_token) const;

  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::string_view text;  // views the Vocab, which outlives the splitter
    TokenId id;
    bool always;  // user-defined: matched even without parse_special
    bool lstrip;
    bool rstrip;
  };
  // The longest entry matching at `pos`, or nullptr.
  const Entry* match(std::string_view text, size_t pos, bool parse_special) const;
  static size_t trim_trailing_space(std::string_view text);
  static size_t skip_leading_space(std::string_view text, size_t pos);

  std::vector<Entry> entries_;
  // Entries by first byte, longest first: most bytes of a text start no special token at all.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

template <typename OnText, typename OnToken>
void SpecialSplitter::split(std::string_view text, bool parse_special, OnText&& on_text,
                            OnToken&& on_token) const {
  size_t start = 0;  // start of the pending ordinary text
  size_t pos = 0;
  while (pos < text.size()) {
    const Entry* entry = match(text, pos, parse_special);
    if (entry == nullptr) {
      ++pos;
      continue;
    }
    size_t end = pos;
    if (entry->lstrip) end = start + trim_trailing_space(text.substr(start, pos - start));
    if (end > start) on_text(text.substr(start, end - start));
    on_token(entry->id);
    pos += entry->text.size();
    if (entry->rstrip) pos = skip_leading_space(text, pos);
    start = pos;
  }
  if (start < text.size()) on_text(text.substr(start));
}

}  // namespace synapse::tokenizer
