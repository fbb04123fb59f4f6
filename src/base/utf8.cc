// SPDX-License-Identifier: Apache-2.0
#include "base/utf8.h"

#include <cstdint>

namespace synapse {

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t lead = bytes[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint8_t second_lo = 0x80;  // allowed range of the second byte, narrowed for E0/ED/F0/F4
    uint8_t second_hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_lo = 0xA0;  // overlong
      if (lead == 0xED) second_hi = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_lo = 0x90;  // overlong
      if (lead == 0xF4) second_hi = 0x8F;  // above U+10FFFF
    } else {
      return i;  // continuation byte, C0/C1 or F5..FF as a lead
    }
    if (n - i < length) return i;
    if (bytes[i + 1] < second_lo || bytes[i + 1] > second_hi) return i;
    for (size_t k = 2; k < length; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace synapse
