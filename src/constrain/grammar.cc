// SPDX-License-Identifier: Apache-2.0
#include "constrain/grammar.h"

#include <bit>
#include <sstream>

namespace synapse::constrain {
namespace {

// Whether the bag can derive some text, given which nonterminals can.
bool bag_productive(const Bag& bag, const std::vector<uint8_t>& productive) {
  uint64_t productive_once = 0;
  uint64_t once_count = 0;
  bool repeatable = false;
  for (const BagMember& m : bag.members) {
    if (!productive[m.nonterminal]) continue;
    if (m.once < 0) {
      repeatable = true;
    } else {
      productive_once |= uint64_t{1} << m.once;
      ++once_count;
    }
  }
  if ((bag.required & ~productive_once) != 0) return false;
  if (static_cast<uint32_t>(std::popcount(bag.required)) > bag.max_count) return false;
  return bag.min_count <= bag.max_count && (repeatable || once_count >= bag.min_count);
}

}  // namespace

Grammar::Grammar(Grammar&&) noexcept = default;
Grammar& Grammar::operator=(Grammar&&) noexcept = default;
Grammar::~Grammar() = default;

std::span<const uint32_t> Grammar::rules_of(NonterminalId id) const {
  return std::span<const uint32_t>(rule_index_)
      .subspan(rule_begin_[id], rule_begin_[id + 1] - rule_begin_[id]);
}

std::string Grammar::to_string() const {
  std::ostringstream out;
  for (const Rule& rule : rules_) {
    out << names_[rule.lhs] << " ::=";
    if (rule.bag != Rule::kNoBag) {
      const Bag& bag = bags_[rule.bag];
      out << " bag(" << regexes_->to_string(lexemes_[bag.separator]) << ")";
      for (const BagMember& m : bag.members) {
        const bool required = m.once >= 0 && ((bag.required >> m.once) & 1) != 0;
        out << " " << names_[m.nonterminal] << (m.once < 0 ? "*" : required ? "" : "?");
      }
      if (bag.min_count > 0 || bag.max_count != Bag::kUnbounded) {
        out << " {" << bag.min_count << ","
            << (bag.max_count == Bag::kUnbounded ? std::string() : std::to_string(bag.max_count))
            << "}";
      }
      out << "\n";
      continue;
    }
    if (rule.rhs.empty()) out << " ε";
    for (const Symbol symbol : rule.rhs) {
      if (symbol.is_lexeme()) {
        out << " /" << regexes_->to_string(lexemes_[symbol.id()]) << "/";
      } else {
        out << " " << names_[symbol.id()];
      }
    }
    out << "\n";
  }
  return out.str();
}

GrammarBuilder::GrammarBuilder() : regexes_(std::make_unique<RegexBuilder>()) {}
GrammarBuilder::GrammarBuilder(GrammarBuilder&&) noexcept = default;
GrammarBuilder::~GrammarBuilder() = default;

LexemeId GrammarBuilder::lexeme(RegexId r) {
  const auto [it, inserted] =
      lexeme_of_regex_.try_emplace(r, static_cast<LexemeId>(lexemes_.size()));
  if (inserted) lexemes_.push_back(r);
  return it->second;
}

NonterminalId GrammarBuilder::add_nonterminal(std::string name) {
  names_.push_back(std::move(name));
  return static_cast<NonterminalId>(names_.size() - 1);
}

void GrammarBuilder::add_rule(NonterminalId lhs, std::vector<Symbol> rhs) {
  SYN_CHECK(lhs < names_.size(), "rule for an unknown nonterminal");
  SYN_CHECK(rhs.size() < (1u << 16), "rule longer than the parser can index");
  symbol_count_ += rhs.size() + 1;
  rules_.push_back(Rule{lhs, std::move(rhs)});
}

void GrammarBuilder::add_bag(NonterminalId lhs, Bag bag) {
  SYN_CHECK(lhs < names_.size(), "bag for an unknown nonterminal");
  for (const BagMember& m : bag.members) {
    SYN_CHECK(m.nonterminal < names_.size() && m.once < 64, "bag member out of range");
  }
  SYN_CHECK(bag.separator < lexemes_.size(), "bag separator is not a lexeme of this grammar");
  symbol_count_ += bag.members.size() + 2;
  rules_.push_back(Rule{lhs, {}, static_cast<uint32_t>(bags_.size())});
  bags_.push_back(std::move(bag));
}

NonterminalId GrammarBuilder::add_choice(std::string name,
                                         std::vector<std::vector<Symbol>> alternatives) {
  const NonterminalId id = add_nonterminal(std::move(name));
  for (auto& alternative : alternatives) add_rule(id, std::move(alternative));
  return id;
}

Result<Grammar> GrammarBuilder::build(NonterminalId start) && {
  SYN_CHECK(start < names_.size(), "start symbol is not a nonterminal of this grammar");
  // Lexemes that match nothing make their rules unproductive; a lexeme that matches "" would
  // end before its first byte, which the greedy lexer cannot do.
  std::vector<uint8_t> lexeme_ok(lexemes_.size());
  for (size_t i = 0; i < lexemes_.size(); ++i) {
    if (regexes_->nullable(lexemes_[i])) {
      return Status(
          ErrorCode::kInvalidGrammar,
          "a token of the grammar matches the empty string: " + regexes_->to_string(lexemes_[i]));
    }
    lexeme_ok[i] = regexes_->is_empty_language(lexemes_[i]) ? 0 : 1;
  }
  // Productive nonterminals, to a fixed point.
  const size_t n = names_.size();
  std::vector<uint8_t> productive(n, 0);
  auto symbol_productive = [&](Symbol s) {
    return s.is_lexeme() ? lexeme_ok[s.id()] != 0 : productive[s.id()] != 0;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Rule& rule : rules_) {
      if (productive[rule.lhs]) continue;
      bool all = rule.bag == Rule::kNoBag || bag_productive(bags_[rule.bag], productive);
      for (const Symbol s : rule.rhs) all = all && symbol_productive(s);
      if (all) {
        productive[rule.lhs] = 1;
        changed = true;
      }
    }
  }
  if (!productive[start]) {
    return Status(ErrorCode::kInvalidGrammar, "the grammar accepts no text at all");
  }

  Grammar grammar;
  grammar.start_ = start;
  grammar.names_ = std::move(names_);
  for (Rule& rule : rules_) {
    bool keep = productive[rule.lhs] != 0;
    for (const Symbol s : rule.rhs) keep = keep && symbol_productive(s);
    if (rule.bag != Rule::kNoBag) {
      Bag& bag = bags_[rule.bag];
      keep = keep && bag_productive(bag, productive);
      std::erase_if(bag.members, [&](const BagMember& m) { return !productive[m.nonterminal]; });
      if (keep) {
        rule.bag = static_cast<uint32_t>(grammar.bags_.size());
        grammar.bags_.push_back(std::move(bag));
      }
    }
    if (keep) grammar.rules_.push_back(std::move(rule));
  }
  grammar.rule_begin_.assign(n + 1, 0);
  for (const Rule& rule : grammar.rules_) ++grammar.rule_begin_[rule.lhs + 1];
  for (size_t i = 0; i < n; ++i) grammar.rule_begin_[i + 1] += grammar.rule_begin_[i];
  grammar.rule_index_.resize(grammar.rules_.size());
  std::vector<uint32_t> fill(grammar.rule_begin_.begin(), grammar.rule_begin_.end() - 1);
  for (size_t r = 0; r < grammar.rules_.size(); ++r) {
    grammar.rule_index_[fill[grammar.rules_[r].lhs]++] = static_cast<uint32_t>(r);
  }
  // Nullable nonterminals, to a fixed point (lexemes never match "").
  grammar.nullable_.assign(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (const Rule& rule : grammar.rules_) {
      if (grammar.nullable_[rule.lhs]) continue;
      bool all = true;
      if (rule.bag != Rule::kNoBag) {
        const Bag& bag = grammar.bags_[rule.bag];
        all = bag.required == 0 && bag.min_count == 0;
      }
      for (const Symbol s : rule.rhs) all = all && !s.is_lexeme() && grammar.nullable_[s.id()];
      if (all) {
        grammar.nullable_[rule.lhs] = 1;
        changed = true;
      }
    }
  }
  for (const Bag& bag : grammar.bags_) {
    for (const BagMember& m : bag.members) {
      if (grammar.nullable_[m.nonterminal]) {
        return Status(ErrorCode::kInvalidGrammar,
                      "a member of an unordered list derives the empty string: " +
                          grammar.names_[m.nonterminal]);
      }
    }
  }
  grammar.lexemes_ = std::move(lexemes_);
  grammar.regexes_ = std::move(regexes_);
  return grammar;
}

Status under_request_field(const Status& status, const std::string& field) {
  ErrorWhere where = status.where();
  where.field = field + (where.field == "/" ? "" : where.field);
  return Status(status.code(), status.message(), where);
}

}  // namespace synapse::constrain
