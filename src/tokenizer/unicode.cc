// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace synapse::tokenizer {

size_t decode_utf8(std::string_view text, size_t pos, char32_t& codepoint) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + pos;
  const size_t left = text.size() - pos;
  const uint8_t lead = s[0];
  if (lead < 0x80) {
    codepoint = lead;
    return 1;
  }
  size_t length = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (overlongs, surrogates)
  char32_t value = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    value = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    value = lead & 0x0Fu;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    value = lead & 0x07u;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    codepoint = kInvalidCodepoint;
    return 1;
  }
  if (left < length || s[1] < lo || s[1] > hi) {
    codepoint = kInvalidCodepoint;
    return 1;
  }
  for (size_t k = 1; k < length; ++k) {
    if ((s[k] & 0xC0) != 0x80) {
      codepoint = kInvalidCodepoint;
      return 1;
    }
    value = (value << 6) | (s[k] & 0x3Fu);
  }
  codepoint = value;
  return length;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

namespace {

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

}  // namespace

bool is_letter(char32_t c) {
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

bool is_number(char32_t c) {
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t c) {
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool is_other(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_CN || (k >= UTF8PROC_CATEGORY_CC && k <= UTF8PROC_CATEGORY_CO);
}

bool is_bert_control(char32_t c) {
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_CC && k <= UTF8PROC_CATEGORY_CO;
}

bool is_nonspacing_mark(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }

bool is_white_space(char32_t c) {
  // White_Space is a property, not a category: Zs/Zl/Zp plus these controls.
  if ((c >= 0x09 && c <= 0x0D) || c == 0x85) return true;
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

char32_t to_lower(char32_t c) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

namespace {

bool normalize(std::string_view text, utf8proc_option_t options, std::string& out) {
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &result, options);
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(result, &std::free);
  if (n < 0) return false;
  out.assign(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
  return true;
}

}  // namespace

bool nfc(std::string_view text, std::string& out) {
  return normalize(text, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE), out);
}

bool nfd(std::string_view text, std::string& out) {
  return normalize(text, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE), out);
}

bool is_trivially_nfc(std::string_view text) {
  // U+0300 encodes as CC 80; every lead byte below 0xCC starts a code point below U+0300.
  for (const char ch : text) {
    if (static_cast<uint8_t>(ch) >= 0xCC) return false;
  }
  return true;
}

}  // namespace synapse::tokenizer
