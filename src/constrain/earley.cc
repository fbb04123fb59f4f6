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
  building_begin_ = 0;
  for (const uint32_t rule : grammar_.rules_of(grammar_.start())) add_item(Item{rule, 0, 0});
  close_set(0);
}

bool EarleyParser::add_item(const Item& item) {
  if (grammar_.rules()[item.rule].bag == Rule::kNoBag) {
    if (!seen_.insert(item_key(item.rule, item.dot, item.origin)).second) return false;
  } else {
    // Bag items also differ by what they have seen; a set holds few of them (one per open
    // object and parse), so a scan of the set is cheaper than a second hash set.
    for (size_t i = building_begin_; i < items_.size(); ++i) {
      const Item& other = items_[i];
      if (other.rule == item.rule && other.dot == item.dot && other.origin == item.origin &&
          other.count == item.count && other.seen == item.seen) {
        return false;
      }
    }
  }
  items_.push_back(item);
  return true;
}

bool EarleyParser::is_complete(const Item& item) const {
  const Rule& rule = grammar_.rules()[item.rule];
  if (rule.bag == Rule::kNoBag) return item.dot == rule.rhs.size();
  const Bag& bag = grammar_.bag(rule.bag);
  return item.dot != 2 && (item.seen & bag.required) == bag.required && item.count >= bag.min_count;
}

bool EarleyParser::bag_wants(const Item& item, const Bag& bag, const BagMember& member) {
  if (item.dot == 1) return false;  // a separator comes first
  if (member.once >= 0 && ((item.seen >> member.once) & 1) != 0) return false;
  return bag.max_count == Bag::kUnbounded || item.count < bag.max_count;
}

EarleyParser::Item EarleyParser::bag_after(const Item& item, const Bag& bag,
                                           const BagMember& member) {
  Item next = item;
  next.dot = 1;
  // Without a maximum only "reached the minimum yet" matters, so the count saturates there
  // and items of one bag at one place stay few.
  if (bag.max_count != Bag::kUnbounded || next.count < bag.min_count) ++next.count;
  if (member.once >= 0) next.seen |= uint64_t{1} << member.once;
  return next;
}

void EarleyParser::predict(NonterminalId nonterminal, size_t set) {
  for (const uint32_t predicted : grammar_.rules_of(nonterminal)) {
    add_item(Item{predicted, 0, static_cast<uint32_t>(set)});
  }
}

void EarleyParser::complete(NonterminalId lhs, uint32_t origin, size_t set) {
  // An earlier set no longer changes, so one (nonterminal, origin) pair is completed once
  // however many rules finish it (ambiguous grammars finish it many times).
  if (origin != set && !completed_.insert((uint64_t{lhs} << 32) | origin).second) return;
  const std::span<const Rule> rules = grammar_.rules();
  const size_t end = origin == set ? items_.size() : set_begin_[origin + 1];
  for (size_t j = set_begin_[origin]; j < end; ++j) {
    const Item waiting = items_[j];
    const Rule& waiting_rule = rules[waiting.rule];
    if (waiting_rule.bag != Rule::kNoBag) {
      const Bag& bag = grammar_.bag(waiting_rule.bag);
      for (const BagMember& member : bag.members) {
        if (member.nonterminal == lhs && bag_wants(waiting, bag, member)) {
          add_item(bag_after(waiting, bag, member));
        }
      }
    } else if (waiting.dot < waiting_rule.rhs.size() &&
               waiting_rule.rhs[waiting.dot] == Symbol::nonterminal(lhs)) {
      add_item(Item{waiting.rule, waiting.dot + 1, waiting.origin});
    }
  }
}

void EarleyParser::close_set(size_t set) {
  const std::span<const Rule> rules = grammar_.rules();
  completed_.clear();
  for (size_t i = set_begin_[set]; i < items_.size(); ++i) {
    const Item item = items_[i];
    const Rule& rule = rules[item.rule];
    if (rule.bag != Rule::kNoBag) {
      const Bag& bag = grammar_.bag(rule.bag);
      if (is_complete(item)) complete(rule.lhs, item.origin, set);
      for (const BagMember& member : bag.members) {
        if (bag_wants(item, bag, member)) predict(member.nonterminal, set);
      }
      continue;  // members never derive "", so none completes in the set it starts in
    }
    if (item.dot == rule.rhs.size()) {
      complete(rule.lhs, item.origin, set);
      continue;
    }
    const Symbol next = rule.rhs[item.dot];
    if (next.is_lexeme()) continue;
    predict(next.id(), set);
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
    if (rule.bag != Rule::kNoBag) {
      if (item.dot == 1) expected_.push_back(grammar_.bag(rule.bag).separator);
    } else if (item.dot < rule.rhs.size() && rule.rhs[item.dot].is_lexeme()) {
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
  building_begin_ = end;
  const auto expected = [&](LexemeId id) {
    return std::binary_search(lexemes.begin(), lexemes.end(), id);
  };
  for (size_t i = begin; i < end; ++i) {
    const Item item = items_[i];
    const Rule& rule = grammar_.rules()[item.rule];
    if (rule.bag != Rule::kNoBag) {
      if (item.dot == 1 && expected(grammar_.bag(rule.bag).separator)) {
        Item next = item;
        next.dot = 2;
        add_item(next);
      }
      continue;
    }
    if (item.dot == rule.rhs.size() || !rule.rhs[item.dot].is_lexeme()) continue;
    if (expected(rule.rhs[item.dot].id())) add_item(Item{item.rule, item.dot + 1, item.origin});
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
    if (item.origin == 0 && grammar_.rules()[item.rule].lhs == grammar_.start() &&
        is_complete(item)) {
      return true;
    }
  }
  return false;
}

}  // namespace synapse::constrain
