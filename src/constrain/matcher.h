// SPDX-License-Identifier: Apache-2.0
// The state of one constrained text: an Earley parser over a Grammar's lexemes plus the lexer
// state inside the current lexeme. Feed bytes (or tokens, via TokenMasker), ask whether the
// text may end here, roll back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "constrain/earley.h"
#include "constrain/grammar.h"
#include "constrain/lexer.h"

namespace synapse::constrain {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);
  // Shares a lexer (its memoized DFA) with other matchers of the same grammar, e.g. through
  // a TokenMasker; the caller serialises access to it.
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<Lexer> lexer);

  // Feeds bytes. False when some byte leaves the set of prefixes of the language; the state is
  // then as it was before the call.
  bool consume_bytes(std::string_view bytes);
  // The text so far is a whole sentence of the grammar.
  bool accepts_end();
  // Undoes the last `n` bytes consumed (n <= consumed_bytes()).
  void rollback_bytes(size_t n);
  size_t consumed_bytes() const { return lexer_states_.size() - 1; }

  const Grammar& grammar() const { return *grammar_; }
  // For TokenMasker: the current lexer state and parser.
  LexerStateId lexer_state() const { return lexer_states_.back(); }
  EarleyParser& parser() { return parser_; }
  Lexer& lexer() { return *lexer_; }

 private:
  bool consume_byte(uint8_t b);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<Lexer> lexer_;
  EarleyParser parser_;
  std::vector<LexerStateId> lexer_states_;  // one per byte consumed, plus the initial one
  std::vector<uint8_t> scanned_at_;         // per byte: 1 when a lexeme ended before it
};

// True when `text` is a whole sentence of `grammar` (tests and the schema benchmark).
bool grammar_accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view text);

}  // namespace synapse::constrain
