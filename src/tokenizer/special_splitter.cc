// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/special_splitter.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace synapse::tokenizer {

SpecialSplitter::SpecialSplitter(const Vocab& vocab) {
  for (TokenId id = 0; static_cast<size_t>(id) < vocab.size(); ++id) {
    const Vocab::Token& token = vocab.token(id);
    if (token.text.empty()) continue;
    const bool user = token.type == TokenType::kUserDefined;
    if (!user && token.type != TokenType::kControl && token.type != TokenType::kUnknown) continue;
    entries_.push_back(Entry{token.text, id, user, token.lstrip, token.rstrip});
  }
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(entries_[i].text[0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    // Longest first; equal lengths by id so that the choice never depends on sort stability.
    std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      if (entries_[a].text.size() != entries_[b].text.size()) {
        return entries_[a].text.size() > entries_[b].text.size();
      }
      return entries_[a].id < entries_[b].id;
    });
  }
}

const SpecialSplitter::Entry* SpecialSplitter::match(std::string_view text, size_t pos,
                                                     bool parse_special) const {
  for (const uint32_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const Entry& entry = entries_[index];
    if (!entry.always && !parse_special) continue;
    if (text.compare(pos, entry.text.size(), entry.text) == 0) return &entry;
  }
  return nullptr;
}

size_t SpecialSplitter::trim_trailing_space(std::string_view text) {
  size_t keep = 0;  // end of the last non-space character
  for (size_t pos = 0; pos < text.size();) {
    char32_t c = 0;
    pos += decode_utf8(text, pos, c);
    if (c == kInvalidCodepoint || !is_white_space(c)) keep = pos;
  }
  return keep;
}

size_t SpecialSplitter::skip_leading_space(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    char32_t c = 0;
    const size_t length = decode_utf8(text, pos, c);
    if (c == kInvalidCodepoint || !is_white_space(c)) break;
    pos += length;
  }
  return pos;
}

}  // namespace synapse::tokenizer
