// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/bert_normalizer.h"

namespace synapse::tokenizer {

bool is_cjk_ideograph(char32_t c) {
  // The CJK Unified Ideographs blocks as Hugging Face's BertNormalizer lists them.
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_bert_punctuation(char32_t c) {
  // ASCII symbols such as $ + < = > ^ ` | ~ count as punctuation for BERT, not only Unicode P*.
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  return is_punctuation(c);
}

void bert_normalize(std::string_view text, const BertNormalizerOptions& options, std::string& out,
                    std::string& scratch) {
  std::string& cleaned = scratch;
  cleaned.clear();
  for (size_t pos = 0; pos < text.size();) {
    char32_t c = 0;
    pos += decode_utf8(text, pos, c);
    if (c == kInvalidCodepoint) continue;
    if (options.clean_text) {
      const bool control = c != '\t' && c != '\n' && c != '\r' && is_bert_control(c);
      if (c == 0 || c == 0xFFFD || control) continue;
      if (c == '\t' || c == '\n' || c == '\r' || is_white_space(c)) c = ' ';
    }
    if (options.handle_chinese_chars && is_cjk_ideograph(c)) {
      cleaned += ' ';
      append_utf8(c, cleaned);
      cleaned += ' ';
      continue;
    }
    append_utf8(c, cleaned);
  }
  std::string_view source = cleaned;
  std::string decomposed;
  if (options.strip_accents && nfd(cleaned, decomposed)) source = decomposed;
  out.clear();
  for (size_t pos = 0; pos < source.size();) {
    char32_t c = 0;
    pos += decode_utf8(source, pos, c);
    if (options.strip_accents && is_nonspacing_mark(c)) continue;
    append_utf8(options.lowercase ? to_lower(c) : c, out);
  }
}

}  // namespace synapse::tokenizer
