// SPDX-License-Identifier: Apache-2.0
// Streaming detokenization: ids arrive one at a time (as a model generates them) and only
// complete UTF-8 leaves; a token that ends inside a multi-byte character (a byte token, or a
// byte-level piece cut mid-character) is held back until the character completes. Bytes that can
// never complete a valid character are passed on as they are, so that the concatenation of
// everything emitted always equals Tokenizer::decode of the same ids.
#pragma once

#include <string>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace synapse::tokenizer {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options = {})
      : tokenizer_(tokenizer), options_(options) {}

  // Appends to `out` what `id` completes; invalid_argument for an id outside the vocabulary.
  Status push(TokenId id, std::string& out);
  // Appends whatever is still held back (an incomplete character at the end of the stream).
  void finish(std::string& out);
  // Bytes held back now.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  DecodeOptions options_;
  std::string pending_;
  bool strip_pending_ = true;  // the leading-space rule still applies
  bool wrote_ = false;         // anything was produced yet
};

// Length of the longest prefix of `bytes` that does not end in the middle of a character that
// could still be completed by more bytes.
size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace synapse::tokenizer
