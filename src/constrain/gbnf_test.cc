// SPDX-License-Identifier: Apache-2.0
#include "constrain/gbnf.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "constrain/matcher.h"

namespace synapse::constrain {
namespace {

std::shared_ptr<const Grammar> compile(std::string_view text, const GbnfOptions& options = {}) {
  auto grammar = compile_gbnf(text, options);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string() << "\n" << text;
  if (!grammar.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(grammar).value());
}

void expect_language(std::string_view gbnf, const std::vector<std::string>& accepted,
                     const std::vector<std::string>& refused) {
  const auto grammar = compile(gbnf);
  ASSERT_NE(grammar, nullptr);
  for (const std::string& text : accepted) {
    EXPECT_TRUE(grammar_accepts(grammar, text)) << "should accept: " << text << "\n" << gbnf;
  }
  for (const std::string& text : refused) {
    EXPECT_FALSE(grammar_accepts(grammar, text)) << "should refuse: " << text << "\n" << gbnf;
  }
}

// The error of a grammar that must not compile; its message must contain `expected_message`.
void expect_error(std::string_view gbnf, ErrorCode code, const std::string& expected_message,
                  const GbnfOptions& options = {}) {
  const auto grammar = compile_gbnf(gbnf, options);
  ASSERT_FALSE(grammar.ok()) << gbnf;
  EXPECT_EQ(grammar.status().code(), code) << grammar.status().to_string();
  EXPECT_NE(grammar.status().message().find(expected_message), std::string::npos)
      << "message: " << grammar.status().message() << "\nexpected to contain: " << expected_message;
}

TEST(Gbnf, ArithmeticExpressions) {
  expect_language(R"g(
# Expressions with precedence: sums of products of factors.
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?
ws     ::= [ ]*
)g",
                  {"1", "1+2*3", "(1+2)*3", "-4.5/2", "((7))", "( 1 )", "--1", "10/0.25-3"},
                  {"", "1+", "+1", "1..2", "()", "1 + 2", "(1", "1)", "1.", ".5"});
}

TEST(Gbnf, JsonFromTheSpec) {
  // Written from RFC 8259's ABNF, laid out over several lines the way GBNF allows: inside
  // parentheses and after '|'.
  const char* json = R"g(# JSON text (RFC 8259)
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (
             member (ws "," ws member)*  # members, comma-separated
             ws
           )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value (ws "," ws value)* ws )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1F] |
           "\\" (["\\/bfnrt] | "u" hex{4})
hex    ::= [0-9a-fA-F]
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= [ \t\n\r]*)g";
  expect_language(json,
                  {R"g({"a": [1, -2.5e+3, true, null, "x\u00e9\n"]})g", " [] ", "{}", "0",
                   "\"é日😀\"", "[[],{}]", "{\n  \"k\" : {\"n\":-0.0E-1}\n}", "\"\\/\""},
                  {R"g({"a" 1})g", "[1,]", "01", R"g("\x")g", "\"a", R"g({"a":1}})g", "\"a\tb\"",
                   "tru", "[1 2]", "1.", "-", "{,}"});
}

TEST(Gbnf, ListsWithSeparators) {
  expect_language(R"g(root ::= item ("," " "? item)*
item ::= [a-z]+)g",
                  {"a", "ab,c", "a, b,c", "xyz, w"}, {"", ",", "a,", "a,,b", "a ,b", "A"});
  // An empty list too, and a newline after '|' that continues the rule.
  expect_language("root ::= \"[\" \"]\" |\n  \"[\" [0-9] (\";\" [0-9])* \"]\"",
                  {"[]", "[1]", "[1;2;3]"}, {"[", "[;]", "[1;]", "[12]"});
}

TEST(Gbnf, BracedRepetition) {
  expect_language("root ::= [0-9]{2,4}", {"12", "123", "1234"}, {"", "1", "12345", "1a"});
  expect_language("root ::= [0-9]{3}", {"123"}, {"12", "1234"});
  expect_language("root ::= \"x\"{2,}", {"xx", "xxx", std::string(50, 'x')}, {"", "x"});
  expect_language("root ::= \"x\"{0,2} \"y\"", {"y", "xy", "xxy"}, {"xxxy", "x"});
  expect_language("root ::= \"x\" \"y\"{0} \"z\"", {"xz"}, {"xyz"});
  // A repetition takes the whole literal or group before it, and may be written with spaces.
  expect_language("root ::= \"ab\"{2} (\"c\" | \"de\"){ 1 , 2 }", {"ababc", "ababdec", "ababdede"},
                  {"abc", "ababcdec", "abab"});
  // A repetition of a repetition.
  expect_language("root ::= (\"a\"{2})+", {"aa", "aaaa"}, {"a", "aaa"});
}

TEST(Gbnf, EveryCountIsExact) {
  // The counts are built from powers of two; compare each against counting.
  const auto check = [](uint64_t min, uint64_t max, bool unbounded) {
    const std::string gbnf = "root ::= \"a\"{" + std::to_string(min) + "," +
                             (unbounded ? std::string() : std::to_string(max)) + "}";
    const auto grammar = compile(gbnf);
    ASSERT_NE(grammar, nullptr);
    for (uint64_t n = 0; n <= 24; ++n) {
      const bool in = n >= min && (unbounded || n <= max);
      EXPECT_EQ(grammar_accepts(grammar, std::string(n, 'a')), in) << gbnf << " n=" << n;
    }
  };
  for (uint64_t min = 0; min <= 10; ++min) {
    check(min, 0, true);
    for (uint64_t max = min; max <= 20; ++max) check(min, max, false);
  }
}

TEST(Gbnf, NestedRepetitionsAreExact) {
  // (a{m,M}){c,d} against the union of [k·m, k·M] over k in [c, d]; collapsed into one count
  // where that is one range, nested otherwise ("(a{3})*" leaves gaps).
  constexpr uint64_t kLongest = 20;
  const auto counts = [](uint64_t m, uint64_t big_m, uint64_t c, uint64_t d) {
    std::vector<bool> in(kLongest + 1, false);
    for (uint64_t k = c; k <= d && k <= kLongest; ++k) {
      for (uint64_t n = k * m; n <= k * big_m && n <= kLongest; ++n) in[n] = true;
    }
    return in;
  };
  for (uint64_t m = 0; m <= 3; ++m) {
    for (uint64_t big_m = m; big_m <= m + 2; ++big_m) {
      for (uint64_t c = 0; c <= 3; ++c) {
        for (uint64_t d = c; d <= c + 2; ++d) {
          const std::string gbnf = "root ::= (\"a\"{" + std::to_string(m) + "," +
                                   std::to_string(big_m) + "}){" + std::to_string(c) + "," +
                                   std::to_string(d) + "}";
          const auto grammar = compile(gbnf);
          ASSERT_NE(grammar, nullptr);
          const std::vector<bool> in = counts(m, big_m, c, d);
          for (uint64_t n = 0; n <= kLongest; ++n) {
            EXPECT_EQ(grammar_accepts(grammar, std::string(n, 'a')), in[n]) << gbnf << " n=" << n;
          }
        }
      }
    }
  }
  // Unbounded inside or outside.
  expect_language("root ::= (\"a\"{2,})?", {"", "aa", "aaaaa"}, {"a"});
  expect_language("root ::= (\"a\"{2,}){2}", {"aaaa", "aaaaaaa"}, {"", "aa", "aaa"});
  expect_language("root ::= (\"a\"{3})*", {"", "aaa", "aaaaaa"}, {"a", "aaaa"});
  expect_language("root ::= (\"a\"? \"b\")*", {"", "b", "abb", "bab"}, {"a", "aab"});
}

TEST(Gbnf, StackedRepetitionsCollapse) {
  // "x***" nests one item's repetitions; kept nested, each way of splitting a run would be a
  // parse and the parser's work would grow with the square of the nesting.
  const auto grammar = compile("root ::= (\"a\" | \"bc\"+?)" + std::string(200, '*') + " \".\"" +
                               std::string(50, '?'));
  ASSERT_NE(grammar, nullptr);
  EXPECT_LT(grammar->rules().size(), 12u);
  EXPECT_TRUE(grammar_accepts(grammar, "abcbcbca."));
  EXPECT_TRUE(grammar_accepts(grammar, ""));
  EXPECT_FALSE(grammar_accepts(grammar, "b"));
}

TEST(Gbnf, LargeCountsStaySmall) {
  // llama.cpp copies the item per count; here a count costs rules logarithmic in it.
  const auto grammar = compile("root ::= [a-c]{100,1000000} \"!\"");
  ASSERT_NE(grammar, nullptr);
  EXPECT_LT(grammar->rules().size(), 200u);
  EXPECT_FALSE(grammar_accepts(grammar, std::string(99, 'a') + "!"));
  EXPECT_TRUE(grammar_accepts(grammar, std::string(100, 'b') + "!"));
  EXPECT_TRUE(grammar_accepts(grammar, std::string(3001, 'c') + "!"));
  const auto exact = compile("root ::= \"ab\"{1000}");
  ASSERT_NE(exact, nullptr);
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "ab";
  EXPECT_TRUE(grammar_accepts(exact, text));
  EXPECT_FALSE(grammar_accepts(exact, text + "ab"));
  EXPECT_FALSE(grammar_accepts(exact, text.substr(2)));
}

TEST(Gbnf, UnicodeLiteralsAndClasses) {
  expect_language("root ::= \"日本\" [ぁ-ゟ]+ \"\\u00e9\" [\\U0001F600-\\U0001F64F]",
                  {"日本ひらがなé😀", "日本ぁé🙏"}, {"日本é😀", "日本ひらがなe😀", "日本ひA😀"});
  // Negated classes and '.' take whole characters of any length in UTF-8.
  expect_language("root ::= [^a]", {"b", "é", "日", "😀", "\n", std::string(1, '\0')},
                  {"a", "", "bb", "\xC3"});
  expect_language("root ::= .", {"a", "\n", "é", "日", "😀"}, {"", "ab", "\xFF", "\xC3"});
  expect_language("root ::= [^\"\\\\]*", {"", "abc", "é'"}, {"\"", "\\"});
}

TEST(Gbnf, Escapes) {
  expect_language(R"g(root ::= "\x41\u0042\U00000043\t\n\r\\\"\[\]\-")g", {"ABC\t\n\r\\\"[]-"},
                  {"ABC"});
  // In classes: escaped brackets and '-', a '-' just before ']', hex escapes as range ends.
  expect_language(R"g(root ::= [\]\[\-] [a-] [\x30-\x32])g", {"]a0", "[-1", "--2"},
                  {"]a3", "ab0", "\\a0"});
  // "\xff" is the character U+00FF, not the byte.
  expect_language(R"g(root ::= "\xff")g", {"\u00ff"}, {"\xff"});
}

TEST(Gbnf, GreedyLexingDoesNotChangeTheLanguage) {
  // As one lexeme "ab" would take both characters of "ab" and leave nothing for "b".
  expect_language(R"g(root ::= ("a" | "ab") "b")g", {"ab", "abb"}, {"a", "b", "abbb", "aab"});
  expect_language(R"g(root ::= [a-z]* "x")g", {"x", "abx", "xxx"}, {"", "ab", "xa"});
  expect_language(R"g(root ::= "a"* "ab")g", {"ab", "aab", "aaab"}, {"a", "b", "abb"});
  expect_language(R"g(root ::= "é"? "é" [^a])g", {"éb", "ééb", "ééé"}, {"é", "éa"});
}

TEST(Gbnf, LayoutCommentsAndNames) {
  // Comments anywhere a space may be, CRLF line ends, no newline at the end.
  expect_language(
      "# leading comment\r\n\r\nroot ::= # after ::=\r\n  my-rule_2 other # trailing\r\n"
      "my-rule_2 ::= \"x\"\r\nother ::= (\r\n  \"y\" # inside\r\n  |\r\n  \"z\"\r\n) # end",
      {"xy", "xz"}, {"x", "xyz"});
  // A rule defined twice keeps its last definition, as in llama.cpp.
  expect_language("root ::= \"a\"\nroot ::= \"b\"", {"b"}, {"a"});
  // Left recursion, which llama.cpp refuses, is fine for the Earley parser.
  expect_language("root ::= root \"a\" | \"b\"", {"b", "baaa"}, {"a", "ab"});
  // Empty alternatives and an empty group.
  expect_language("root ::= \"a\" ( | \"b\") () \"\"", {"a", "ab"}, {"b", "abb"});
  // Every rule defined, even one that root does not use.
  expect_language("root ::= \"a\"\nunused ::= \"b\"", {"a"}, {"b"});
}

TEST(Gbnf, LongLiteralsAreSplitIntoRules) {
  std::string long_text;
  for (int i = 0; i < 5000; ++i) long_text += static_cast<char>('a' + i % 26);
  const auto grammar = compile("root ::= \"" + long_text + "\" [0-9]");
  ASSERT_NE(grammar, nullptr);
  for (const Rule& rule : grammar->rules()) EXPECT_LE(rule.rhs.size(), 1024u);
  EXPECT_TRUE(grammar_accepts(grammar, long_text + "7"));
  EXPECT_FALSE(grammar_accepts(grammar, long_text));
  EXPECT_FALSE(grammar_accepts(grammar, long_text.substr(1) + "7"));
}

TEST(Gbnf, SyntaxErrorsNameLineAndColumn) {
  constexpr ErrorCode kInvalid = ErrorCode::kInvalidGrammar;
  expect_error("root ::= \"a", kInvalid, "line 1, column 10: the string literal is not closed");
  expect_error("root ::= [a-z", kInvalid, "line 1, column 10: the character class is not closed");
  expect_error("root \"a\"", kInvalid, "line 1, column 6: expected '::=' after the rule name");
  expect_error("root\n::= \"a\"", kInvalid, "line 1, column 5: expected '::='");
  expect_error("root ::= * \"a\"", kInvalid, "line 1, column 10: '*' has nothing before it");
  expect_error("root ::= \"a\" | +", kInvalid, "line 1, column 16: '+' has nothing");
  expect_error("root ::= \"a\" |\n  (\"b\"", kInvalid,
               "line 2, column 7: expected ')' to close the '(' at line 2, column 3");
  expect_error("root ::= \"a\"\n| \"b\"", kInvalid, "line 2, column 1: expected a rule name");
  expect_error("root ::= \"a\" )", kInvalid, "line 1, column 14: unexpected ')'");
  expect_error("root ::= \"a\"\n\n  x ::= \"\\q\"", kInvalid,
               "line 3, column 10: unknown escape: '\\' followed by 'q'");
  expect_error(R"g(root ::= "\x4")g", kInvalid,
               "line 1, column 11: \\x takes exactly 2 hex digits");
  expect_error(R"g(root ::= [\u12])g", kInvalid, "\\u takes exactly 4 hex digits");
  expect_error(R"g(root ::= "\)g", kInvalid,
               "line 1, column 11: the grammar ends inside an escape");
  expect_error("root ::= \"a\"{3,2}", kInvalid, "line 1, column 13: the repetition {3,2}");
  expect_error("root ::= \"a\"{x}", kInvalid, "line 1, column 14: expected a count after '{'");
  expect_error("root ::= \"a\"{2", kInvalid, "expected ',' or '}', found the end of the grammar");
  expect_error("root ::= \"a\"{2,3", kInvalid, "line 1, column 17: expected '}'");
  expect_error("root ::= [z-a]", kInvalid,
               "line 1, column 11: the range U+007A-U+0061 is reversed");
  expect_error(R"g(root ::= "\uD800")g", kInvalid, "U+D800 is a surrogate");
  expect_error(R"g(root ::= [\uDFFF])g", kInvalid, "U+DFFF is a surrogate");
  expect_error(R"g(root ::= "\UFFFFFFFF")g", kInvalid, "is above U+10FFFF");
  expect_error("root ::= \"\xff\"", kInvalid, "line 1, column 11: invalid UTF-8");
  expect_error("root ::= \x01", kInvalid, "unexpected U+0001");
  // Columns count characters, not bytes.
  expect_error("root ::= \"é\" )", kInvalid, "line 1, column 14: unexpected ')'");
}

TEST(Gbnf, UndefinedRulesAndMissingRoot) {
  constexpr ErrorCode kInvalid = ErrorCode::kInvalidGrammar;
  expect_error("root ::= foo", kInvalid, "line 1, column 10: undefined rule 'foo'");
  // The first use in the text is reported, wherever the rule would have been defined.
  expect_error("root ::= a\n\na ::= b c\nc ::= b", kInvalid,
               "line 3, column 7: undefined rule 'b'");
  expect_error("a ::= \"x\"", kInvalid, "no 'root' rule");
  expect_error("", kInvalid, "no 'root' rule");
  expect_error("# only a comment\n", kInvalid, "no 'root' rule");
  // A grammar whose root derives nothing: '[]' is an empty class.
  expect_error("root ::= []", kInvalid, "accepts no text");
  expect_error("root ::= root \"a\"", kInvalid, "accepts no text");
}

TEST(Gbnf, TokenReferencesAreRefused) {
  expect_error("root ::= <think> \"x\"", ErrorCode::kUnsupportedSchema,
               "line 1, column 10: token references");
  expect_error("root ::= \"x\" !<[12]>", ErrorCode::kUnsupportedSchema, "line 1, column 14");
}

TEST(Gbnf, BoundsAreSchemaTooComplex) {
  constexpr ErrorCode kTooComplex = ErrorCode::kSchemaTooComplex;
  std::string deep = "root ::= ";
  for (int i = 0; i < 300; ++i) deep += "(";
  deep += "\"a\"";
  for (int i = 0; i < 300; ++i) deep += ")";
  expect_error(deep, kTooComplex, "line 1, column 266: parentheses are nested more than 256 deep");
  GbnfOptions small;
  small.max_rules = 10;
  expect_error("root ::= a | b | c\na ::= \"a\"+\nb ::= \"b\"*\nc ::= \"c\"{3,9}", kTooComplex,
               "more than 10 rules", small);
  expect_error("root ::= \"a\"{2000000000}", kTooComplex, "a repetition count is above");
  GbnfOptions no_time;
  no_time.time_limit = std::chrono::milliseconds(0);
  std::string many = "root ::=";
  for (int i = 0; i < 1000; ++i) many += " \"a\"";
  expect_error(many, kTooComplex, "took longer than 0 ms", no_time);
}

}  // namespace
}  // namespace synapse::constrain
