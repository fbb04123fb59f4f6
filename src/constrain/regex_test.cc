// SPDX-License-Identifier: Apache-2.0
#include "constrain/regex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tokenizer/unicode.h"

namespace synapse::constrain {
namespace {

bool matches(RegexBuilder& rx, RegexId r, std::string_view text) {
  for (char c : text) r = rx.derive(r, static_cast<uint8_t>(c));
  return rx.nullable(r);
}

// Every string over `alphabet` of length at most `max_len`, for brute-force comparisons.
std::vector<std::string> all_strings(std::string_view alphabet, size_t max_len) {
  std::vector<std::string> out{""};
  for (size_t begin = 0, len = 0; len < max_len; ++len) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

void expect_language(RegexBuilder& rx, RegexId r, std::string_view alphabet, size_t max_len,
                     const std::function<bool(const std::string&)>& expected) {
  for (const std::string& s : all_strings(alphabet, max_len)) {
    EXPECT_EQ(matches(rx, r, s), expected(s)) << "\"" << s << "\" against " << rx.to_string(r);
  }
}

std::string utf8(char32_t cp) {
  std::string out;
  tokenizer::append_utf8(cp, out);
  return out;
}

// The number of byte strings of length at most `max_len` that r matches.
uint64_t count_strings(RegexBuilder& rx, RegexId r, int max_len,
                       std::map<std::pair<RegexId, int>, uint64_t>& memo) {
  if (r == rx.nothing()) return 0;
  auto it = memo.find({r, max_len});
  if (it != memo.end()) return it->second;
  uint64_t n = rx.nullable(r) ? 1 : 0;
  if (max_len > 0) {
    for (unsigned b = 0; b < 256; ++b) {
      n += count_strings(rx, rx.derive(r, static_cast<uint8_t>(b)), max_len - 1, memo);
    }
  }
  memo[{r, max_len}] = n;
  return n;
}

TEST(Regex, NothingAndEpsilon) {
  RegexBuilder rx;
  EXPECT_FALSE(matches(rx, rx.nothing(), ""));
  EXPECT_FALSE(matches(rx, rx.nothing(), "a"));
  EXPECT_TRUE(matches(rx, rx.epsilon(), ""));
  EXPECT_FALSE(matches(rx, rx.epsilon(), "a"));
  EXPECT_TRUE(rx.is_nothing(rx.nothing()));
  EXPECT_NE(rx.nothing(), rx.epsilon());
}

TEST(Regex, BytesAndLiteral) {
  RegexBuilder rx;
  ByteSet digits;
  digits.add_range('0', '9');
  const RegexId d = rx.bytes(digits);
  EXPECT_TRUE(matches(rx, d, "7"));
  EXPECT_FALSE(matches(rx, d, "a"));
  EXPECT_FALSE(matches(rx, d, "77"));
  EXPECT_EQ(rx.bytes(ByteSet()), rx.nothing());
  EXPECT_EQ(rx.byte('x'), rx.literal("x"));
  const RegexId hello = rx.literal("hello");
  EXPECT_TRUE(matches(rx, hello, "hello"));
  EXPECT_FALSE(matches(rx, hello, "hell"));
  EXPECT_FALSE(matches(rx, hello, "hello!"));
  EXPECT_EQ(rx.literal(""), rx.epsilon());
  EXPECT_TRUE(matches(rx, rx.literal(std::string("\0\xff", 2)), std::string("\0\xff", 2)));
}

TEST(Regex, ByteSetComplement) {
  ByteSet s;
  s.add('a');
  const ByteSet c = s.complement();
  EXPECT_FALSE(c.contains('a'));
  EXPECT_TRUE(c.contains('b'));
  EXPECT_TRUE(c.contains(0));
  EXPECT_TRUE(c.contains(255));
  EXPECT_EQ(c.complement(), s);
}

TEST(Regex, ConcatSimplifies) {
  RegexBuilder rx;
  const RegexId a = rx.byte('a');
  const RegexId b = rx.byte('b');
  EXPECT_EQ(rx.concat(a, rx.nothing()), rx.nothing());
  EXPECT_EQ(rx.concat(rx.nothing(), a), rx.nothing());
  EXPECT_EQ(rx.concat(a, rx.epsilon()), a);
  EXPECT_EQ(rx.concat(rx.epsilon(), a), a);
  const std::vector<RegexId> parts{a, b, a};
  EXPECT_EQ(rx.concat(parts), rx.literal("aba"));
  // Associativity is normalised away.
  EXPECT_EQ(rx.concat(rx.concat(a, b), a), rx.concat(a, rx.concat(b, a)));
  EXPECT_EQ(rx.concat(std::span<const RegexId>()), rx.epsilon());
}

TEST(Regex, AltNormalises) {
  RegexBuilder rx;
  const RegexId a = rx.byte('a');
  const RegexId b = rx.byte('b');
  const RegexId xy = rx.literal("xy");
  EXPECT_EQ(rx.alt(a, rx.nothing()), a);
  EXPECT_EQ(rx.alt(a, a), a);
  EXPECT_EQ(rx.alt(xy, rx.any_bytes()), rx.any_bytes());
  // Order and nesting do not matter.
  const std::vector<RegexId> abc{a, xy, b};
  const std::vector<RegexId> cba{xy, b, a};
  EXPECT_EQ(rx.alt(abc), rx.alt(cba));
  EXPECT_EQ(rx.alt(rx.alt(a, xy), b), rx.alt(a, rx.alt(xy, b)));
  // Single bytes merge into one set.
  ByteSet ab;
  ab.add('a');
  ab.add('b');
  EXPECT_EQ(rx.alt(a, b), rx.bytes(ab));
  EXPECT_EQ(rx.alt(std::span<const RegexId>()), rx.nothing());
  const RegexId r = rx.alt(abc);
  expect_language(rx, r, "abxy", 3,
                  [](const std::string& s) { return s == "a" || s == "b" || s == "xy"; });
}

TEST(Regex, Repeats) {
  RegexBuilder rx;
  const RegexId a = rx.byte('a');
  EXPECT_EQ(rx.repeat(a, 0, 0), rx.epsilon());
  EXPECT_EQ(rx.repeat(a, 1, 1), a);
  EXPECT_EQ(rx.repeat(rx.epsilon(), 2, 5), rx.epsilon());
  EXPECT_EQ(rx.repeat(rx.nothing(), 0, 3), rx.epsilon());
  EXPECT_EQ(rx.repeat(rx.nothing(), 1, 3), rx.nothing());
  EXPECT_EQ(rx.repeat(rx.any_bytes(), 0, kUnbounded), rx.any_bytes());

  const RegexId a24 = rx.repeat(a, 2, 4);
  expect_language(rx, a24, "ab", 6, [](const std::string& s) {
    return s.size() >= 2 && s.size() <= 4 && s.find('b') == std::string::npos;
  });
  const RegexId ab_plus = rx.repeat(rx.literal("ab"), 1, kUnbounded);
  expect_language(rx, ab_plus, "ab", 6, [](const std::string& s) {
    if (s.empty() || s.size() % 2 != 0) return false;
    for (size_t i = 0; i < s.size(); i += 2) {
      if (s.compare(i, 2, "ab") != 0) return false;
    }
    return true;
  });
  // A nullable operand: (a?){2,3} is a{0,3}.
  const RegexId opt = rx.repeat(rx.repeat(a, 0, 1), 2, 3);
  expect_language(rx, opt, "ab", 5, [](const std::string& s) {
    return s.size() <= 3 && s.find('b') == std::string::npos;
  });
  const RegexId at_least_3 = rx.repeat(a, 3, kUnbounded);
  expect_language(rx, at_least_3, "ab", 6, [](const std::string& s) {
    return s.size() >= 3 && s.find('b') == std::string::npos;
  });
}

TEST(Regex, IntersectionWithLengthBound) {
  RegexBuilder rx;
  ByteSet ab;
  ab.add('a');
  ab.add('b');
  // (a|b)*b(a|b)* ∩ .{0,3}: at most three bytes, containing a b.
  const RegexId star = rx.repeat(rx.bytes(ab), 0, kUnbounded);
  const std::vector<RegexId> parts{star, rx.byte('b'), star};
  const RegexId has_b = rx.concat(parts);
  const RegexId at_most_3_bytes = rx.repeat(rx.bytes(ByteSet().complement()), 0, 3);
  const RegexId r = rx.intersect(has_b, at_most_3_bytes);
  expect_language(rx, r, "abc", 5, [](const std::string& s) {
    return s.size() <= 3 && s.find('b') != std::string::npos && s.find('c') == std::string::npos;
  });
  EXPECT_EQ(rx.intersect(r, rx.any_bytes()), r);
  EXPECT_EQ(rx.intersect(r, rx.nothing()), rx.nothing());
  EXPECT_EQ(rx.intersect(r, r), r);
  EXPECT_EQ(rx.intersect(rx.epsilon(), star), rx.epsilon());
  EXPECT_EQ(rx.intersect(rx.epsilon(), has_b), rx.nothing());
  EXPECT_EQ(rx.intersect(rx.byte('a'), rx.bytes(ab)), rx.byte('a'));
  EXPECT_EQ(rx.intersect(rx.byte('a'), rx.byte('b')), rx.nothing());
}

TEST(Regex, ComplementOfTwoStrings) {
  RegexBuilder rx;
  const RegexId a_or_b = rx.alt(rx.literal("a"), rx.literal("b"));
  const RegexId r = rx.complement(a_or_b);
  expect_language(rx, r, "abc", 4, [](const std::string& s) { return s != "a" && s != "b"; });
  EXPECT_EQ(rx.complement(r), a_or_b);
  EXPECT_EQ(rx.complement(rx.nothing()), rx.any_bytes());
  EXPECT_EQ(rx.complement(rx.any_bytes()), rx.nothing());
  // Keys other than the declared ones, as an object schema needs them.
  const RegexId keys = rx.alt(rx.literal("id"), rx.literal("name"));
  const RegexId other = rx.intersect(rx.complement(keys), rx.repeat(rx.byte('i'), 1, 2));
  EXPECT_TRUE(matches(rx, other, "i"));
  EXPECT_TRUE(matches(rx, other, "ii"));
  EXPECT_FALSE(matches(rx, other, "id"));
  EXPECT_FALSE(matches(rx, other, ""));
}

TEST(Regex, InterningGivesEqualIds) {
  RegexBuilder rx;
  const RegexId x = rx.concat(rx.repeat(rx.literal("ab"), 0, 4), rx.literal("c"));
  const size_t count = rx.term_count();
  const RegexId y = rx.concat(rx.repeat(rx.literal("ab"), 0, 4), rx.literal("c"));
  EXPECT_EQ(x, y);
  EXPECT_EQ(rx.term_count(), count);
  EXPECT_EQ(rx.derive(x, 'a'), rx.derive(y, 'a'));
}

TEST(Regex, DotStarAbcDotStarHasFewStates) {
  RegexBuilder rx;
  const std::vector<RegexId> parts{rx.any_bytes(), rx.literal("abc"), rx.any_bytes()};
  const RegexId r = rx.concat(parts);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, 4);
  std::set<RegexId> states{r};
  RegexId s = r;
  for (int i = 0; i < 20000; ++i) {
    s = rx.derive(s, static_cast<uint8_t>("abcxa"[pick(rng)]));
    states.insert(s);
  }
  EXPECT_LT(states.size(), 10u);
  EXPECT_TRUE(rx.nullable(s));  // "abc" occurs in 20000 random bytes
  EXPECT_FALSE(matches(rx, r, "abxbc"));
  EXPECT_TRUE(matches(rx, r, "xxababcxx"));
}

TEST(Regex, DerivativeStatesAreClosedForCountedRepeats) {
  // Deriving any byte sequence from a bounded term reaches a small set of states.
  RegexBuilder rx;
  ByteSet hex;
  hex.add_range('0', '9');
  hex.add_range('a', 'f');
  const RegexId r = rx.concat(rx.repeat(rx.bytes(hex), 1, 8), rx.literal("-"));
  std::set<RegexId> states;
  std::vector<RegexId> todo{r};
  while (!todo.empty()) {
    const RegexId s = todo.back();
    todo.pop_back();
    if (!states.insert(s).second) continue;
    for (unsigned b = 0; b < 256; ++b) todo.push_back(rx.derive(s, static_cast<uint8_t>(b)));
  }
  EXPECT_LE(states.size(), 11u);  // 0..8 digits seen, after '-', and ∅
}

TEST(Regex, CodepointBoundaries) {
  RegexBuilder rx;
  const CodepointRange all[] = {{0, 0x10FFFF}};
  const RegexId any = rx.codepoints(all);
  for (char32_t cp :
       {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    EXPECT_TRUE(matches(rx, any, utf8(cp))) << std::hex << static_cast<uint32_t>(cp);
  }
  // Surrogates, overlong forms and values past U+10FFFF are refused.
  for (std::string bad : {"\xED\xA0\x80", "\xED\xBF\xBF", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80",
                          "\xE0\x9F\xBF", "\xF0\x80\x80\x80", "\xF0\x8F\xBF\xBF",
                          "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\x80", "\xFF"}) {
    EXPECT_FALSE(matches(rx, any, bad)) << rx.to_string(any);
  }
  std::map<std::pair<RegexId, int>, uint64_t> memo;
  EXPECT_EQ(count_strings(rx, any, 4, memo), 0x110000u - 0x800u);

  const CodepointRange two_byte_edge[] = {{0x7F, 0x80}};
  const RegexId edge = rx.codepoints(two_byte_edge);
  EXPECT_TRUE(matches(rx, edge, utf8(0x7F)));
  EXPECT_TRUE(matches(rx, edge, utf8(0x80)));
  EXPECT_FALSE(matches(rx, edge, utf8(0x7E)));
  EXPECT_FALSE(matches(rx, edge, utf8(0x81)));
  const CodepointRange surrogates_only[] = {{0xD800, 0xDFFF}};
  EXPECT_EQ(rx.codepoints(surrogates_only), rx.nothing());
}

TEST(Regex, CodepointRangesAgainstBruteForce) {
  RegexBuilder rx;
  const CodepointRange ranges[] = {{0x41, 0x393},     {0x7F0, 0x812},       {0xD000, 0xE0FF},
                                   {0xFFF0, 0x10010}, {0x10FF00, 0x10FFFF}, {0x300, 0x310}};
  const RegexId r = rx.codepoints(ranges);
  auto in_ranges = [&](char32_t cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    for (const CodepointRange& range : ranges) {
      if (cp >= range.lo && cp <= range.hi) return true;
    }
    return false;
  };
  for (char32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x11000 ? 1 : 61)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    ASSERT_EQ(matches(rx, r, utf8(cp)), in_ranges(cp)) << std::hex << static_cast<uint32_t>(cp);
  }
  EXPECT_TRUE(matches(rx, r, utf8(0x10FFFF)));
  EXPECT_FALSE(matches(rx, r, "\xED\xA0\x80"));
}

TEST(Regex, CodepointsBuildFast) {
  RegexBuilder rx;
  const auto start = std::chrono::steady_clock::now();
  const CodepointRange wide[] = {{0x80, 0x10FFFF}};
  const RegexId r = rx.codepoints(wide);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::milliseconds(50));  // generous: sanitizers are on
  EXPECT_LT(rx.term_count(), 60u);
  EXPECT_TRUE(matches(rx, r, "\xC2\x80"));
  EXPECT_FALSE(matches(rx, r, "a"));
}

TEST(Regex, EmptyLanguage) {
  RegexBuilder rx;
  EXPECT_TRUE(rx.is_empty_language(rx.nothing()));
  EXPECT_FALSE(rx.is_empty_language(rx.epsilon()));
  EXPECT_FALSE(rx.is_empty_language(rx.literal("abc")));
  const RegexId a_plus = rx.repeat(rx.byte('a'), 1, kUnbounded);
  const RegexId b_plus = rx.repeat(rx.byte('b'), 1, kUnbounded);
  EXPECT_TRUE(rx.is_empty_language(rx.intersect(a_plus, b_plus)));
  const RegexId a_star = rx.repeat(rx.byte('a'), 0, kUnbounded);
  const RegexId b_star = rx.repeat(rx.byte('b'), 0, kUnbounded);
  EXPECT_FALSE(rx.is_empty_language(rx.intersect(a_star, b_star)));
  EXPECT_TRUE(rx.is_empty_language(rx.intersect(rx.complement(a_star), a_plus)));
  // Too long for the bound.
  const RegexId at_most_3 = rx.repeat(rx.bytes(ByteSet().complement()), 0, 3);
  const RegexId abcd_plus = rx.repeat(rx.literal("abcd"), 1, kUnbounded);
  EXPECT_TRUE(rx.is_empty_language(rx.intersect(at_most_3, abcd_plus)));
  const RegexId at_most_4 = rx.repeat(rx.bytes(ByteSet().complement()), 0, 4);
  EXPECT_FALSE(rx.is_empty_language(rx.intersect(at_most_4, abcd_plus)));
  // A non-empty answer deep inside: strings of 'a' whose length is 12 mod 13 ∩ not ε.
  const RegexId mod13 = rx.concat(rx.repeat(rx.literal(std::string(13, 'a')), 0, kUnbounded),
                                  rx.literal(std::string(12, 'a')));
  EXPECT_FALSE(rx.is_empty_language(rx.intersect(mod13, rx.complement(rx.epsilon()))));
  // A budget too small answers "not empty" rather than refusing wrongly.
  const RegexId x100 = rx.literal(std::string(100, 'x'));
  const RegexId deep_empty = rx.intersect(rx.concat(x100, a_plus), rx.concat(x100, b_plus));
  EXPECT_FALSE(rx.is_empty_language(deep_empty, 10));
  EXPECT_TRUE(rx.is_empty_language(deep_empty, 1000));
}

TEST(Regex, ToStringIsReadable) {
  RegexBuilder rx;
  ByteSet digits;
  digits.add_range('0', '9');
  const RegexId r = rx.concat(rx.literal("a."), rx.repeat(rx.bytes(digits), 1, kUnbounded));
  EXPECT_EQ(rx.to_string(r), "a\\.[0-9]+");
  const RegexId ab = rx.literal("ab");
  const RegexId cd = rx.literal("cd");
  EXPECT_EQ(rx.to_string(rx.alt(ab, cd)), "ab|cd");  // operands in id order
  EXPECT_EQ(rx.to_string(rx.repeat(rx.literal("ab"), 2, 3)), "(ab){2,3}");
  EXPECT_EQ(rx.to_string(rx.nothing()), "[]");
  EXPECT_EQ(rx.to_string(rx.byte('\n')), "\\x0a");
}

TEST(Regex, LongChainsNeedNoDeepStack) {
  RegexBuilder rx;
  constexpr size_t kLength = 50000;
  // Re-associating a long concatenation that is itself the head of another.
  const RegexId long_literal = rx.literal(std::string(kLength, 'x'));
  const RegexId r = rx.concat(long_literal, rx.literal("y"));
  EXPECT_TRUE(matches(rx, r, std::string(kLength, 'x') + "y"));
  EXPECT_EQ(rx.to_string(r).size(), kLength + 1);
  // Deriving through a long run of nullable heads.
  const std::vector<RegexId> optional(kLength, rx.repeat(rx.byte('a'), 0, 1));
  const RegexId chain = rx.concat(rx.concat(optional), rx.byte('b'));
  EXPECT_EQ(rx.derive(chain, 'c'), rx.nothing());
  EXPECT_EQ(rx.derive(chain, 'b'), rx.epsilon());
}

TEST(Regex, MoveKeepsTerms) {
  RegexBuilder rx;
  const RegexId r = rx.literal("abc");
  RegexBuilder moved(std::move(rx));
  EXPECT_TRUE(matches(moved, r, "abc"));
  RegexBuilder assigned;
  assigned = std::move(moved);
  EXPECT_TRUE(matches(assigned, r, "abc"));
  EXPECT_FALSE(matches(assigned, r, "abd"));
}

}  // namespace
}  // namespace synapse::constrain
