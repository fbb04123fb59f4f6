// SPDX-License-Identifier: Apache-2.0
// An Earley parser over lexemes, kept as a stack of item sets so it can scan a lexeme, look
// at what may follow, and pop back (the token masker does that inside its vocabulary walk;
// rollback of generated tokens does it too).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "constrain/grammar.h"

namespace synapse::constrain {

class EarleyParser {
 public:
  explicit EarleyParser(const Grammar& grammar);

  // Scans one lexeme that may have been any of `lexemes` (the lexer's accepted set). False,
  // with nothing changed, when none of them may come next.
  bool scan(std::span<const LexemeId> lexemes);
  void pop();                                             // undoes the last successful scan
  size_t depth() const { return set_begin_.size() - 1; }  // scans on the stack

  // Lexemes that may come next, sorted.
  std::span<const LexemeId> expected() const;
  // The lexemes scanned so far form a whole sentence.
  bool accepts() const;

  // A slot the caller may use to remember something per set (the lexer's start state).
  uint32_t& user_slot() { return user_slot_.back(); }

 private:
  struct Item {
    uint32_t rule;
    uint32_t dot;
    uint32_t origin;  // index of the set the rule started in
  };

  void close_set(size_t set);  // prediction and completion until nothing changes
  bool add_item(const Item& item);
  Symbol next_symbol(const Item& item) const;

  const Grammar& grammar_;
  std::vector<Item> items_;          // all sets, back to back
  std::vector<uint32_t> set_begin_;  // start of each set in items_
  std::vector<uint32_t> expected_begin_;
  std::vector<LexemeId> expected_;  // per set, back to back
  std::vector<uint32_t> user_slot_;
  // The items of the set being built, for deduplication.
  std::unordered_set<uint64_t> seen_;
  // (nonterminal, origin) pairs completed in the set being closed.
  std::unordered_set<uint64_t> completed_;
};

}  // namespace synapse::constrain
