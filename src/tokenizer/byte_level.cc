// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace synapse::tokenizer {
namespace {

// Printable Latin-1 bytes stand for themselves; the other 68 bytes take U+0100 onwards, in
// byte order (the construction of GPT-2's bytes_to_unicode).
bool stands_for_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> to_codepoint{};
  std::array<int16_t, 0x200> to_byte{};  // every code point of the alphabet is below U+0200
  Tables() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
      to_codepoint[static_cast<size_t>(b)] = c;
      to_byte[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables kTables;
  return kTables;
}

}  // namespace

char32_t byte_to_codepoint(uint8_t byte) { return tables().to_codepoint[byte]; }

std::optional<uint8_t> codepoint_to_byte(char32_t codepoint) {
  if (codepoint >= tables().to_byte.size()) return std::nullopt;
  const int16_t b = tables().to_byte[codepoint];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::optional<std::string> byte_level_decode(std::string_view text) {
  std::string bytes;
  bytes.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    char32_t c = 0;
    pos += decode_utf8(text, pos, c);
    const std::optional<uint8_t> b = codepoint_to_byte(c);
    if (!b) return std::nullopt;
    bytes += static_cast<char>(*b);
  }
  return bytes;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const char b : bytes) append_utf8(byte_to_codepoint(static_cast<uint8_t>(b)), text);
  return text;
}

}  // namespace synapse::tokenizer
