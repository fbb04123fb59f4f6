// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for GBNF grammars (src/constrain/gbnf.h). Each input is grammar text, compiled
// under small bounds; the result must be a grammar or an error with a grammar error code, a
// message and, for malformed text, its line and column. A grammar that compiles matches a few
// texts: "", "a", each string literal of the input and all of them in a row (for a grammar of
// literals, a sentence), and its token masks are compared with feeding every token
// (constrain_fuzz_check.h).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/gbnf.h"
#include "fuzz/constrain_fuzz_check.h"

namespace {

constexpr size_t kMaxTexts = 12;
constexpr size_t kMaxTextBytes = 128;
constexpr size_t kMaskSteps = 8;

// The bodies of the input's "..." literals, escapes undone for the simple ones (\n, \t, \r and
// an escaped character stand for themselves; hex escapes are kept as written).
std::vector<std::string> literals(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size() && out.size() < kMaxTexts; ++i) {
    if (text[i] == '#') {  // comments may hold unpaired quotes
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (text[i] != '"') continue;
    std::string body;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) {
        const char e = text[++i];
        body += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      } else {
        body += text[i];
      }
    }
    if (body.size() <= kMaxTextBytes) out.push_back(std::move(body));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;  // NOLINT(google-build-using-namespace)
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constrain::GbnfOptions options;
  options.time_limit = std::chrono::milliseconds(200);
  options.max_rules = 4000;
  options.max_nesting = 64;
  auto grammar = constrain::compile_gbnf(text, options);
  if (!grammar.ok()) {
    const Status& status = grammar.status();
    if (!fuzz::is_grammar_error(status.code()) || status.message().empty()) {
      fuzz::fail("unexpected error: " + status.to_string());
    }
    // Malformed text is located; the few errors about the grammar as a whole are not.
    const bool whole = status.message().find("no 'root' rule") != std::string::npos ||
                       status.message().find("accepts no text") != std::string::npos;
    if (!whole && status.message().rfind("line ", 0) != 0) {
      fuzz::fail("error without a line: " + status.to_string());
    }
    return 0;
  }
  std::vector<std::string> texts = literals(text);
  std::string all;
  for (const std::string& t : texts) all += t;
  if (all.size() <= kMaxTextBytes) texts.insert(texts.begin(), all);
  texts.push_back("");
  texts.push_back("a");
  fuzz::check_grammar(std::move(grammar).value(), texts, kMaskSteps);
  return 0;
}
