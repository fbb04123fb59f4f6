// SPDX-License-Identifier: Apache-2.0
// An Earley parser over lexemes, kept as a stack of item sets so it can scan a lexeme, look
// at what may follow, and pop back (the token masker does that inside its vocabulary walk;
// rollback of generated tokens does it too). Bags (unordered lists, see Bag) are run natively:
// a bag's items carry the set of members seen and how many came.
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
    // For a bag: 0 before its first member, 1 after a member, 2 after a separator.
    uint32_t dot;
    uint32_t origin;     // index of the set the rule started in
    uint32_t count = 0;  // bag: members so far (saturating at the minimum when unbounded)
    uint64_t seen = 0;   // bag: its `once` members seen
  };

  void close_set(size_t set);  // prediction and completion until nothing changes
  void predict(NonterminalId nonterminal, size_t set);
  // Every item of set `origin` waiting for `lhs` moves past it.
  void complete(NonterminalId lhs, uint32_t origin, size_t set);
  bool add_item(const Item& item);
  bool is_complete(const Item& item) const;
  static bool bag_wants(const Item& item, const Bag& bag, const BagMember& member);
  static Item bag_after(const Item& item, const Bag& bag, const BagMember& member);

  const Grammar& grammar_;
  std::vector<Item> items_;          // all sets, back to back
  std::vector<uint32_t> set_begin_;  // start of each set in items_
  std::vector<uint32_t> expected_begin_;
  std::vector<LexemeId> expected_;  // per set, back to back
  std::vector<uint32_t> user_slot_;
  size_t building_begin_ = 0;  // first item of the set being built
  // The items of the set being built, for deduplication.
  std::unordered_set<uint64_t> seen_;
  // (nonterminal, origin) pairs completed in the set being closed.
  std::unordered_set<uint64_t> completed_;
};

}  // namespace synapse::constrain
