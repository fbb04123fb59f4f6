// SPDX-License-Identifier: Apache-2.0
#include "constrain/gbnf.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/echo.h"
#include "base/utf8.h"
#include "tokenizer/unicode.h"

namespace synapse::constrain {
namespace {

constexpr char32_t kMaxCodepoint = 0x10FFFF;
// The longest right-hand side a rule gets. A longer sequence (a long literal) is split into
// helper nonterminals: the grammar indexes positions in a rule with 16 bits, and short rules keep
// the parser's items small.
constexpr size_t kMaxRuleSymbols = 1024;
// Counts above this are refused so that the arithmetic on them cannot overflow; the grammar a
// count needs is logarithmic in it, so this is the only bound counts need.
constexpr uint64_t kMaxRepetition = 1'000'000'000;
constexpr uint64_t kUnboundedCount = UINT64_MAX;
// Copies of a repeated item written out as they are; larger counts use powers of two.
constexpr uint64_t kWrittenOutCopies = 4;
// How many parser steps pass between two looks at the clock.
constexpr uint32_t kStepsPerClockCheck = 256;

using Sequence = std::vector<Symbol>;
using Alternatives = std::vector<Sequence>;

// `outer` copies of something that is itself `inner` copies of X, as one range of copies of X,
// when that is exact: k copies give [k·inner.min, k·inner.max], and the union over k in `outer`
// is one range when consecutive ones touch, (k+1)·inner.min <= k·inner.max + 1, which is hardest
// at the smallest k. Nothing when the ranges leave gaps ("(x{3})*") or a count would pass
// kMaxRepetition. Collapsing "x**" or "(x+)?" this way is not only smaller: nested repetitions
// of one item can split a run in every way, and the Earley parser's work grows with the square
// of that ambiguity.
struct Counts {
  uint64_t min = 0;
  uint64_t max = 0;  // kUnboundedCount: no bound
};
std::optional<Counts> compose_counts(Counts inner, Counts outer) {
  if (outer.max == 0) return Counts{0, 0};
  const auto times = [](uint64_t a, uint64_t b) -> std::optional<uint64_t> {
    if (a == 0 || b == 0) return 0;
    if (a == kUnboundedCount || b == kUnboundedCount) return kUnboundedCount;
    if (a > kMaxRepetition / b) return std::nullopt;
    return a * b;
  };
  if (outer.min != outer.max) {
    // inner.max - inner.min and outer.min are at most kMaxRepetition: no overflow.
    const bool touching = inner.max == kUnboundedCount
                              ? (outer.min >= 1 || inner.min <= 1)
                              : inner.min <= outer.min * (inner.max - inner.min) + 1;
    if (!touching) return std::nullopt;
  }
  const auto min = times(outer.min, inner.min);
  const auto max = times(outer.max, inner.max);
  if (!min || !max) return std::nullopt;
  return Counts{*min, *max};
}

// An item that is `counts` copies of `one`.
struct Repetition {
  Symbol one;
  Counts counts;
};

bool is_name_char(char c) {
  // llama.cpp's parser takes letters, digits and '-'; its guide also names '_', which no grammar
  // llama.cpp accepts can have next to a name, so taking it changes no such grammar.
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// "U+00E9": at least four hex digits, as Unicode writes code points.
std::string codepoint_name(char32_t cp) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string digits;
  for (uint32_t v = cp; v != 0 || digits.size() < 4; v >>= 4) {
    digits.insert(digits.begin(), kHex[v & 15]);
  }
  return "U+" + digits;
}

// The code points in [0, kMaxCodepoint] outside `ranges`.
std::vector<CodepointRange> complement(std::vector<CodepointRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange& a, const CodepointRange& b) { return a.lo < b.lo; });
  std::vector<CodepointRange> gaps;
  char32_t next = 0;  // the lowest code point neither covered nor in a gap yet
  for (const CodepointRange& range : ranges) {
    if (range.lo > next) gaps.push_back({next, range.lo - 1});
    if (range.hi >= kMaxCodepoint) return gaps;
    next = std::max<char32_t>(next, range.hi + 1);
  }
  gaps.push_back({next, kMaxCodepoint});
  return gaps;
}

class GbnfCompiler {
 public:
  GbnfCompiler(std::string_view text, const GbnfOptions& options)
      : text_(text),
        options_(options),
        deadline_(std::chrono::steady_clock::now() + options.time_limit) {}

  Result<Grammar> compile() &&;

 private:
  struct NamedRule {
    std::string name;
    NonterminalId id = 0;
    size_t first_use = SIZE_MAX;  // offset of the first reference
    bool defined = false;
    Alternatives alternatives;  // of the last definition (llama.cpp keeps the last one too)
  };

  // Errors.
  std::string where(size_t offset) const;  // "line L, column C"
  std::string describe_at(size_t offset) const;
  Status error(size_t offset, const std::string& what,
               ErrorCode code = ErrorCode::kInvalidGrammar) const {
    return Status(code, where(offset) + ": " + what);
  }
  Status too_complex(size_t offset, const std::string& what) const {
    return error(offset, what, ErrorCode::kSchemaTooComplex);
  }
  Status step();  // counts a parser step; past the deadline, schema_too_complex

  // The text.
  bool at_end() const { return pos_ >= text_.size(); }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  void skip_space(bool newline_ok);
  std::string_view parse_name();

  // Parsing, as llama.cpp's recursive descent does it: `nested` says whether newlines may
  // separate the items of a sequence (only inside parentheses).
  Status parse_rule();
  // When `sole` is not null and the sequence (or group) is one repetition and nothing else, the
  // repetition goes there unexpanded, and `out` stays empty: a repetition that follows may then
  // collapse with it (see compose_counts) without leaving rules nothing uses.
  Status parse_alternates(bool nested, size_t depth, Alternatives& out,
                          std::optional<Repetition>* sole);
  Status parse_sequence(bool nested, size_t depth, Sequence& out, std::optional<Repetition>* sole);
  Status parse_group(bool nested, size_t depth, Sequence& out, std::optional<Repetition>& sole);
  Status parse_char(char32_t& cp);
  Status parse_literal(Sequence& out);
  Result<Symbol> parse_class();
  Status parse_braces(bool nested, uint64_t& min, uint64_t& max);
  Status parse_count(uint64_t& out);

  // Building.
  NamedRule& named(std::string_view name);
  NonterminalId new_nonterminal();
  Status add_rule(NonterminalId lhs, Sequence rhs);
  Status fold(Sequence& sequence);
  Status check_rule_count() const;
  Symbol char_symbol(char32_t cp);
  Symbol any_char_symbol();
  Result<Symbol> as_symbol(Sequence sequence);
  Result<Sequence> expand(const Repetition& repetition);

  std::string_view text_;
  const GbnfOptions& options_;
  std::chrono::steady_clock::time_point deadline_;
  size_t pos_ = 0;
  uint32_t steps_ = 0;

  GrammarBuilder builder_;
  std::string current_rule_;  // names the nonterminals generated for it, like llama.cpp
  size_t nonterminal_count_ = 0;
  size_t pending_rules_ = 0;      // alternatives of named rules, added to builder_ at the end
  std::vector<NamedRule> named_;  // in order of first mention, so the output is deterministic
  std::unordered_map<std::string, size_t> named_index_;
  std::unordered_map<char32_t, Symbol> char_symbols_;
};

std::string GbnfCompiler::where(size_t offset) const {
  offset = std::min(offset, text_.size());
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text_[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  size_t column = 1;
  for (size_t i = line_start; i < offset; ++i) {
    // Columns count characters: continuation bytes do not start one.
    if ((static_cast<uint8_t>(text_[i]) & 0xC0) != 0x80) ++column;
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string GbnfCompiler::describe_at(size_t offset) const {
  if (offset >= text_.size()) return "the end of the grammar";
  const auto b = static_cast<uint8_t>(text_[offset]);
  if (b < 0x20 || b == 0x7F) return codepoint_name(b);
  // The whole character: the text was checked to be valid UTF-8.
  const size_t length = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  return "'" + std::string(text_.substr(offset, length)) + "'";
}

Status GbnfCompiler::step() {
  if (++steps_ % kStepsPerClockCheck == 0 && std::chrono::steady_clock::now() > deadline_) {
    return too_complex(pos_, "compiling the grammar took longer than " +
                                 std::to_string(options_.time_limit.count()) + " ms");
  }
  return ok_status();
}

void GbnfCompiler::skip_space(bool newline_ok) {
  while (!at_end()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
      ++pos_;
    } else if (c == '#') {
      while (!at_end() && text_[pos_] != '\r' && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

std::string_view GbnfCompiler::parse_name() {
  const size_t start = pos_;
  while (!at_end() && is_name_char(text_[pos_])) ++pos_;
  return text_.substr(start, pos_ - start);
}

GbnfCompiler::NamedRule& GbnfCompiler::named(std::string_view name) {
  const auto [it, inserted] = named_index_.try_emplace(std::string(name), named_.size());
  if (inserted) {
    NamedRule rule;
    rule.name = std::string(name);
    rule.id = builder_.add_nonterminal(rule.name);
    ++nonterminal_count_;
    named_.push_back(std::move(rule));
  }
  return named_[it->second];
}

NonterminalId GbnfCompiler::new_nonterminal() {
  const NonterminalId id =
      builder_.add_nonterminal(current_rule_ + "_" + std::to_string(nonterminal_count_));
  ++nonterminal_count_;
  return id;
}

Status GbnfCompiler::check_rule_count() const {
  if (builder_.rule_count() + pending_rules_ > options_.max_rules) {
    return too_complex(
        pos_, "the grammar needs more than " + std::to_string(options_.max_rules) + " rules");
  }
  return ok_status();
}

Status GbnfCompiler::fold(Sequence& sequence) {
  while (sequence.size() > kMaxRuleSymbols) {
    Sequence shorter;
    for (size_t begin = 0; begin < sequence.size(); begin += kMaxRuleSymbols) {
      const size_t end = std::min(sequence.size(), begin + kMaxRuleSymbols);
      if (end - begin == 1) {
        shorter.push_back(sequence[begin]);
        continue;
      }
      const NonterminalId part = new_nonterminal();
      builder_.add_rule(part, Sequence(sequence.begin() + static_cast<ptrdiff_t>(begin),
                                       sequence.begin() + static_cast<ptrdiff_t>(end)));
      SYN_RETURN_IF_ERROR(check_rule_count());
      shorter.push_back(Symbol::nonterminal(part));
    }
    sequence = std::move(shorter);
  }
  return ok_status();
}

Status GbnfCompiler::add_rule(NonterminalId lhs, Sequence rhs) {
  SYN_RETURN_IF_ERROR(fold(rhs));
  builder_.add_rule(lhs, std::move(rhs));
  return check_rule_count();
}

Symbol GbnfCompiler::char_symbol(char32_t cp) {
  const auto it = char_symbols_.find(cp);
  if (it != char_symbols_.end()) return it->second;
  const CodepointRange range{cp, cp};
  const Symbol symbol = builder_.token(builder_.regex().codepoints({&range, 1}));
  char_symbols_.emplace(cp, symbol);
  return symbol;
}

Symbol GbnfCompiler::any_char_symbol() {
  const CodepointRange any{0, kMaxCodepoint};
  return builder_.token(builder_.regex().codepoints({&any, 1}));
}

Result<Symbol> GbnfCompiler::as_symbol(Sequence sequence) {
  if (sequence.size() == 1) return sequence[0];
  const NonterminalId wrapped = new_nonterminal();
  SYN_RETURN_IF_ERROR(add_rule(wrapped, std::move(sequence)));
  return Symbol::nonterminal(wrapped);
}

Status GbnfCompiler::parse_char(char32_t& cp) {
  const size_t start = pos_;
  const auto c = static_cast<uint8_t>(text_[pos_]);
  if (c != '\\') {
    // The text was checked to be valid UTF-8 up front.
    pos_ += tokenizer::decode_utf8(text_, pos_, cp);
    return ok_status();
  }
  if (pos_ + 1 >= text_.size()) return error(start, "the grammar ends inside an escape");
  const char kind = text_[pos_ + 1];
  size_t digits = 0;
  switch (kind) {
    case 'x':
      digits = 2;
      break;
    case 'u':
      digits = 4;
      break;
    case 'U':
      digits = 8;
      break;
    case 'n':
      cp = '\n';
      break;
    case 'r':
      cp = '\r';
      break;
    case 't':
      cp = '\t';
      break;
    case '\\':
    case '"':
    case '[':
    case ']':
    case '-':
      cp = static_cast<char32_t>(kind);
      break;
    default:
      return error(start, "unknown escape: '\\' followed by " + describe_at(start + 1));
  }
  pos_ += 2;
  if (digits == 0) return ok_status();
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const char h = at_end() ? '\0' : text_[pos_];
    int nibble = -1;
    if (h >= '0' && h <= '9') nibble = h - '0';
    if (h >= 'a' && h <= 'f') nibble = h - 'a' + 10;
    if (h >= 'A' && h <= 'F') nibble = h - 'A' + 10;
    if (nibble < 0) {
      return error(start, std::string("\\") + kind + " takes exactly " + std::to_string(digits) +
                              " hex digits");
    }
    value = value * 16 + static_cast<uint64_t>(nibble);
    ++pos_;
  }
  if (value > kMaxCodepoint) {
    return error(start, "\\" + std::string(text_.substr(start + 1, digits + 1)) +
                            " is above U+10FFFF, the last Unicode character");
  }
  cp = static_cast<char32_t>(value);
  return ok_status();
}

Status GbnfCompiler::parse_literal(Sequence& out) {
  const size_t start = pos_;
  ++pos_;  // the opening quote
  while (true) {
    if (at_end()) return error(start, "the string literal is not closed");
    if (text_[pos_] == '"') break;
    const size_t char_start = pos_;
    char32_t cp = 0;
    SYN_RETURN_IF_ERROR(parse_char(cp));
    if (is_surrogate(cp)) {
      return error(char_start,
                   codepoint_name(cp) + " is a surrogate, which UTF-8 text cannot hold");
    }
    // One lexeme per character: see the header on why longer lexemes could change the language.
    out.push_back(char_symbol(cp));
  }
  ++pos_;  // the closing quote
  return ok_status();
}

Result<Symbol> GbnfCompiler::parse_class() {
  const size_t start = pos_;
  ++pos_;  // [
  const bool negated = at('^');
  if (negated) ++pos_;
  std::vector<CodepointRange> ranges;
  while (true) {
    if (at_end()) return error(start, "the character class is not closed");
    if (text_[pos_] == ']') break;
    const size_t lo_start = pos_;
    char32_t lo = 0;
    SYN_RETURN_IF_ERROR(parse_char(lo));
    char32_t hi = lo;
    // As in llama.cpp, a '-' just before ']' is a plain character ("[a-]").
    if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']') {
      ++pos_;
      SYN_RETURN_IF_ERROR(parse_char(hi));
      if (hi < lo) {
        return error(lo_start,
                     "the range " + codepoint_name(lo) + "-" + codepoint_name(hi) + " is reversed");
      }
    } else if (is_surrogate(lo)) {
      // Inside a range a surrogate is fine (codepoints() skips them); alone it is a mistake.
      return error(lo_start, codepoint_name(lo) + " is a surrogate, which UTF-8 text cannot hold");
    }
    ranges.push_back({lo, hi});
  }
  ++pos_;  // ]
  if (negated) ranges = complement(std::move(ranges));
  // Matches nothing when empty ("[]"); build() then drops the rules that need it.
  return builder_.token(builder_.regex().codepoints(ranges));
}

Status GbnfCompiler::parse_count(uint64_t& out) {
  const size_t start = pos_;
  out = 0;
  while (!at_end() && is_digit(text_[pos_])) {
    out = out * 10 + static_cast<uint64_t>(text_[pos_] - '0');
    if (out > kMaxRepetition) {
      return too_complex(start, "a repetition count is above " + std::to_string(kMaxRepetition));
    }
    ++pos_;
  }
  return ok_status();
}

Status GbnfCompiler::parse_braces(bool nested, uint64_t& min, uint64_t& max) {
  const size_t start = pos_;
  ++pos_;  // {
  skip_space(nested);
  if (at_end() || !is_digit(text_[pos_])) {
    return error(pos_, "expected a count after '{', found " + describe_at(pos_));
  }
  SYN_RETURN_IF_ERROR(parse_count(min));
  skip_space(nested);
  if (at('}')) {
    max = min;
  } else if (at(',')) {
    ++pos_;
    skip_space(nested);
    max = kUnboundedCount;
    if (!at_end() && is_digit(text_[pos_])) {
      SYN_RETURN_IF_ERROR(parse_count(max));
      skip_space(nested);
    }
    if (!at('}')) return error(pos_, "expected '}', found " + describe_at(pos_));
  } else {
    return error(pos_, "expected ',' or '}', found " + describe_at(pos_));
  }
  ++pos_;  // }
  if (max < min) {
    return error(start, "the repetition {" + std::to_string(min) + "," + std::to_string(max) +
                            "} has its maximum below its minimum");
  }
  return ok_status();
}

// The sequence deriving min..max copies of `one` (max kUnboundedCount: no bound). Counts cost
// rules logarithmic in them: P(i) derives 2^i copies (P(i) ::= P(i-1) P(i-1)), U(i) derives
// 0..2^i-1 copies (U(i) ::= U(i-1) | P(i-1) U(i-1)), and "0..k more" splits k at its top bit t:
// U(t) | P(t) (0..k-2^t more). Each count has one derivation, so repetition adds no ambiguity for
// the parser to carry.
Result<Sequence> GbnfCompiler::expand(const Repetition& repetition) {
  const Symbol one = repetition.one;
  const uint64_t min = repetition.counts.min;
  const uint64_t max = repetition.counts.max;
  std::vector<Symbol> powers{one};  // powers[i] derives 2^i copies
  auto power = [&](size_t i) -> Result<Symbol> {
    while (powers.size() <= i) {
      const NonterminalId doubled = new_nonterminal();
      SYN_RETURN_IF_ERROR(add_rule(doubled, {powers.back(), powers.back()}));
      powers.push_back(Symbol::nonterminal(doubled));
    }
    return powers[i];
  };
  std::vector<Sequence> units{Sequence{}};  // units[i] derives 0..2^i-1 copies
  auto unit = [&](size_t i) -> Result<Sequence> {
    while (units.size() <= i) {
      const size_t below = units.size() - 1;
      SYN_ASSIGN_OR_RETURN(const Symbol p, power(below));
      const NonterminalId u = new_nonterminal();
      SYN_RETURN_IF_ERROR(add_rule(u, units[below]));
      Sequence upper{p};
      upper.insert(upper.end(), units[below].begin(), units[below].end());
      SYN_RETURN_IF_ERROR(add_rule(u, std::move(upper)));
      units.push_back({Symbol::nonterminal(u)});
    }
    return units[i];
  };

  Sequence out;
  if (min <= kWrittenOutCopies) {
    out.assign(min, one);
  } else {
    for (size_t bit = 0; bit < 64; ++bit) {
      if (((min >> bit) & 1) == 0) continue;
      SYN_ASSIGN_OR_RETURN(const Symbol p, power(bit));
      out.push_back(p);
    }
  }
  if (max == kUnboundedCount) {
    // Left recursion: the Earley parser runs it in constant items per character, where right
    // recursion would complete a chain as long as the repetition at its end.
    const NonterminalId star = new_nonterminal();
    SYN_RETURN_IF_ERROR(add_rule(star, {}));
    SYN_RETURN_IF_ERROR(add_rule(star, {Symbol::nonterminal(star), one}));
    out.push_back(Symbol::nonterminal(star));
  } else {
    // The choices "U(t) | P(t) rest" from the outermost (highest bit) in, then built inside out.
    std::vector<std::pair<Sequence, Symbol>> choices;
    for (uint64_t more = max - min; more > 0;) {
      const auto top = static_cast<size_t>(std::bit_width(more)) - 1;
      SYN_ASSIGN_OR_RETURN(Sequence below, unit(top));
      SYN_ASSIGN_OR_RETURN(const Symbol p, power(top));
      choices.emplace_back(std::move(below), p);
      more -= uint64_t{1} << top;
    }
    Sequence rest;
    for (size_t j = choices.size(); j-- > 0;) {
      const NonterminalId choice = new_nonterminal();
      SYN_RETURN_IF_ERROR(add_rule(choice, std::move(choices[j].first)));
      Sequence with{choices[j].second};
      with.insert(with.end(), rest.begin(), rest.end());
      SYN_RETURN_IF_ERROR(add_rule(choice, std::move(with)));
      rest = {Symbol::nonterminal(choice)};
    }
    out.insert(out.end(), rest.begin(), rest.end());
  }
  return out;
}

Status GbnfCompiler::parse_group(bool nested, size_t depth, Sequence& out,
                                 std::optional<Repetition>& sole) {
  const size_t start = pos_;
  if (depth + 1 > options_.max_nesting) {
    return too_complex(start, "parentheses are nested more than " +
                                  std::to_string(options_.max_nesting) + " deep");
  }
  ++pos_;  // (
  skip_space(true);
  Alternatives alternatives;
  SYN_RETURN_IF_ERROR(parse_alternates(true, depth + 1, alternatives, &sole));
  if (!at(')')) {
    return error(
        pos_, "expected ')' to close the '(' at " + where(start) + ", found " + describe_at(pos_));
  }
  ++pos_;
  skip_space(nested);
  if (alternatives.size() == 1) {
    // A group without '|' is just its sequence: concatenation is associative.
    out = std::move(alternatives[0]);
    return ok_status();
  }
  const NonterminalId group = new_nonterminal();
  for (Sequence& alternative : alternatives) {
    SYN_RETURN_IF_ERROR(add_rule(group, std::move(alternative)));
  }
  out = {Symbol::nonterminal(group)};
  return ok_status();
}

Status GbnfCompiler::parse_sequence(bool nested, size_t depth, Sequence& out,
                                    std::optional<Repetition>* sole) {
  // `item` is the last thing parsed, kept apart from `out` until the next one starts, so that a
  // repetition applies to all of it (a whole literal or group, as in llama.cpp). When it has
  // been repeated, `pending` holds the repetition, expanded only once nothing more can collapse
  // into it.
  Sequence item;
  std::optional<Repetition> pending;
  size_t items = 0;
  const auto flush = [&]() -> Status {
    if (pending) {
      SYN_ASSIGN_OR_RETURN(item, expand(*pending));
      pending.reset();
    }
    out.insert(out.end(), item.begin(), item.end());
    item.clear();
    return ok_status();
  };
  while (!at_end()) {
    SYN_RETURN_IF_ERROR(step());
    const size_t start = pos_;
    const char c = text_[pos_];
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (items == 0) {
        return error(start, "'" + std::string(1, c) + "' has nothing before it to repeat");
      }
      uint64_t min = 0;
      uint64_t max = kUnboundedCount;
      if (c == '{') {
        SYN_RETURN_IF_ERROR(parse_braces(nested, min, max));
      } else {
        ++pos_;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
      }
      skip_space(nested);
      if (pending) {
        if (const auto counts = compose_counts(pending->counts, {min, max})) {
          pending->counts = *counts;
          continue;
        }
        SYN_ASSIGN_OR_RETURN(item, expand(*pending));
      }
      SYN_ASSIGN_OR_RETURN(const Symbol one, as_symbol(std::move(item)));
      item.clear();
      pending = Repetition{one, {min, max}};
      continue;
    }
    if (c == '<' || c == '!') {
      return error(start,
                   "token references (<...>, !<...>) match tokens rather than text and are not "
                   "supported",
                   ErrorCode::kUnsupportedSchema);
    }
    if (c != '"' && c != '[' && c != '.' && c != '(' && !is_name_char(c)) break;

    SYN_RETURN_IF_ERROR(flush());
    ++items;
    if (c == '(') {
      SYN_RETURN_IF_ERROR(parse_group(nested, depth, item, pending));
      continue;  // parse_group skipped the space after ')'
    }
    if (c == '"') {
      SYN_RETURN_IF_ERROR(parse_literal(item));
    } else if (c == '[') {
      SYN_ASSIGN_OR_RETURN(const Symbol symbol, parse_class());
      item.push_back(symbol);
    } else if (c == '.') {
      ++pos_;
      item.push_back(any_char_symbol());
    } else {
      NamedRule& rule = named(parse_name());
      if (rule.first_use == SIZE_MAX) rule.first_use = start;
      item.push_back(Symbol::nonterminal(rule.id));
    }
    skip_space(nested);
  }
  if (sole != nullptr && items == 1 && pending) {
    *sole = pending;
    return ok_status();
  }
  if (sole != nullptr) sole->reset();
  return flush();
}

Status GbnfCompiler::parse_alternates(bool nested, size_t depth, Alternatives& out,
                                      std::optional<Repetition>* sole) {
  out.emplace_back();
  SYN_RETURN_IF_ERROR(parse_sequence(nested, depth, out.back(), sole));
  while (at('|')) {
    if (sole != nullptr && *sole) {
      // A choice is not a repetition: its first alternative was one, so expand it now.
      SYN_ASSIGN_OR_RETURN(out[0], expand(**sole));
      sole->reset();
    }
    ++pos_;
    skip_space(true);  // a newline after '|' continues the rule, even outside parentheses
    out.emplace_back();
    SYN_RETURN_IF_ERROR(parse_sequence(nested, depth, out.back(), nullptr));
  }
  return ok_status();
}

Status GbnfCompiler::parse_rule() {
  const size_t start = pos_;
  current_rule_ = std::string(parse_name());
  if (current_rule_.empty()) {
    return error(start, "expected a rule name, found " + describe_at(start));
  }
  skip_space(false);
  if (text_.substr(pos_, 3) != "::=") {
    return error(pos_, "expected '::=' after the rule name '" + clip_for_echo(current_rule_) +
                           "', found " + describe_at(pos_));
  }
  pos_ += 3;
  skip_space(true);
  Alternatives alternatives;
  SYN_RETURN_IF_ERROR(parse_alternates(false, 0, alternatives, nullptr));
  if (at('\r')) {
    ++pos_;
    if (at('\n')) ++pos_;
  } else if (at('\n')) {
    ++pos_;
  } else if (!at_end()) {
    return error(pos_, "unexpected " + describe_at(pos_) + " in the rule '" +
                           clip_for_echo(current_rule_) + "'");
  }
  skip_space(true);
  for (Sequence& alternative : alternatives) SYN_RETURN_IF_ERROR(fold(alternative));
  NamedRule& rule = named(current_rule_);
  pending_rules_ -= rule.alternatives.size();
  pending_rules_ += alternatives.size();
  rule.alternatives = std::move(alternatives);
  rule.defined = true;
  return check_rule_count();
}

Result<Grammar> GbnfCompiler::compile() && {
  if (const auto bad = find_invalid_utf8(text_)) return error(*bad, "invalid UTF-8");
  skip_space(true);
  while (!at_end()) SYN_RETURN_IF_ERROR(parse_rule());

  // Of the rules used but never defined, the one used first in the text.
  const NamedRule* undefined = nullptr;
  for (const NamedRule& rule : named_) {
    if (!rule.defined && (undefined == nullptr || rule.first_use < undefined->first_use)) {
      undefined = &rule;
    }
  }
  if (undefined != nullptr) {
    return error(undefined->first_use, "undefined rule '" + clip_for_echo(undefined->name) + "'");
  }
  const auto root = named_index_.find("root");
  if (root == named_index_.end()) {
    return Status(ErrorCode::kInvalidGrammar, "the grammar has no 'root' rule to start from");
  }
  for (NamedRule& rule : named_) {
    for (Sequence& alternative : rule.alternatives) {
      builder_.add_rule(rule.id, std::move(alternative));
    }
  }
  pending_rules_ = 0;
  return std::move(builder_).build(named_[root->second].id);
}

}  // namespace

Result<Grammar> compile_gbnf(std::string_view text, const GbnfOptions& options) {
  return GbnfCompiler(text, options).compile();
}

}  // namespace synapse::constrain
