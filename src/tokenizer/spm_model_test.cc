// SPDX-License-Identifier: Apache-2.0
// SentencePiece-style BPE and the GGUF loader on a small vocabulary written with GgufWriter.
#include "tokenizer/spm_model.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_keys.h"
#include "format/gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace synapse::tokenizer {
namespace {

namespace key = gguf_key;

// <unk> <s> </s>, 256 byte tokens, then scored pieces.
std::vector<uint8_t> spm_gguf() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    tokens.emplace_back(name);
    scores.push_back(0);
    types.push_back(6);
  }
  for (const auto& [text, score] : std::vector<std::pair<std::string, float>>{{"\xE2\x96\x81", -1},
                                                                              {"a", -2},
                                                                              {"b", -3},
                                                                              {"\xE2\x96\x81"
                                                                               "a",
                                                                               -4},
                                                                              {"ab", -5},
                                                                              {"\xE2\x96\x81"
                                                                               "ab",
                                                                               -6},
                                                                              {"\xC3\xA9", -7},
                                                                              {"ba", -8}}) {
    tokens.push_back(text);
    scores.push_back(score);
    types.push_back(1);
  }
  GgufWriter w;
  EXPECT_TRUE(w.set_string(key::kTokenizerModel, "llama").ok());
  EXPECT_TRUE(w.set(key::kTokenizerTokens, GgufValue::string_array(tokens)).ok());
  EXPECT_TRUE(w.set(key::kTokenizerScores, GgufValue::array(scores)).ok());
  EXPECT_TRUE(w.set(key::kTokenizerTokenType, GgufValue::array(types)).ok());
  return w.write_to_buffer().value();
}

constexpr TokenId kSpace = 259, kA = 260, kB = 261, kSpaceA = 262, kAB = 263, kSpaceAB = 264;

TEST(SpmModel, MergesHighestScoreFirstWithSpacePrefix) {
  const std::vector<uint8_t> bytes = spm_gguf();
  auto file = GgufFile::parse(bytes, "spm");
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = Tokenizer::from_gguf(file->metadata());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->kind(), TokenizerKind::kSentencePiece);
  // "▁a" (-4) merges before "ab" (-5), then "▁a" + "b" (-6).
  EXPECT_EQ(tok->encode("ab"), (std::vector<TokenId>{1, kSpaceAB}));
  EXPECT_EQ(tok->encode("aab", {.add_special = false}), (std::vector<TokenId>{kSpaceA, kAB}));
  EXPECT_EQ(tok->encode("b a", {.add_special = false}),
            (std::vector<TokenId>{kSpace, kB, kSpaceA}));
  // Two merges compete for the "a" of "▁aba": "▁a" (-4) outscores "ba" (-8), so it goes first
  // and leaves no "ba"; lowest-first would give "▁a" "ba".
  EXPECT_EQ(tok->encode("aba", {.add_special = false}), (std::vector<TokenId>{kSpaceAB, kA}));
  // A special token restarts the space prefix.
  EXPECT_EQ(tok->encode("</s>a", {.add_special = false, .parse_special = true}),
            (std::vector<TokenId>{2, kSpaceA}));
  // Characters without a piece, and invalid UTF-8, become byte tokens.
  EXPECT_EQ(tok->encode("\xC3\xA9\xE2\x82\xAC\xFF", {.add_special = false}),
            (std::vector<TokenId>{kSpace, 265, 3 + 0xE2, 3 + 0x82, 3 + 0xAC, 3 + 0xFF}));
  EXPECT_EQ(tok->decode(std::vector<TokenId>{1, kSpaceA, kB, kSpace, 3 + 0xFF}).value(), "ab \xFF");
}

TEST(SpmModel, MissingOrBadKeysAreStructuredErrors) {
  GgufWriter w;
  ASSERT_TRUE(w.set_string(key::kTokenizerModel, "unigram").ok());
  const auto bytes = w.write_to_buffer().value();
  auto file = GgufFile::parse(bytes, "x");
  ASSERT_TRUE(file.ok());
  const auto tok = Tokenizer::from_gguf(file->metadata());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(tok.status().where().key, key::kTokenizerModel);

  GgufWriter empty;
  const auto none = empty.write_to_buffer().value();
  auto empty_file = GgufFile::parse(none, "y");
  ASSERT_TRUE(empty_file.ok());
  EXPECT_EQ(Tokenizer::from_gguf(empty_file->metadata()).status().code(), ErrorCode::kMissingKey);
}

}  // namespace
}  // namespace synapse::tokenizer
