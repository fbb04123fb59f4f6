// SPDX-License-Identifier: Apache-2.0
// A compiled pre-tokenizer pattern: PCRE2 in UTF + UCP mode, JIT-compiled when the platform
// allows. Patterns are written in the Hugging Face / llama.cpp dialect; `\s` is widened to the
// Unicode White_Space property (adds U+0085, which PCRE2 leaves out) so that all three agree.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace synapse::tokenizer {

class Regex {
 public:
  static Result<Regex> compile(std::string_view pattern);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();

  // Finds the first match in subject[start, end) (the subject is only that range: `$` and
  // look-arounds stop at its edges). The subject must be valid UTF-8. Returns false when there
  // is none; an empty match counts as none (pre-tokenizers never want empty pieces).
  bool find(std::string_view subject, size_t start, size_t& match_begin, size_t& match_end) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

// The pattern with `\s` / `\S` widened to White_Space (see above); exposed for tests.
std::string widen_whitespace_classes(std::string_view pattern);

}  // namespace synapse::tokenizer
