// SPDX-License-Identifier: Apache-2.0
// The lexer as a lazily built DFA over a Grammar's lexemes. A state is the set of lexemes still
// possible together with each one's remaining regex (its derivative by the bytes read so far);
// states are interned, and each state's 256 transitions are filled in on first use, so after
// warm-up a byte costs one table load.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "constrain/grammar.h"

namespace synapse::constrain {

using LexerStateId = uint32_t;
inline constexpr LexerStateId kDeadLexerState = 0;

class Lexer {
 public:
  explicit Lexer(const Grammar& grammar);

  // The state before the first byte of a lexeme, when `allowed` (sorted) may come next.
  LexerStateId start_state(std::span<const LexemeId> allowed);
  // The state after one more byte; kDeadLexerState when no allowed lexeme can continue.
  LexerStateId next(LexerStateId state, uint8_t byte) {
    const LexerStateId known = transitions_[state][byte];
    return known != kUnknown ? known : compute_next(state, byte);
  }
  // The lexemes that end exactly here (their regex matches the bytes read), sorted.
  std::span<const LexemeId> accepted(LexerStateId state) const { return states_[state].accepted; }
  bool accepting(LexerStateId state) const { return !states_[state].accepted.empty(); }
  // The lexemes still possible and each one's remaining regex.
  std::span<const std::pair<LexemeId, RegexId>> alive(LexerStateId state) const {
    return states_[state].alive;
  }

  // The state in which only `lexeme` is alive, with `regex` left to match (a part of a state
  // with several, for masks merged from their parts).
  LexerStateId part_state(LexemeId lexeme, RegexId regex) { return intern({{lexeme, regex}}); }

  size_t state_count() const { return states_.size(); }
  // Some transition out of `state` kept a lexeme alive without knowing it can still match
  // (emptiness unknown within kEmptinessBudget): walks through it are this grammar's, not the
  // language's, and must not be shared with other grammars.
  bool inexact(LexerStateId state) const { return states_[state].inexact; }
  // A state with the same decisions as `state` on every text of at most h bytes, its counted
  // repeats widened (RegexBuilder::horizon); `state` itself when nothing changes.
  LexerStateId horizon_state(LexerStateId state, uint32_t h);

 private:
  static constexpr LexerStateId kUnknown = UINT32_MAX;
  static constexpr size_t kEmptinessBudget = 32;
  struct State {
    std::vector<std::pair<LexemeId, RegexId>> alive;  // sorted by lexeme
    std::vector<LexemeId> accepted;
    bool inexact = false;
  };
  struct VectorHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };

  LexerStateId compute_next(LexerStateId state, uint8_t byte);
  LexerStateId intern(std::vector<std::pair<LexemeId, RegexId>> alive);

  const Grammar& grammar_;
  std::vector<State> states_;
  std::vector<std::array<LexerStateId, 256>> transitions_;
  std::unordered_map<std::vector<uint32_t>, LexerStateId, VectorHash> by_alive_;
  std::unordered_map<std::vector<uint32_t>, LexerStateId, VectorHash> by_allowed_;
  std::unordered_map<uint64_t, LexerStateId> horizon_of_;  // key: state << 16 | h
};

}  // namespace synapse::constrain
