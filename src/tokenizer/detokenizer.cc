// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/detokenizer.h"

namespace synapse::tokenizer {

size_t complete_utf8_prefix(std::string_view bytes) {
  // Only the last three bytes can belong to an unfinished character (sequences are at most 4).
  const size_t n = bytes.size();
  const size_t lowest = n >= 3 ? n - 3 : 0;
  for (size_t start = n; start > lowest;) {
    --start;
    const auto b = static_cast<uint8_t>(bytes[start]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further left
    size_t need = 0;
    if (b >= 0xC2 && b <= 0xDF)
      need = 2;
    else if (b >= 0xE0 && b <= 0xEF)
      need = 3;
    else if (b >= 0xF0 && b <= 0xF4)
      need = 4;
    if (need == 0 || n - start >= need) return n;  // ASCII, invalid lead, or complete
    // Unfinished (every byte after `start` is a continuation byte): hold it back unless the
    // second byte already rules out a valid character (overlongs, surrogates, > U+10FFFF).
    if (n - start == 1) return start;
    const auto second = static_cast<uint8_t>(bytes[start + 1]);
    uint8_t lo = 0x80, hi = 0xBF;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
    return second >= lo && second <= hi ? start : n;
  }
  return n;
}

Status StreamingDetokenizer::push(TokenId id, std::string& out) {
  if (!tokenizer_.vocab().contains(id)) {
    return Status(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) +
                                                   " is outside the vocabulary of " +
                                                   std::to_string(tokenizer_.vocab().size()));
  }
  const size_t before = pending_.size();
  tokenizer_.append_token_bytes(id, options_, pending_);
  if (strip_pending_ && pending_.size() > before) {
    if (options_.strip_leading_space && tokenizer_.strips_leading_space() && !wrote_ &&
        before == 0 && pending_[0] == ' ') {
      pending_.erase(0, 1);
    }
    strip_pending_ = false;
  }
  const size_t ready = complete_utf8_prefix(pending_);
  if (ready > 0) {
    out.append(pending_, 0, ready);
    pending_.erase(0, ready);
    wrote_ = true;
  }
  return ok_status();
}

void StreamingDetokenizer::finish(std::string& out) {
  out += pending_;
  pending_.clear();
}

}  // namespace synapse::tokenizer
