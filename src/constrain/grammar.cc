// SPDX-License-Identifier: Apache-2.0
#include "constrain/grammar.h"

#include <sstream>

namespace synapse::constrain {

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
      bool all = true;
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
      for (const Symbol s : rule.rhs) all = all && !s.is_lexeme() && grammar.nullable_[s.id()];
      if (all) {
        grammar.nullable_[rule.lhs] = 1;
        changed = true;
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
