// SPDX-License-Identifier: Apache-2.0
#include "synth/synthetic_vocab.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/utf8.h"

namespace synapse {
namespace {

TEST(SyntheticVocab, ByteLevelBpeIsWellFormed) {
  const Result<SyntheticVocab> vocab = make_byte_level_bpe_vocab(320);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  ASSERT_EQ(vocab->tokens.size(), 320u);
  ASSERT_EQ(vocab->token_types.size(), 320u);
  EXPECT_EQ(vocab->merges.size(), 320u - 256 - 3);
  // Byte tokens in byte order with GPT-2's mapping: 0x00 -> U+0100, '!' -> '!', ' ' -> U+0120.
  EXPECT_EQ(vocab->tokens[0], "\xC4\x80");
  EXPECT_EQ(vocab->tokens['!'], "!");
  EXPECT_EQ(vocab->tokens[' '], "\xC4\xA0");
  EXPECT_EQ(vocab->tokens[317], "<|endoftext|>");
  EXPECT_EQ(vocab->tokens[319], "<|im_end|>");
  EXPECT_EQ(vocab->token_types[319], 3);
  std::set<std::string> unique(vocab->tokens.begin(), vocab->tokens.end());
  EXPECT_EQ(unique.size(), vocab->tokens.size());
  for (const std::string& token : vocab->tokens) EXPECT_TRUE(is_valid_utf8(token));
  // Each merge joins two existing tokens into the token that follows the byte tokens in order.
  for (size_t i = 0; i < vocab->merges.size(); ++i) {
    const std::string& merge = vocab->merges[i];
    const size_t space = merge.find(' ');
    ASSERT_NE(space, std::string::npos);
    const std::string left = merge.substr(0, space), right = merge.substr(space + 1);
    EXPECT_TRUE(unique.contains(left)) << merge;
    EXPECT_TRUE(unique.contains(right)) << merge;
    EXPECT_EQ(vocab->tokens[256 + i], left + right);
  }
}

TEST(SyntheticVocab, DeterministicAndPrefixStable) {
  const SyntheticVocab a = *make_byte_level_bpe_vocab(300);
  const SyntheticVocab b = *make_byte_level_bpe_vocab(300);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.merges, b.merges);
  // A larger vocabulary learns the same first merges.
  const SyntheticVocab c = *make_byte_level_bpe_vocab(330);
  EXPECT_TRUE(std::equal(a.merges.begin(), a.merges.end(), c.merges.begin()));
}

TEST(SyntheticVocab, SizeLimits) {
  EXPECT_EQ(make_byte_level_bpe_vocab(258).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(make_byte_level_bpe_vocab(259).ok());
  EXPECT_EQ(make_byte_level_bpe_vocab((1u << 20) + 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(make_wordpiece_vocab(10).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(make_wordpiece_vocab(100000).status().code(), ErrorCode::kInvalidArgument);
}

// Past what the corpus teaches, a vocabulary is padded with unused tokens (a 262,144-token
// model's shape for benchmarks): the learned part is unchanged, and the three control tokens
// stay last.
TEST(SyntheticVocab, LargeVocabulariesArePaddedWithUnusedTokens) {
  const SyntheticVocab small = *make_byte_level_bpe_vocab(400);
  const SyntheticVocab large = *make_byte_level_bpe_vocab(100000);
  ASSERT_EQ(large.tokens.size(), 100000u);
  EXPECT_TRUE(std::equal(small.merges.begin(), small.merges.end(), large.merges.begin()));
  size_t unused = 0;
  for (size_t i = 0; i < large.tokens.size(); ++i) {
    if (large.token_types[i] != 5) continue;
    EXPECT_EQ(large.tokens[i], "<unused_" + std::to_string(unused) + ">");
    ++unused;
  }
  EXPECT_GT(unused, 99000u);
  EXPECT_EQ(large.token_types.back(), 3);
  EXPECT_EQ(large.merges.size() + 256 + unused + 3, large.tokens.size());
}

TEST(SyntheticVocab, WordPiece) {
  const SyntheticVocab vocab = *make_wordpiece_vocab(160);
  ASSERT_EQ(vocab.tokens.size(), 160u);
  EXPECT_EQ(vocab.tokens[0], "[PAD]");
  EXPECT_EQ(vocab.tokens[1], "[UNK]");
  EXPECT_EQ(vocab.tokens[2], "[CLS]");
  EXPECT_EQ(vocab.tokens[3], "[SEP]");
  EXPECT_EQ(vocab.tokens[4], "[MASK]");
  std::set<std::string> unique(vocab.tokens.begin(), vocab.tokens.end());
  EXPECT_EQ(unique.size(), vocab.tokens.size());
  EXPECT_TRUE(unique.contains("##e"));
  EXPECT_TRUE(unique.contains("the"));
}

}  // namespace
}  // namespace synapse
