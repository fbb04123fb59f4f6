// SPDX-License-Identifier: Apache-2.0
// ECMA-262 patterns and JSON Schema formats as byte regexes. Goals: the subset of ECMA-262 that
// schemas use, parsed in one pass straight into interned terms, with code point (u-flag)
// semantics; whatever cannot be enforced exactly is refused with its offset, never guessed.
// Non-goals: lookaround, backreferences, word boundaries, Unicode property escapes (\p{..}),
// flags. Where Annex B (web compatibility) accepts more than the u-flag grammar — a lone `{`,
// `]` or `}` as a literal, `[\d-z]` as a union — we accept it too, since schemas are written
// against both.
#include "constrain/ecma_regex.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "tokenizer/unicode.h"

namespace synapse::constrain {
namespace {

constexpr char32_t kMaxCodepoint = 0x10FFFF;
// Bounds on what a pattern may ask for; past them compiling stops with schema_too_complex.
constexpr uint32_t kMaxRepeatCount = 10000;
constexpr int kMaxGroupDepth = 200;

using CodepointSet = std::vector<CodepointRange>;

// Sorted, disjoint, non-adjacent ranges clamped to the Unicode range.
CodepointSet normalized(CodepointSet set) {
  std::erase_if(set, [](const CodepointRange& r) { return r.lo > r.hi || r.lo > kMaxCodepoint; });
  for (CodepointRange& r : set) r.hi = std::min(r.hi, kMaxCodepoint);
  std::sort(set.begin(), set.end(),
            [](const CodepointRange& x, const CodepointRange& y) { return x.lo < y.lo; });
  CodepointSet out;
  for (const CodepointRange& r : set) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CodepointSet complement_of(std::span<const CodepointRange> set) {
  CodepointSet out;
  char32_t next = 0;
  for (const CodepointRange& r : normalized(CodepointSet(set.begin(), set.end()))) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

bool contains(const CodepointSet& set, char32_t cp) {
  return std::any_of(set.begin(), set.end(),
                     [cp](const CodepointRange& r) { return cp >= r.lo && cp <= r.hi; });
}

constexpr CodepointRange kDigit[] = {{'0', '9'}};
constexpr CodepointRange kWord[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMA-262 WhiteSpace and LineTerminator.
constexpr CodepointRange kSpace[] = {
    {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
constexpr CodepointRange kLineTerminator[] = {{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_alnum(char c) { return is_ascii_letter(c) || (c >= '0' && c <= '9'); }

struct Bounds {
  uint32_t min = 0;
  uint32_t max = 0;
};

// An escape or class atom: the code points it stands for, and whether it is a class escape
// (\d, \w, ...), which cannot be the end of a range.
struct ClassAtom {
  CodepointSet set;
  bool is_class_escape = false;
};

ClassAtom single(char32_t cp) { return ClassAtom{{{cp, cp}}, false}; }

class PatternParser {
 public:
  PatternParser(RegexBuilder& rx, std::string_view pattern, CharEncoding encoding)
      : rx_(rx), pattern_(pattern), encoding_(encoding) {}

  Result<RegexId> parse(bool search) {
    if (auto bad = find_invalid_utf8(pattern_)) return invalid(*bad, "invalid UTF-8");
    const RegexId any_text =
        search ? rx_.repeat(any_encoded_char(rx_, encoding_), 0, kUnbounded) : rx_.nothing();
    std::vector<RegexId> alternatives;
    while (true) {
      // Anchors are honoured per top-level alternative: ^a|b$ is (^a)|(b$).
      const bool start_anchor = consume('^');
      bool end_anchor = false;
      SYN_ASSIGN_OR_RETURN(RegexId body, parse_sequence(true, &end_anchor));
      if (search) {
        if (!start_anchor) body = rx_.concat(any_text, body);
        if (!end_anchor) body = rx_.concat(body, any_text);
      }
      alternatives.push_back(body);
      if (at_end()) break;
      if (consume('|')) continue;
      return invalid(pos_, "unmatched ')'");
    }
    return rx_.alt(alternatives);
  }

 private:
  bool at_end() const { return pos_ >= pattern_.size(); }
  bool peek(char c) const { return !at_end() && pattern_[pos_] == c; }
  bool consume(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool looking_at(std::string_view text) const { return pattern_.substr(pos_).starts_with(text); }

  Status error(ErrorCode code, size_t at, std::string_view what) const {
    return Status(code, "pattern: " + std::string(what) + " at byte " + std::to_string(at));
  }
  Status invalid(size_t at, std::string_view what) const {
    return error(ErrorCode::kInvalidGrammar, at, what);
  }
  Status unsupported(size_t at, std::string_view what) const {
    return error(ErrorCode::kUnsupportedSchema, at, std::string(what) + " is not supported");
  }

  RegexId chars(const CodepointSet& set) {
    // Most of a pattern is ASCII literals, which need none of encoded_chars' range work.
    if (set.size() == 1 && set[0].lo == set[0].hi && set[0].lo >= 0x20 && set[0].lo < 0x7F &&
        set[0].lo != '"' && set[0].lo != '\\') {
      return rx_.byte(static_cast<uint8_t>(set[0].lo));
    }
    return encoded_chars(rx_, set, encoding_);
  }

  // The next code point of the (already validated) UTF-8 pattern.
  char32_t next_codepoint() {
    char32_t cp = 0;
    pos_ += tokenizer::decode_utf8(pattern_, pos_, cp);
    return cp;
  }

  Result<RegexId> parse_sequence(bool top_level, bool* end_anchor) {
    std::vector<RegexId> parts;
    while (!at_end() && !peek('|') && !peek(')')) {
      if (peek('^')) return unsupported(pos_, "'^' other than at the start of the pattern");
      if (peek('$')) {
        const size_t next = pos_ + 1;
        if (top_level && (next == pattern_.size() || pattern_[next] == '|')) {
          *end_anchor = true;
          pos_ = next;
          break;
        }
        return unsupported(pos_, "'$' other than at the end of the pattern");
      }
      SYN_ASSIGN_OR_RETURN(RegexId term, parse_term());
      parts.push_back(term);
    }
    return rx_.concat(parts);
  }

  Result<RegexId> parse_disjunction() {
    std::vector<RegexId> alternatives;
    do {
      SYN_ASSIGN_OR_RETURN(RegexId sequence, parse_sequence(false, nullptr));
      alternatives.push_back(sequence);
    } while (consume('|'));
    return rx_.alt(alternatives);
  }

  // Reads {n}, {n,} or {n,m} at `at`; nullopt when the text there is not a quantifier (then
  // the '{' is a literal). Counts saturate rather than overflow: the caller bounds them.
  std::optional<Bounds> brace_quantifier(size_t at, size_t* end) const {
    size_t i = at + 1;
    auto number = [&](uint32_t* value) {
      const size_t start = i;
      uint64_t v = 0;
      while (i < pattern_.size() && pattern_[i] >= '0' && pattern_[i] <= '9') {
        v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(pattern_[i] - '0'), kUnbounded - 1);
        ++i;
      }
      *value = static_cast<uint32_t>(v);
      return i > start;
    };
    Bounds b;
    if (!number(&b.min)) return std::nullopt;
    b.max = b.min;
    if (i < pattern_.size() && pattern_[i] == ',') {
      ++i;
      if (!number(&b.max)) b.max = kUnbounded;
    }
    if (i >= pattern_.size() || pattern_[i] != '}') return std::nullopt;
    *end = i + 1;
    return b;
  }

  bool at_quantifier() const {
    if (at_end()) return false;
    const char c = pattern_[pos_];
    size_t end = 0;
    return c == '*' || c == '+' || c == '?' || (c == '{' && brace_quantifier(pos_, &end));
  }

  Result<RegexId> parse_term() {
    SYN_ASSIGN_OR_RETURN(RegexId atom, parse_atom());
    if (!at_quantifier()) return atom;
    const size_t at = pos_;
    Bounds b;
    size_t end = pos_ + 1;
    switch (pattern_[pos_]) {
      case '*':
        b = {0, kUnbounded};
        break;
      case '+':
        b = {1, kUnbounded};
        break;
      case '?':
        b = {0, 1};
        break;
      default:
        b = *brace_quantifier(pos_, &end);
        break;
    }
    pos_ = end;
    if (b.min > b.max) return invalid(at, "numbers out of order in {} quantifier");
    if (b.min > kMaxRepeatCount || (b.max != kUnbounded && b.max > kMaxRepeatCount)) {
      return error(ErrorCode::kSchemaTooComplex, at,
                   "repeat count over " + std::to_string(kMaxRepeatCount));
    }
    consume('?');  // a lazy quantifier matches the same language
    if (at_quantifier()) return invalid(pos_, "nothing to repeat");
    return rx_.repeat(atom, b.min, b.max);
  }

  Result<RegexId> parse_atom() {
    const size_t at = pos_;
    switch (pattern_[pos_]) {
      case '(':
        return parse_group();
      case '[': {
        SYN_ASSIGN_OR_RETURN(CodepointSet set, parse_class());
        return chars(set);
      }
      case '.':
        ++pos_;
        return chars(complement_of(kLineTerminator));
      case '\\': {
        SYN_ASSIGN_OR_RETURN(ClassAtom escape, parse_escape(false));
        return chars(escape.set);
      }
      case '*':
      case '+':
      case '?':
        return invalid(at, "nothing to repeat");
      case '{':
        if (at_quantifier()) return invalid(at, "nothing to repeat");
        break;
      default:
        break;
    }
    const char32_t cp = next_codepoint();
    return chars({{cp, cp}});
  }

  Result<RegexId> parse_group() {
    const size_t open = pos_++;
    if (++depth_ > kMaxGroupDepth) {
      return error(ErrorCode::kSchemaTooComplex, open, "groups nested too deeply");
    }
    if (consume('?')) {
      if (consume(':')) {
      } else if (peek('=') || peek('!')) {
        return unsupported(open, "lookahead");
      } else if (looking_at("<=") || looking_at("<!")) {
        return unsupported(open, "lookbehind");
      } else if (consume('<')) {
        // A named group matches like a plain one; the name only serves backreferences.
        const size_t name_start = pos_;
        while (!at_end() && (is_ascii_alnum(pattern_[pos_]) || peek('_') || peek('$') ||
                             static_cast<uint8_t>(pattern_[pos_]) >= 0x80)) {
          ++pos_;
        }
        if (pos_ == name_start || !consume('>')) return invalid(open, "malformed group name");
      } else if (!at_end() &&
                 std::string_view("imsx-").find(pattern_[pos_]) != std::string_view::npos) {
        return unsupported(open, "inline flags");
      } else {
        return invalid(open, "malformed group");
      }
    }
    SYN_ASSIGN_OR_RETURN(RegexId inner, parse_disjunction());
    if (!consume(')')) return invalid(open, "unterminated group");
    --depth_;
    return inner;
  }

  Result<ClassAtom> parse_class_atom() {
    if (peek('\\')) return parse_escape(true);
    return single(next_codepoint());
  }

  Result<CodepointSet> parse_class() {
    const size_t open = pos_++;
    const bool negated = consume('^');
    CodepointSet set;
    while (!consume(']')) {
      if (at_end()) return invalid(open, "unterminated character class");
      SYN_ASSIGN_OR_RETURN(ClassAtom lo, parse_class_atom());
      if (!(peek('-') && pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] != ']')) {
        set.insert(set.end(), lo.set.begin(), lo.set.end());
        continue;
      }
      const size_t dash = pos_++;
      SYN_ASSIGN_OR_RETURN(ClassAtom hi, parse_class_atom());
      if (lo.is_class_escape || hi.is_class_escape) {
        set.insert(set.end(), lo.set.begin(), lo.set.end());
        set.push_back({'-', '-'});
        set.insert(set.end(), hi.set.begin(), hi.set.end());
      } else if (lo.set[0].lo > hi.set[0].lo) {
        return invalid(dash, "character class range out of order");
      } else {
        set.push_back({lo.set[0].lo, hi.set[0].lo});
      }
    }
    return negated ? complement_of(set) : normalized(std::move(set));
  }

  // Reads `count` hex digits (or, with count 0, hex digits up to '}'); nullopt when malformed.
  std::optional<char32_t> hex_digits(size_t count) {
    uint32_t value = 0;
    size_t n = 0;
    while (!at_end() && (count == 0 ? !peek('}') : n < count)) {
      const int digit = hex_value(pattern_[pos_]);
      if (digit < 0 || value > kMaxCodepoint) return std::nullopt;
      value = value * 16 + static_cast<uint32_t>(digit);
      ++pos_;
      ++n;
    }
    if (n == 0 || (count != 0 && n != count)) return std::nullopt;
    return static_cast<char32_t>(value);
  }

  Result<ClassAtom> parse_unicode_escape(size_t at) {
    if (consume('{')) {
      const std::optional<char32_t> cp = hex_digits(0);
      if (!cp || *cp > kMaxCodepoint || !consume('}')) return invalid(at, "malformed \\u{...}");
      return single(*cp);
    }
    const std::optional<char32_t> unit = hex_digits(4);
    if (!unit) return invalid(at, "malformed \\uHHHH");
    // A UTF-16 surrogate pair written as two escapes is one code point.
    if (*unit >= 0xD800 && *unit <= 0xDBFF && looking_at("\\u")) {
      const size_t saved = pos_;
      pos_ += 2;
      const std::optional<char32_t> low = hex_digits(4);
      if (low && *low >= 0xDC00 && *low <= 0xDFFF) {
        return single(0x10000 + ((*unit - 0xD800) << 10) + (*low - 0xDC00));
      }
      pos_ = saved;
    }
    return single(*unit);  // a lone surrogate: no UTF-8 text holds it, so it matches nothing
  }

  Result<ClassAtom> parse_escape(bool in_class) {
    const size_t at = pos_++;
    if (at_end()) return invalid(at, "'\\' at the end of the pattern");
    const char c = pattern_[pos_++];
    switch (c) {
      case 'd':
        return ClassAtom{{std::begin(kDigit), std::end(kDigit)}, true};
      case 'D':
        return ClassAtom{complement_of(kDigit), true};
      case 'w':
        return ClassAtom{{std::begin(kWord), std::end(kWord)}, true};
      case 'W':
        return ClassAtom{complement_of(kWord), true};
      case 's':
        return ClassAtom{{std::begin(kSpace), std::end(kSpace)}, true};
      case 'S':
        return ClassAtom{complement_of(kSpace), true};
      case 't':
        return single(0x09);
      case 'n':
        return single(0x0A);
      case 'v':
        return single(0x0B);
      case 'f':
        return single(0x0C);
      case 'r':
        return single(0x0D);
      case 'b':
        if (in_class) return single(0x08);
        return unsupported(at, "word boundary \\b");
      case 'B':
        return unsupported(at, "word boundary \\B");
      case '0':
        if (!at_end() && pattern_[pos_] >= '0' && pattern_[pos_] <= '9') {
          return unsupported(at, "octal escape");
        }
        return single(0);
      case 'c':
        if (!at_end() && is_ascii_letter(pattern_[pos_])) {
          return single(static_cast<char32_t>(pattern_[pos_++]) % 32);  // \cJ is U+000A
        }
        return invalid(at, "\\c without a control letter");
      case 'x': {
        const std::optional<char32_t> cp = hex_digits(2);
        if (!cp) return invalid(at, "malformed \\xHH");
        return single(*cp);
      }
      case 'u':
        return parse_unicode_escape(at);
      case 'k':
        return unsupported(at, "backreference \\k");
      case 'p':
      case 'P':
        return unsupported(at, "Unicode property escape");
      default:
        break;
    }
    if (c >= '1' && c <= '9') return unsupported(at, "backreference");
    if (is_ascii_alnum(c)) return invalid(at, std::string("unknown escape \\") + c);
    --pos_;  // an identity escape: the character itself, possibly multi-byte
    return single(next_codepoint());
  }

  RegexBuilder& rx_;
  std::string_view pattern_;
  CharEncoding encoding_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// ---- JSON Schema formats, written as ECMA patterns over ASCII ----

std::string two_digits(int v) {
  return {static_cast<char>('0' + v / 10), static_cast<char>('0' + v % 10)};
}

constexpr std::string_view kDateBody =
    R"((?:\d{4}-(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01]))"
    R"(|\d{4}-(?:0[469]|11)-(?:0[1-9]|[12]\d|30))"
    R"(|\d{4}-02-(?:0[1-9]|1\d|2[0-8]))"
    R"(|(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)-02-29))";
constexpr std::string_view kHour = R"((?:[01]\d|2[0-3]))";
constexpr std::string_view kFraction = R"((?:\.\d+)?)";
constexpr std::string_view kDecOctet = R"((?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
constexpr std::string_view kLabel = R"([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)";
constexpr size_t kMaxHostnameBytes = 253;

std::string ipv4_body() {
  const std::string octet(kDecOctet);
  return "(?:" + octet + "\\.){3}" + octet;
}

// RFC 3986's IPv6address, one alternative per position of "::".
std::string ipv6_body() {
  const std::string h16 = "[0-9A-Fa-f]{1,4}";
  const std::string ls32 = "(?:" + h16 + ":" + h16 + "|" + ipv4_body() + ")";
  auto head = [&](int n) {
    return "(?:(?:" + h16 + ":){0," + std::to_string(n) + "}" + h16 + ")?";
  };
  auto tail = [&](int n) { return "(?:" + h16 + ":){" + std::to_string(n) + "}"; };
  return "(?:" + tail(6) + ls32 + "|::" + tail(5) + ls32 + "|(?:" + h16 + ")?::" + tail(4) + ls32 +
         "|" + head(1) + "::" + tail(3) + ls32 + "|" + head(2) + "::" + tail(2) + ls32 + "|" +
         head(3) + "::" + h16 + ":" + ls32 + "|" + head(4) + "::" + ls32 + "|" + head(5) +
         "::" + h16 + "|" + head(6) + "::)";
}

// RFC 3986 pieces.
constexpr std::string_view kPct = "%[0-9A-Fa-f]{2}";
constexpr std::string_view kUnreservedSubDelims = R"(A-Za-z0-9\-._~!$&'()*+,;=)";

std::string uri_char(std::string_view extra) {
  return "(?:[" + std::string(kUnreservedSubDelims) + std::string(extra) + "]|" +
         std::string(kPct) + ")";
}

std::string uri_authority() {
  const std::string ip_literal = "\\[(?:" + ipv6_body() + "|[vV][0-9A-Fa-f]+\\.[" +
                                 std::string(kUnreservedSubDelims) + ":]+)\\]";
  return "(?:" + uri_char(":") + "*@)?(?:" + ip_literal + "|" + uri_char("") + "*)(?::\\d*)?";
}

std::string uri_tail() {  // ["?" query] ["#" fragment]
  const std::string query = "(?:" + uri_char(":@/?") + ")*";
  return "(?:\\?" + query + ")?(?:#" + query + ")?";
}

std::string uri_body() {
  const std::string pchar = uri_char(":@");
  const std::string segments = "(?:/" + pchar + "*)*";
  const std::string hier = "(?://" + uri_authority() + segments + "|/(?:" + pchar + "+" + segments +
                           ")?|" + pchar + "+" + segments + ")?";
  return "[A-Za-z][A-Za-z0-9+\\-.]*:" + hier + uri_tail();
}

std::string relative_ref_body() {
  const std::string pchar = uri_char(":@");
  const std::string segments = "(?:/" + pchar + "*)*";
  const std::string relative = "(?://" + uri_authority() + segments + "|/(?:" + pchar + "+" +
                               segments + ")?|" + uri_char("@") + "+" + segments + ")?";
  return relative + uri_tail();
}

constexpr std::string_view kJsonPointer = R"((?:/(?:[^~/]|~[01])*)*)";

// Time of day with offset, leap seconds aside.
std::string plain_time_body() {
  const std::string h(kHour);
  return h + ":[0-5]\\d:[0-5]\\d" + std::string(kFraction) + "(?:[Zz]|[+-]" + h + ":[0-5]\\d)";
}

std::string duration_body() {
  const std::string time = "T(?:\\d+H(?:\\d+M(?:\\d+S)?)?|\\d+M(?:\\d+S)?|\\d+S)";
  const std::string date = "(?:\\d+D|\\d+M(?:\\d+D)?|\\d+Y(?:\\d+M(?:\\d+D)?)?)";
  return "P(?:" + date + "(?:" + time + ")?|" + time + "|\\d+W)";
}

class FormatBuilder {
 public:
  FormatBuilder(RegexBuilder& rx, CharEncoding encoding) : rx_(rx), encoding_(encoding) {}

  Result<RegexId> exact(std::string_view pattern) {
    return compile_ecma_regex(rx_, pattern, encoding_, false);
  }

  // Printable ASCII other than `"` and `\`: the same bytes in both encodings.
  RegexId ascii(std::string_view text) { return rx_.literal(text); }

  Result<RegexId> time() {
    SYN_ASSIGN_OR_RETURN(RegexId plain, exact(plain_time_body()));
    SYN_ASSIGN_OR_RETURN(RegexId leap, leap_second());
    return rx_.alt(plain, leap);
  }

  // A leap second must fall on 23:59:60 UTC, which ties the local minute to the offset's
  // minute and the local hour to the offset's hour. Each tie alone is small; a leap second
  // satisfies both, so they are intersected (one regex for both would need a branch per
  // minute of the day). Built with the builder directly: as pattern text it is 5 KB.
  Result<RegexId> leap_second() {
    SYN_ASSIGN_OR_RETURN(RegexId hour, exact(kHour));
    SYN_ASSIGN_OR_RETURN(RegexId minute, exact("[0-5]\\d"));
    SYN_ASSIGN_OR_RETURN(RegexId before_59, exact("[0-4]\\d|5[0-8]"));
    SYN_ASSIGN_OR_RETURN(RegexId fraction, exact(kFraction));
    SYN_ASSIGN_OR_RETURN(RegexId zulu, exact("[Zz]"));
    auto offset = [&](char sign, RegexId hh, RegexId mm) {
      const RegexId parts[] = {rx_.byte(static_cast<uint8_t>(sign)), hh, ascii(":"), mm};
      return rx_.concat(parts);
    };
    auto seconds_60 = [&](RegexId before, RegexId offsets) {
      const RegexId parts[] = {before, ascii(":60"), fraction, offsets};
      return rx_.concat(parts);
    };
    std::vector<RegexId> by_minute;  // local mm:60 at +hh:(mm+1) or -hh:(59-mm)
    for (int mm = 0; mm < 60; ++mm) {
      const RegexId offsets = mm == 59 ? rx_.alt(zulu, rx_.alt(offset('+', hour, ascii("00")),
                                                               offset('-', hour, ascii("00"))))
                                       : rx_.alt(offset('+', hour, ascii(two_digits(mm + 1))),
                                                 offset('-', hour, ascii(two_digits(59 - mm))));
      by_minute.push_back(seconds_60(ascii(two_digits(mm)), offsets));
    }
    std::vector<RegexId> by_hour;  // at local hh:59 the offset's hour is one more
    for (int hh = 0; hh < 24; ++hh) {
      const RegexId minus = offset('-', ascii(two_digits(23 - hh)), minute);
      const RegexId at_59 =
          rx_.alt(hh == 23 ? zulu : rx_.nothing(),
                  rx_.alt(offset('+', ascii(two_digits((hh + 1) % 24)), minute), minus));
      const RegexId other = rx_.alt(offset('+', ascii(two_digits(hh)), minute), minus);
      const RegexId minutes = rx_.alt(seconds_60(ascii("59"), at_59), seconds_60(before_59, other));
      by_hour.push_back(rx_.concat(ascii(two_digits(hh) + ":"), minutes));
    }
    const RegexId minute_tie = rx_.concat(hour, rx_.concat(ascii(":"), rx_.alt(by_minute)));
    return rx_.intersect(minute_tie, rx_.alt(by_hour));
  }

  Result<RegexId> date_time() {
    SYN_ASSIGN_OR_RETURN(RegexId date, exact(std::string(kDateBody) + "[Tt]"));
    SYN_ASSIGN_OR_RETURN(RegexId t, time());
    return rx_.concat(date, t);
  }

  // RFC 1123 labels; RFC 1034's bound on the whole name, by intersection.
  Result<RegexId> hostname() {
    SYN_ASSIGN_OR_RETURN(RegexId labels,
                         exact(std::string(kLabel) + "(?:\\." + std::string(kLabel) + ")*"));
    const RegexId bound = rx_.repeat(any_encoded_char(rx_, encoding_), 0, kMaxHostnameBytes);
    return rx_.intersect(labels, bound);
  }

  // RFC 5321 Mailbox: a dot-atom or quoted local part, then a host name or address literal.
  Result<RegexId> email() {
    SYN_ASSIGN_OR_RETURN(
        RegexId local,
        exact(R"((?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*)"
              R"(|"(?:[\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E\t])*")@)"));
    SYN_ASSIGN_OR_RETURN(RegexId host, hostname());
    SYN_ASSIGN_OR_RETURN(RegexId literal,
                         exact("\\[(?:" + ipv4_body() + "|IPv6:" + ipv6_body() + ")\\]"));
    return rx_.concat(local, rx_.alt(host, literal));
  }

 private:
  RegexBuilder& rx_;
  CharEncoding encoding_;
};

}  // namespace

RegexId encoded_chars(RegexBuilder& rx, std::span<const CodepointRange> ranges,
                      CharEncoding encoding) {
  if (encoding == CharEncoding::kUtf8) return rx.codepoints(ranges);
  const CodepointSet set = normalized(CodepointSet(ranges.begin(), ranges.end()));
  // Characters with an escape in canonical JSON; everything else is its own UTF-8.
  const CodepointSet escaped = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  const bool any_escaped = std::any_of(set.begin(), set.end(), [](const CodepointRange& r) {
    return r.lo < 0x20 || (r.lo <= '"' && r.hi >= '"') || (r.lo <= '\\' && r.hi >= '\\');
  });
  if (!any_escaped) return rx.codepoints(set);
  CodepointSet plain;
  for (const CodepointRange& r : set) {
    for (const CodepointRange& gap : complement_of(escaped)) {
      const CodepointRange both{std::max(r.lo, gap.lo), std::min(r.hi, gap.hi)};
      if (both.lo <= both.hi) plain.push_back(both);
    }
  }
  ByteSet short_escapes;  // the byte after '\'
  ByteSet low_digit[2];   // \u000X and \u001X: the last hex digit
  static constexpr char kHex[] = "0123456789abcdef";
  for (char32_t cp : {char32_t{'"'}, char32_t{'\\'}}) {
    if (contains(set, cp)) short_escapes.add(static_cast<uint8_t>(cp));
  }
  for (char32_t cp = 0; cp < 0x20; ++cp) {
    if (!contains(set, cp)) continue;
    switch (cp) {
      case 0x08:
        short_escapes.add('b');
        break;
      case 0x09:
        short_escapes.add('t');
        break;
      case 0x0A:
        short_escapes.add('n');
        break;
      case 0x0C:
        short_escapes.add('f');
        break;
      case 0x0D:
        short_escapes.add('r');
        break;
      default:
        low_digit[cp >> 4].add(static_cast<uint8_t>(kHex[cp & 15]));
        break;
    }
  }
  const RegexId unicode_escape =
      rx.concat(rx.literal("u00"), rx.alt(rx.concat(rx.byte('0'), rx.bytes(low_digit[0])),
                                          rx.concat(rx.byte('1'), rx.bytes(low_digit[1]))));
  const RegexId escape = rx.concat(rx.byte('\\'), rx.alt(rx.bytes(short_escapes), unicode_escape));
  return rx.alt(rx.codepoints(plain), escape);
}

RegexId any_encoded_char(RegexBuilder& rx, CharEncoding encoding) {
  const CodepointRange all[] = {{0, kMaxCodepoint}};
  return encoded_chars(rx, all, encoding);
}

Result<RegexId> compile_ecma_regex(RegexBuilder& rx, std::string_view pattern,
                                   CharEncoding encoding, bool search) {
  return PatternParser(rx, pattern, encoding).parse(search);
}

Result<RegexId> format_regex(RegexBuilder& rx, std::string_view format, CharEncoding encoding) {
  FormatBuilder f(rx, encoding);
  if (format == "date-time") return f.date_time();
  if (format == "date") return f.exact(kDateBody);
  if (format == "time") return f.time();
  if (format == "duration") return f.exact(duration_body());
  if (format == "email") return f.email();
  if (format == "hostname") return f.hostname();
  if (format == "ipv4") return f.exact(ipv4_body());
  if (format == "ipv6") return f.exact(ipv6_body());
  if (format == "uuid") {
    return f.exact("[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}");
  }
  if (format == "uri") return f.exact(uri_body());
  if (format == "uri-reference") {
    return f.exact("(?:" + uri_body() + "|" + relative_ref_body() + ")");
  }
  if (format == "json-pointer") return f.exact(kJsonPointer);
  if (format == "relative-json-pointer") {
    return f.exact("(?:0|[1-9]\\d*)(?:#|" + std::string(kJsonPointer) + ")");
  }
  return Status(ErrorCode::kUnsupportedSchema,
                "format \"" + std::string(format) + "\" is not supported");
}

}  // namespace synapse::constrain
