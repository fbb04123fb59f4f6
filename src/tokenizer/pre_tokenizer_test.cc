// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

namespace synapse::tokenizer {
namespace {

std::vector<std::string> split(const PreTokenizer& pre, std::string_view text) {
  std::vector<std::string> pieces;
  std::vector<size_t> scratch;
  pre.split(text, scratch, [&](std::string_view piece) { pieces.emplace_back(piece); });
  return pieces;
}

TEST(Regex, WidensWhiteSpaceToTheUnicodeProperty) {
  EXPECT_EQ(widen_whitespace_classes("\\s+(?!\\S)"), "[\\s\\x{85}]+(?![^\\s\\x{85}])");
  EXPECT_EQ(widen_whitespace_classes("[^\\s\\p{L}]"), "[^\\s\\x{85}\\p{L}]");
  EXPECT_EQ(widen_whitespace_classes("[]\\s]"), "[]\\s\\x{85}]");
  auto regex = Regex::compile("\\s+");
  ASSERT_TRUE(regex.ok());
  size_t begin = 0, end = 0;
  ASSERT_TRUE(regex->find("a\xC2\x85 b", 0, begin, end));
  EXPECT_EQ(begin, 1u);
  EXPECT_EQ(end, 4u);
}

TEST(Regex, BadPatternIsAnError) {
  const auto regex = Regex::compile("[z-a]");
  ASSERT_FALSE(regex.ok());
  EXPECT_EQ(regex.status().code(), ErrorCode::kBadValue);
}

TEST(PreTokenizer, UnknownNameIsUnsupported) {
  const auto spec = find_pre_tokenizer("no-such-pre");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(spec.status().message().find("qwen2"), std::string::npos);
}

TEST(PreTokenizer, EveryNamedPatternCompiles) {
  for (const std::string_view name : pre_tokenizer_names()) {
    const auto spec = find_pre_tokenizer(name);
    ASSERT_TRUE(spec.ok());
    EXPECT_TRUE(PreTokenizer::compile(*spec).ok()) << name;
  }
}

// The names llama.cpp maps to its Llama 3 pre-tokenizer (LFM2's "lfm2" among them) split as
// "llama-bpe" does, whose ids the tokenizer parity test checks against llama.cpp's.
TEST(PreTokenizer, Llama3AliasesAreLlama3) {
  const PreTokenizerSpec llama3 = *find_pre_tokenizer("llama-bpe");
  for (const std::string_view name : {"llama3", "llama-v3", "falcon3", "pixtral", "lfm2"}) {
    const auto spec = find_pre_tokenizer(name);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_EQ(spec->patterns, llama3.patterns) << name;
    EXPECT_EQ(spec->ignore_merges, llama3.ignore_merges) << name;
    EXPECT_EQ(spec->nfc, llama3.nfc) << name;
  }
}

TEST(PreTokenizer, Gpt2SplitsLikeTheReference) {
  auto pre = PreTokenizer::compile(*find_pre_tokenizer("gpt-2"));
  ASSERT_TRUE(pre.ok());
  EXPECT_EQ(split(*pre, "Hello world's  x 123\n"),
            (std::vector<std::string>{"Hello", " world", "'s", " ", " x", " 123", "\n"}));
}

TEST(PreTokenizer, SequencesRefineEachPieceAndCoverTheText) {
  auto pre = PreTokenizer::compile(*find_pre_tokenizer("deepseek-coder"));
  ASSERT_TRUE(pre.ok());
  EXPECT_EQ(split(*pre, "ab12\n\xE4\xBD\xA0\xE5\xA5\xBD!"),
            (std::vector<std::string>{"ab", "1", "2", "\n", "\xE4\xBD\xA0\xE5\xA5\xBD", "!"}));
}

}  // namespace
}  // namespace synapse::tokenizer
