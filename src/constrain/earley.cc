// SPDX-License-Identifier: Apache-2.0
#include "constrain/earley.h"

#include <algorithm>

namespace synapse::constrain {
namespace {

uint64_t item_key(uint32_t rule, uint32_t dot, uint32_t origin) {
  return (uint64_t{rule} << 40) | (uint64_t{dot} << 24) | origin;
}

}  // namespace

EarleyParser::EarleyParser(const Grammar& grammar) : grammar_(grammar) {
  SYN_CHECK(grammar.rules().size() < (1u << 24), "grammar too large for the parser's items");
  set_begin_.push_back(0);
  seen_.clear();
  for (const uint32_t rule : grammar_.rules_of(grammar_.start())) add_item(Item{rule, 0, 0});
  close_set(0);
}

Symbol EarleyParser::next_symbol(const Item& item) const {
  return grammar_.rules()[item.rule].rhs[item.dot];
}

bool EarleyParser::add_item(const Item& item) {
  if (!seen_.insert(item_key(item.rule, item.dot, item.origin)).second) return false;
  items_.push_back(item);
  return true;
}

void EarleyParser::close_set(size_t set) {
  const std::span<const Rule> rules = grammar_.rules();
  completed_.clear();
  for (size_t i = set_begin_[set]; i < items_.size(); ++i) {
    const Item item = items_[i];
    const Rule& rule = rules[item.rule];
    if (item.dot == rule.rhs.size()) {
      // Completion: every item of the origin set waiting for this nonterminal moves on. An
      // earlier set no longer changes, so one (nonterminal, origin) pair is completed once
      // however many rules finish it (ambiguous grammars finish it many times).
      if (item.origin != set &&
          !completed_.insert((uint64_t{rule.lhs} << 32) | item.origin).second) {
        continue;
      }
      const size_t end = item.origin == set ? items_.size() : set_begin_[item.origin + 1];
      for (size_t j = set_begin_[item.origin]; j < end; ++j) {
        const Item waiting = items_[j];
        const Rule& waiting_rule = rules[waiting.rule];
        if (waiting.dot < waiting_rule.rhs.size() &&
            waiting_rule.rhs[waiting.dot] == Symbol::nonterminal(rule.lhs)) {
          add_item(Item{waiting.rule, waiting.dot + 1, waiting.origin});
        }
      }
      continue;
    }
    const Symbol next = rule.rhs[item.dot];
    if (next.is_lexeme()) continue;
    for (const uint32_t predicted : grammar_.rules_of(next.id())) {
      add_item(Item{predicted, 0, static_cast<uint32_t>(set)});
    }
    // Aycock and Horspool: a nullable nonterminal may be skipped at once, which also covers
    // completions of empty derivations that finish before later items wait on them.
    if (grammar_.derives_empty(next.id())) add_item(Item{item.rule, item.dot + 1, item.origin});
  }
  // What the set expects next, for the lexer.
  expected_begin_.push_back(static_cast<uint32_t>(expected_.size()));
  const size_t first = expected_.size();
  for (size_t i = set_begin_[set]; i < items_.size(); ++i) {
    const Item& item = items_[i];
    const Rule& rule = rules[item.rule];
    if (item.dot < rule.rhs.size() && rule.rhs[item.dot].is_lexeme()) {
      expected_.push_back(rule.rhs[item.dot].id());
    }
  }
  std::sort(expected_.begin() + static_cast<ptrdiff_t>(first), expected_.end());
  expected_.erase(std::unique(expected_.begin() + static_cast<ptrdiff_t>(first), expected_.end()),
                  expected_.end());
  user_slot_.push_back(UINT32_MAX);
}

bool EarleyParser::scan(std::span<const LexemeId> lexemes) {
  const size_t current = set_begin_.size() - 1;
  const size_t begin = set_begin_[current];
  const size_t end = items_.size();
  seen_.clear();
  for (size_t i = begin; i < end; ++i) {
    const Item item = items_[i];
    const Rule& rule = grammar_.rules()[item.rule];
    if (item.dot == rule.rhs.size() || !rule.rhs[item.dot].is_lexeme()) continue;
    if (std::binary_search(lexemes.begin(), lexemes.end(), rule.rhs[item.dot].id())) {
      add_item(Item{item.rule, item.dot + 1, item.origin});
    }
  }
  if (items_.size() == end) return false;
  SYN_CHECK(current + 1 < (1u << 24), "text longer than the parser can index");
  set_begin_.push_back(static_cast<uint32_t>(end));
  close_set(current + 1);
  return true;
}

void EarleyParser::pop() {
  SYN_CHECK(depth() > 0, "pop of the parser's initial set");
  items_.resize(set_begin_.back());
  set_begin_.pop_back();
  expected_.resize(expected_begin_.back());
  expected_begin_.pop_back();
  user_slot_.pop_back();
}

std::span<const LexemeId> EarleyParser::expected() const {
  return std::span<const LexemeId>(expected_).subspan(expected_begin_.back());
}

bool EarleyParser::accepts() const {
  for (size_t i = set_begin_.back(); i < items_.size(); ++i) {
    const Item& item = items_[i];
    const Rule& rule = grammar_.rules()[item.rule];
    if (item.origin == 0 && rule.lhs == grammar_.start() && item.dot == rule.rhs.size()) {
      return true;
    }
  }
  return false;
}

}  // namespace synapse::constrain
