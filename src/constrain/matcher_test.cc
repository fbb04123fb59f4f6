// SPDX-License-Identifier: Apache-2.0
#include "constrain/matcher.h"

#include <gtest/gtest.h>

namespace synapse::constrain {
namespace {

// value ::= "[" "]" | "[" items "]" | /[0-9]+/ ;  items ::= value | items "," value
std::shared_ptr<const Grammar> nested_lists() {
  GrammarBuilder b;
  const NonterminalId value = b.add_nonterminal("value");
  const NonterminalId items = b.add_nonterminal("items");
  ByteSet digits;
  digits.add_range('0', '9');
  const Symbol number = b.token(b.regex().repeat(b.regex().bytes(digits), 1, kUnbounded));
  b.add_rule(value, {b.literal("["), b.literal("]")});
  b.add_rule(value, {b.literal("["), Symbol::nonterminal(items), b.literal("]")});
  b.add_rule(value, {number});
  b.add_rule(items, {Symbol::nonterminal(value)});
  b.add_rule(items, {Symbol::nonterminal(items), b.literal(","), Symbol::nonterminal(value)});
  auto grammar = std::move(b).build(value);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  return std::make_shared<const Grammar>(std::move(grammar).value());
}

TEST(Matcher, AcceptsExactlyTheSentences) {
  const auto g = nested_lists();
  for (const char* text : {"[]", "7", "123", "[1]", "[1,22,[3,[]]]", "[[[[]]]]"}) {
    EXPECT_TRUE(grammar_accepts(g, text)) << text;
  }
  for (const char* text : {"", "[", "[1,]", "[,1]", "1]", "[1 ]", "[]]", "a", "[1,,2]"}) {
    EXPECT_FALSE(grammar_accepts(g, text)) << text;
  }
}

TEST(Matcher, RefusesAByteAndKeepsItsState) {
  Matcher m(nested_lists());
  ASSERT_TRUE(m.consume_bytes("[1,2"));
  EXPECT_FALSE(m.consume_bytes("]]"));  // the second ] has no list to close
  EXPECT_EQ(m.consumed_bytes(), 4u);
  EXPECT_FALSE(m.accepts_end());
  EXPECT_TRUE(m.consume_bytes("]"));
  EXPECT_TRUE(m.accepts_end());
}

TEST(Matcher, RollbackRestoresEveryEarlierState) {
  Matcher m(nested_lists());
  const std::string text = "[10,[2,[]],3]";
  ASSERT_TRUE(m.consume_bytes(text));
  ASSERT_TRUE(m.accepts_end());
  for (size_t keep = text.size(); keep-- > 0;) {
    m.rollback_bytes(1);
    EXPECT_EQ(m.consumed_bytes(), keep);
    // From here the rest of the text must still be accepted.
    Matcher fresh(nested_lists());
    ASSERT_TRUE(fresh.consume_bytes(text.substr(0, keep)));
    EXPECT_EQ(m.accepts_end(), fresh.accepts_end()) << keep;
  }
  EXPECT_TRUE(m.consume_bytes(text));
  EXPECT_TRUE(m.accepts_end());
}

TEST(Matcher, NumbersAreGreedyLexemes) {
  // "12" followed by "]" ends the number; "1" then "2" is one number, not two.
  Matcher m(nested_lists());
  ASSERT_TRUE(m.consume_bytes("[12"));
  EXPECT_TRUE(m.consume_bytes("]"));
  EXPECT_TRUE(m.accepts_end());
}

TEST(Matcher, EmptyRulesAndNullableNonterminals) {
  // s ::= a b "x";  a ::= ε | "a";  b ::= ε | "b"
  GrammarBuilder b;
  const NonterminalId s = b.add_nonterminal("s");
  const NonterminalId a = b.add_choice("a", {{}, {b.literal("a")}});
  const NonterminalId bb = b.add_choice("b", {{}, {b.literal("b")}});
  b.add_rule(s, {Symbol::nonterminal(a), Symbol::nonterminal(bb), b.literal("x")});
  auto built = std::move(b).build(s);
  ASSERT_TRUE(built.ok());
  const auto g = std::make_shared<const Grammar>(std::move(built).value());
  for (const char* text : {"x", "ax", "bx", "abx"}) EXPECT_TRUE(grammar_accepts(g, text)) << text;
  for (const char* text : {"", "a", "bax", "abbx"}) EXPECT_FALSE(grammar_accepts(g, text)) << text;
}

TEST(Grammar, UnproductiveRulesAreDroppedAndAnEmptyLanguageRefused) {
  GrammarBuilder b;
  const NonterminalId s = b.add_nonterminal("s");
  const NonterminalId loop = b.add_nonterminal("loop");
  b.add_rule(loop, {Symbol::nonterminal(loop), b.literal("y")});  // never terminates
  b.add_rule(s, {b.literal("x")});
  b.add_rule(s, {Symbol::nonterminal(loop)});
  auto built = std::move(b).build(s);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->rules().size(), 1u);

  GrammarBuilder empty;
  const NonterminalId only = empty.add_nonterminal("only");
  empty.add_rule(only, {Symbol::nonterminal(only)});
  auto refused = std::move(empty).build(only);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidGrammar);
}

TEST(Grammar, ATokenMatchingTheEmptyStringIsRefused) {
  GrammarBuilder b;
  const NonterminalId s = b.add_nonterminal("s");
  b.add_rule(s, {b.token(b.regex().repeat(b.regex().byte('a'), 0, 3))});
  auto built = std::move(b).build(s);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), ErrorCode::kInvalidGrammar);
}

}  // namespace
}  // namespace synapse::constrain
