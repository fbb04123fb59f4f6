// SPDX-License-Identifier: Apache-2.0
#include "constrain/token_masker.h"

#include <gtest/gtest.h>

#include <random>

#include "constrain/json_schema.h"
#include "format/gguf/gguf_file.h"
#include "tests/support/test_support.h"

namespace synapse::constrain {
namespace {

// value ::= string | number | "[" "]" | "[" items "]";  items ::= value | items "," value
std::shared_ptr<const Grammar> lists_of_strings_and_numbers() {
  GrammarBuilder b;
  RegexBuilder& rx = b.regex();
  const NonterminalId value = b.add_nonterminal("value");
  const NonterminalId items = b.add_nonterminal("items");
  ByteSet digits;
  digits.add_range('0', '9');
  ByteSet not_plain;
  not_plain.add('"');
  not_plain.add('\\');
  ByteSet chars;
  for (unsigned c = 0x20; c <= 0xff; ++c) {
    if (!not_plain.contains(static_cast<uint8_t>(c))) chars.add(static_cast<uint8_t>(c));
  }
  const RegexId escape = rx.concat(rx.byte('\\'), rx.bytes(not_plain));
  const RegexId body = rx.repeat(rx.alt(rx.bytes(chars), escape), 0, kUnbounded);
  const Symbol string = b.token(rx.concat(rx.concat(rx.byte('"'), body), rx.byte('"')));
  const Symbol number = b.token(rx.repeat(rx.bytes(digits), 1, kUnbounded));
  // A string of at most 60 characters after '#': its states differ only in the count left, so
  // the masker walks them through a widened state (TokenMasker::kShallowDepth).
  const Symbol counted = b.token(
      rx.concat(rx.concat(rx.literal("#\""), rx.repeat(rx.alt(rx.bytes(chars), escape), 0, 60)),
                rx.byte('"')));
  b.add_rule(value, {counted});
  b.add_rule(value, {string});
  b.add_rule(value, {number});
  b.add_rule(value, {b.literal("["), b.literal("]")});
  b.add_rule(value, {b.literal("["), Symbol::nonterminal(items), b.literal("]")});
  b.add_rule(items, {Symbol::nonterminal(value)});
  b.add_rule(items, {Symbol::nonterminal(items), b.literal(","), Symbol::nonterminal(value)});
  auto grammar = std::move(b).build(value);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  return std::make_shared<const Grammar>(std::move(grammar).value());
}

std::shared_ptr<const TokenTrie> llama3_trie(const std::string& path) {
  auto file = GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  auto tok = tokenizer::Tokenizer::from_gguf(file->metadata());
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::make_shared<const TokenTrie>(
      TokenTrie::from_tokenizer(*tok, {tok->vocab().special().eos}));
}

bool bit(std::span<const uint64_t> mask, size_t t) { return (mask[t >> 6] >> (t & 63)) & 1; }

// The mask must allow exactly the tokens whose bytes the matcher accepts, at every state along
// `text`; checked against feeding each token's bytes and rolling back. Each position checks a
// quarter of the vocabulary (rotating), the tokens that touch `punctuation` always. `at_end`
// runs before the last byte is fed.
template <typename AtEnd>
void expect_masks_equal_feeding(TokenMasker& masker, const std::string& text,
                                const char* punctuation, AtEnd at_end) {
  const TokenTrie& trie = masker.trie();
  Matcher m = masker.new_matcher();
  std::vector<uint64_t> mask(masker.mask_words());
  for (size_t pos = 0; pos <= text.size(); ++pos) {
    std::fill(mask.begin(), mask.end(), 0);
    masker.compute_mask(m, mask);
    size_t allowed = 0;
    for (size_t t = 0; t < trie.vocab_size(); ++t) {
      const std::string& text_of_t = trie.token_bytes(static_cast<TokenId>(t));
      const bool touches = text_of_t.find_first_of(punctuation) != std::string::npos;
      const bool end = t == static_cast<size_t>(trie.end_tokens()[0]);
      if (t % 4 != pos % 4 && !touches && !end) continue;
      bool expected = false;
      if (trie.in_trie(static_cast<TokenId>(t))) {
        const std::string& bytes = trie.token_bytes(static_cast<TokenId>(t));
        expected = m.consume_bytes(bytes);
        if (expected) m.rollback_bytes(bytes.size());
      }
      if (end) expected = m.accepts_end();
      ASSERT_EQ(bit(mask, t), expected)
          << "token " << t << " '" << trie.token_bytes(static_cast<TokenId>(t)) << "' after '"
          << text.substr(0, pos) << "'";
      allowed += expected ? 1 : 0;
    }
    EXPECT_GT(allowed, 0u) << "nothing allowed after '" << text.substr(0, pos) << "'";
    if (pos + 1 == text.size()) at_end();
    if (pos < text.size()) {
      ASSERT_TRUE(m.consume_bytes(text.substr(pos, 1)));
    }
  }
  EXPECT_TRUE(m.accepts_end());
}

TEST(TokenMasker, EqualsFeedingEveryTokenAlongATextOnLlama3) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  TokenMasker masker(lists_of_strings_and_numbers(), llama3_trie(vocab));
  expect_masks_equal_feeding(
      masker, R"(["a b",12,#"abcdefghijklmnopqrstuvwxyz0123",[],["x\"y",[7,"\\"]],"",#""])",
      "\"[],\\", [&] {
        // The counted string's states went through the widened walk (the path under test).
        EXPECT_GT(masker.stats().widened, 0u);
      });
}

// An object whose keys come in any order: where several keys may come next (and additional
// keys, which exclude the declared ones), the masks are merged from each key's own; they must
// still equal feeding every token.
TEST(TokenMasker, MergedKeyMasksEqualFeedingEveryToken) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  auto grammar = compile_json_schema(
      nlohmann::ordered_json::parse(R"({"type":"object","properties":{
          "id":{"type":"string"},"idx":{"type":"integer"},"name":{"type":"string"},
          "tags":{"type":"array","items":{"type":"string"}}},
          "required":["name"],"additionalProperties":{"type":"integer"}})"),
      JsonSchemaOptions{.property_order = JsonSchemaOptions::PropertyOrder::kAny});
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  TokenMasker masker(std::make_shared<const Grammar>(std::move(grammar).value()),
                     llama3_trie(vocab));
  // Non-ASCII text inside strings goes through the plain-text subtrees (PlainText).
  expect_masks_equal_feeding(masker, R"({"tags":["x"],"idx":3,"zz":1,"id":"qé中😀ы","name":"n"})",
                             "\"{}[],:", [&] {
                               EXPECT_GT(masker.stats().merged, 0u);
                               EXPECT_GT(masker.stats().plain_text_subtrees, 0u);
                               // Additional keys: any string but the declared ones.
                               EXPECT_GT(masker.stats().peeled, 0u);
                             });
}

// Additional keys exclude declared keys that are prefixes of each other and of the additional
// keys written, in either property order: the masks corrected from the plain key's along those
// paths (TokenMasker::peeled_masks) must equal feeding every token.
TEST(TokenMasker, KeysExcludedFromAdditionalOnesEqualFeedingEveryToken) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  for (const auto order :
       {JsonSchemaOptions::PropertyOrder::kDefinition, JsonSchemaOptions::PropertyOrder::kAny}) {
    auto grammar = compile_json_schema(nlohmann::ordered_json::parse(R"({"type":"object",
        "properties":{"a":{"type":"integer"},"ab":{"type":"integer"},"name":{"type":"integer"}},
        "additionalProperties":{"type":"string"}})"),
                                       JsonSchemaOptions{.property_order = order});
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    TokenMasker masker(std::make_shared<const Grammar>(std::move(grammar).value()),
                       llama3_trie(vocab));
    expect_masks_equal_feeding(masker, R"({"a":1,"abc":"x","n":"y","names":"z","":"e"})",
                               "\"{}[],:", [&] { EXPECT_GT(masker.stats().peeled, 0u); });
  }
}

TEST(TokenMasker, ConsumeTokenFollowsTheMask) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  const auto trie = llama3_trie(vocab);
  TokenMasker masker(lists_of_strings_and_numbers(), trie);
  Matcher m = masker.new_matcher();
  const TokenId eos = trie->end_tokens()[0];
  EXPECT_FALSE(masker.consume_token(m, eos));  // nothing written yet
  // Greedy random walk through allowed tokens; every chosen token must be consumable.
  std::mt19937 rng(7);
  std::vector<uint64_t> mask(masker.mask_words());
  for (int step = 0; step < 40; ++step) {
    std::fill(mask.begin(), mask.end(), 0);
    masker.compute_mask(m, mask);
    std::vector<TokenId> allowed;
    for (size_t t = 0; t < trie->vocab_size(); ++t) {
      if (bit(mask, t) && static_cast<TokenId>(t) != eos)
        allowed.push_back(static_cast<TokenId>(t));
    }
    ASSERT_FALSE(allowed.empty());
    const TokenId pick = allowed[rng() % allowed.size()];
    ASSERT_TRUE(masker.consume_token(m, pick)) << trie->token_bytes(pick);
  }
  EXPECT_GT(masker.cached_states(), 0u);
}

}  // namespace
}  // namespace synapse::constrain
