// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace synapse::tokenizer {

// One match-data block per thread: matching is const and may run on many threads at once, and
// allocating the block per call would cost more than most matches.
namespace {

struct MatchData {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchData() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchData() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
};

MatchData& thread_match_data() {
  thread_local MatchData data;
  return data;
}

}  // namespace

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() { pcre2_code_free(code); }
};

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

std::string widen_whitespace_classes(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      ++i;
      if (next == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (next == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

Result<Regex> Regex::compile(std::string_view pattern) {
  const std::string widened = widen_whitespace_classes(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(widened.data()), widened.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return Status(ErrorCode::kBadValue, "pre-tokenizer pattern does not compile at offset " +
                                            std::to_string(offset) + ": " +
                                            reinterpret_cast<const char*>(message) + " (" +
                                            std::string(pattern) + ")");
  }
  Regex regex;
  regex.impl_ = std::make_unique<Impl>();
  regex.impl_->code = code;
  // JIT is an optimization: without it (a platform PCRE2 lacks it for) matching still works.
  regex.impl_->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  regex.pattern_ = std::string(pattern);
  return regex;
}

bool Regex::find(std::string_view subject, size_t start, size_t& match_begin,
                 size_t& match_end) const {
  MatchData& md = thread_match_data();
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  while (start < subject.size()) {
    const int rc =
        impl_->jit ? pcre2_jit_match(impl_->code, s, subject.size(), start, 0, md.data, md.context)
                   : pcre2_match(impl_->code, s, subject.size(), start, PCRE2_NO_UTF_CHECK, md.data,
                                 md.context);
    if (rc <= 0) return false;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.data);
    if (ovector[1] > ovector[0]) {
      match_begin = ovector[0];
      match_end = ovector[1];
      return true;
    }
    // An empty match: look again one character further on.
    size_t next = ovector[0] + 1;
    while (next < subject.size() && (static_cast<uint8_t>(subject[next]) & 0xC0) == 0x80) ++next;
    start = next;
  }
  return false;
}

}  // namespace synapse::tokenizer
