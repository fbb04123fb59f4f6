// SPDX-License-Identifier: Apache-2.0
#include "constrain/lexer.h"

#include <algorithm>

namespace synapse::constrain {

size_t Lexer::VectorHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ v.size();
  for (const uint32_t x : v) h = (h ^ x) * 0x100000001b3ull + (h >> 29);
  return static_cast<size_t>(h);
}

Lexer::Lexer(const Grammar& grammar) : grammar_(grammar) {
  // State 0 is the dead state: no lexeme left. Its transitions all lead back to it.
  states_.push_back(State{});
  transitions_.emplace_back();
  transitions_.back().fill(kDeadLexerState);
  by_alive_.emplace(std::vector<uint32_t>{}, kDeadLexerState);
}

LexerStateId Lexer::start_state(std::span<const LexemeId> allowed) {
  std::vector<uint32_t> key(allowed.begin(), allowed.end());
  const auto found = by_allowed_.find(key);
  if (found != by_allowed_.end()) return found->second;
  std::vector<std::pair<LexemeId, RegexId>> alive;
  alive.reserve(allowed.size());
  for (const LexemeId lexeme : allowed) alive.emplace_back(lexeme, grammar_.lexeme_regex(lexeme));
  const LexerStateId id = intern(std::move(alive));
  by_allowed_.emplace(std::move(key), id);
  return id;
}

LexerStateId Lexer::compute_next(LexerStateId state, uint8_t byte) {
  RegexBuilder& rx = grammar_.regexes();
  std::vector<std::pair<LexemeId, RegexId>> alive;
  for (const auto& [lexeme, regex] : states_[state].alive) {
    const RegexId derived = rx.derive(regex, byte);
    // A derivative that can never match again is dropped now, so "dead" means dead and the
    // masker never allows a byte that leads nowhere. The check is exact for regexes without
    // intersection or complement; for those it explores a few derivatives only (a deeper
    // search per new state made adversarial schemas take seconds per mask), so a dead end
    // inside such a lexeme is possible, a wrong refusal never.
    if (!rx.is_nothing(derived) && !rx.is_empty_language(derived, kEmptinessBudget)) {
      alive.emplace_back(lexeme, derived);
      if (!rx.emptiness_known(derived)) states_[state].inexact = true;
    }
  }
  const LexerStateId next = intern(std::move(alive));
  // Bytes that every alive regex puts in the class of `byte` have the same derivatives, so the
  // same next state: one derivation fills them all (a walk asks a new state for most bytes).
  std::array<uint8_t, 256> same;
  same.fill(1);
  for (const auto& [lexeme, regex] : states_[state].alive) {
    const std::array<uint8_t, 256> classes = rx.byte_classes(regex);
    for (unsigned b = 0; b < 256; ++b) same[b] &= static_cast<uint8_t>(classes[b] == classes[byte]);
  }
  for (unsigned b = 0; b < 256; ++b) {
    if (same[b] != 0) transitions_[state][b] = next;
  }
  return next;
}

LexerStateId Lexer::horizon_state(LexerStateId state, uint32_t h) {
  const uint64_t key = (uint64_t{state} << 16) | h;
  if (const auto found = horizon_of_.find(key); found != horizon_of_.end()) return found->second;
  std::vector<std::pair<LexemeId, RegexId>> alive;
  bool changed = false;
  for (const auto& [lexeme, regex] : states_[state].alive) {
    const RegexId widened = grammar_.regexes().horizon(regex, h);
    changed = changed || widened != regex;
    alive.emplace_back(lexeme, widened);
  }
  const LexerStateId result = changed ? intern(std::move(alive)) : state;
  horizon_of_.emplace(key, result);
  return result;
}

LexerStateId Lexer::intern(std::vector<std::pair<LexemeId, RegexId>> alive) {
  std::vector<uint32_t> key;
  key.reserve(alive.size() * 2);
  for (const auto& [lexeme, regex] : alive) {
    key.push_back(lexeme);
    key.push_back(regex);
  }
  const auto [it, inserted] = by_alive_.try_emplace(std::move(key), 0);
  if (!inserted) return it->second;
  const auto id = static_cast<LexerStateId>(states_.size());
  it->second = id;
  State state;
  for (const auto& [lexeme, regex] : alive) {
    if (grammar_.regexes().nullable(regex)) state.accepted.push_back(lexeme);
  }
  state.alive = std::move(alive);
  states_.push_back(std::move(state));
  transitions_.emplace_back();
  transitions_.back().fill(kUnknown);
  return id;
}

}  // namespace synapse::constrain
