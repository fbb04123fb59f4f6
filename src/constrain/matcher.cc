// SPDX-License-Identifier: Apache-2.0
#include "constrain/matcher.h"

namespace synapse::constrain {

Matcher::Matcher(std::shared_ptr<const Grammar> grammar)
    : Matcher(grammar, std::make_shared<Lexer>(*grammar)) {}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<Lexer> lexer)
    : grammar_(std::move(grammar)), lexer_(std::move(lexer)), parser_(*grammar_) {
  lexer_states_.push_back(lexer_->start_state(parser_.expected()));
}

bool Matcher::consume_byte(uint8_t b) {
  const LexerStateId state = lexer_states_.back();
  const LexerStateId next = lexer_->next(state, b);
  if (next != kDeadLexerState) {
    lexer_states_.push_back(next);
    scanned_at_.push_back(0);
    return true;
  }
  // The lexeme cannot take this byte: it ends here (if it may) and the byte starts the next.
  if (!lexer_->accepting(state) || !parser_.scan(lexer_->accepted(state))) return false;
  const LexerStateId restart = lexer_->next(lexer_->start_state(parser_.expected()), b);
  if (restart == kDeadLexerState) {
    parser_.pop();
    return false;
  }
  lexer_states_.push_back(restart);
  scanned_at_.push_back(1);
  return true;
}

bool Matcher::consume_bytes(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!consume_byte(static_cast<uint8_t>(bytes[i]))) {
      rollback_bytes(i);
      return false;
    }
  }
  return true;
}

bool Matcher::accepts_end() {
  if (consumed_bytes() == 0) return parser_.accepts();
  const LexerStateId state = lexer_states_.back();
  // The text ends inside a lexeme: it must be able to end here and complete the sentence.
  if (!lexer_->accepting(state) || !parser_.scan(lexer_->accepted(state))) return false;
  const bool accepts = parser_.accepts();
  parser_.pop();
  return accepts;
}

void Matcher::rollback_bytes(size_t n) {
  SYN_CHECK(n <= consumed_bytes(), "rollback past the start of the text");
  for (size_t i = 0; i < n; ++i) {
    if (scanned_at_.back() != 0) parser_.pop();
    scanned_at_.pop_back();
    lexer_states_.pop_back();
  }
}

bool grammar_accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  Matcher matcher(grammar);
  return matcher.consume_bytes(text) && matcher.accepts_end();
}

}  // namespace synapse::constrain
