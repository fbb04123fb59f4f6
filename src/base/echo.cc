// SPDX-License-Identifier: Apache-2.0
#include "base/echo.h"

#include <cstdint>

namespace synapse {

std::string clip_for_echo(std::string_view value, size_t max_bytes) {
  if (value.size() <= max_bytes) return std::string(value);
  size_t cut = max_bytes;
  // Back off over continuation bytes (10xxxxxx) so the cut lands on a sequence's first byte; a
  // UTF-8 sequence has at most 3 of them, so invalid input cannot walk back further.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<uint8_t>(value[cut]) & 0xC0) == 0x80; ++i) {
    --cut;
  }
  return std::string(value.substr(0, cut)) + "\u2026";
}

}  // namespace synapse
