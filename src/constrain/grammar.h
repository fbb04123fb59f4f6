// SPDX-License-Identifier: Apache-2.0
// A context-free grammar whose terminals are lexemes (byte regexes). The split is what makes
// masks cheap: inside a lexeme (most of a JSON string, a number) only the lexer moves, one
// memoized derivative per byte; the Earley parser runs only where a lexeme ends.
//
// Lexemes are greedy: a lexeme that can go on with the next byte does, and it ends only where
// the next byte cannot extend it (or at the end of the text). JSON and the grammars compiled
// from schemas are written so that this never changes the language (every lexeme is followed
// by a byte it cannot continue with).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "constrain/regex.h"

namespace synapse::constrain {

using LexemeId = uint32_t;
using NonterminalId = uint32_t;

// A grammar symbol: a lexeme (terminal) or a nonterminal.
class Symbol {
 public:
  static Symbol lexeme(LexemeId id) { return Symbol(id | kLexemeBit); }
  static Symbol nonterminal(NonterminalId id) { return Symbol(id); }
  bool is_lexeme() const { return (value_ & kLexemeBit) != 0; }
  uint32_t id() const { return value_ & ~kLexemeBit; }
  bool operator==(const Symbol&) const = default;

 private:
  static constexpr uint32_t kLexemeBit = 0x80000000u;
  explicit Symbol(uint32_t value) : value_(value) {}
  uint32_t value_;
};

// An unordered list: members joined by a separator, in any order, each `once` member at most
// once. JSON object properties are one (the schema does not order keys, and writing every order
// as rules would take one nonterminal per subset of the properties written). The parser runs
// it natively: its items carry the set of `once` members seen and how many members came.
struct BagMember {
  NonterminalId nonterminal;  // never derives ""
  int32_t once = -1;          // bit of the seen set (0..63); -1: may repeat
};
struct Bag {
  std::vector<BagMember> members;
  uint64_t required = 0;  // `once` bits that must be seen before the bag may end
  LexemeId separator = 0;
  uint32_t min_count = 0;
  uint32_t max_count = UINT32_MAX;  // UINT32_MAX: unbounded
  static constexpr uint32_t kUnbounded = UINT32_MAX;
};

struct Rule {
  static constexpr uint32_t kNoBag = UINT32_MAX;
  NonterminalId lhs = 0;
  std::vector<Symbol> rhs;  // empty: the rule derives "" (unless it is a bag)
  uint32_t bag = kNoBag;    // index into Grammar::bags(): the rule derives that bag
};

// A built grammar: immutable except for the regex builder's memo tables (see Matcher).
class Grammar {
 public:
  Grammar(Grammar&&) noexcept;
  Grammar& operator=(Grammar&&) noexcept;
  ~Grammar();

  NonterminalId start() const { return start_; }
  size_t nonterminal_count() const { return names_.size(); }
  const std::string& name(NonterminalId id) const { return names_[id]; }
  std::span<const Rule> rules() const { return rules_; }
  // Indices into rules() of the rules whose left side is `id`.
  std::span<const uint32_t> rules_of(NonterminalId id) const;
  bool derives_empty(NonterminalId id) const { return nullable_[id] != 0; }
  const Bag& bag(uint32_t index) const { return bags_[index]; }

  size_t lexeme_count() const { return lexemes_.size(); }
  RegexId lexeme_regex(LexemeId id) const { return lexemes_[id]; }
  RegexBuilder& regexes() const { return *regexes_; }

  std::string to_string() const;  // one rule per line, for tests and debugging

 private:
  friend class GrammarBuilder;
  Grammar() = default;

  NonterminalId start_ = 0;
  std::vector<std::string> names_;
  std::vector<Rule> rules_;
  std::vector<uint32_t> rule_index_;  // rule ids grouped by lhs
  std::vector<uint32_t> rule_begin_;  // per nonterminal, into rule_index_ (size n+1)
  std::vector<uint8_t> nullable_;
  std::vector<Bag> bags_;
  std::vector<RegexId> lexemes_;
  std::unique_ptr<RegexBuilder> regexes_;
};

class GrammarBuilder {
 public:
  GrammarBuilder();
  GrammarBuilder(GrammarBuilder&&) noexcept;
  ~GrammarBuilder();

  RegexBuilder& regex() { return *regexes_; }

  // The lexeme matching `r`; the same regex id always gives the same lexeme.
  LexemeId lexeme(RegexId r);
  Symbol literal(std::string_view text) { return Symbol::lexeme(lexeme(regexes_->literal(text))); }
  Symbol token(RegexId r) { return Symbol::lexeme(lexeme(r)); }

  NonterminalId add_nonterminal(std::string name);
  void add_rule(NonterminalId lhs, std::vector<Symbol> rhs);
  // A new nonterminal with one rule per alternative.
  NonterminalId add_choice(std::string name, std::vector<std::vector<Symbol>> alternatives);
  // `lhs` derives the bag (see Bag). Members must not derive "".
  void add_bag(NonterminalId lhs, Bag bag);

  size_t rule_count() const { return rules_.size(); }
  size_t symbol_count() const { return symbol_count_; }

  // Drops rules that can never derive a string; invalid_grammar when `start` derives nothing.
  Result<Grammar> build(NonterminalId start) &&;

 private:
  std::vector<std::string> names_;
  std::vector<Rule> rules_;
  std::vector<Bag> bags_;
  std::vector<RegexId> lexemes_;
  std::unordered_map<RegexId, LexemeId> lexeme_of_regex_;
  size_t symbol_count_ = 0;
  std::unique_ptr<RegexBuilder> regexes_;
};

// The error of a schema or grammar that came in a request field: its location inside the
// schema (a JSON pointer, "/" for the root) put under `field`, e.g.
// "tools[0].function.parameters/properties/a".
Status under_request_field(const Status& status, const std::string& field);

}  // namespace synapse::constrain
