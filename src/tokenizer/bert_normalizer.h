// SPDX-License-Identifier: Apache-2.0
// BERT's text normalization and word splitting, as Hugging Face's BertNormalizer and
// BertPreTokenizer define them: drop NUL, U+FFFD and control/format characters, map white space
// to a space, surround CJK ideographs with spaces, strip accents (NFD, then drop non-spacing
// marks), lower-case; then split on white space and isolate each punctuation character.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace synapse::tokenizer {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};

// Normalizes `text` into `out` (invalid UTF-8 bytes are dropped, like U+FFFD).
void bert_normalize(std::string_view text, const BertNormalizerOptions& options, std::string& out,
                    std::string& scratch);

// Calls `emit(word)` for each word of normalized text: runs between white space, with every
// punctuation character a word of its own.
template <typename Emit>
void bert_split_words(std::string_view text, Emit&& emit);

bool is_bert_punctuation(char32_t c);
bool is_cjk_ideograph(char32_t c);

}  // namespace synapse::tokenizer

#include "tokenizer/unicode.h"

namespace synapse::tokenizer {

template <typename Emit>
void bert_split_words(std::string_view text, Emit&& emit) {
  size_t start = 0, pos = 0;
  while (pos < text.size()) {
    char32_t c = 0;
    const size_t length = decode_utf8(text, pos, c);
    const bool space = c != kInvalidCodepoint && is_white_space(c);
    const bool punct = c != kInvalidCodepoint && is_bert_punctuation(c);
    if (space || punct) {
      if (pos > start) emit(text.substr(start, pos - start));
      if (punct) emit(text.substr(pos, length));
      start = pos + length;
    }
    pos += length;
  }
  if (pos > start) emit(text.substr(start, pos - start));
}

}  // namespace synapse::tokenizer
