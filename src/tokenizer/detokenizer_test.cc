// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"

namespace synapse::tokenizer {
namespace {

TEST(Detokenizer, CompletePrefixHoldsBackOnlyCharactersThatCanStillComplete) {
  EXPECT_EQ(complete_utf8_prefix("abc"), 3u);
  EXPECT_EQ(complete_utf8_prefix("a\xC3"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xE2\x82"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F\x98\x80"), 5u);
  EXPECT_EQ(complete_utf8_prefix("a\xFF"), 2u);      // can never be valid: passed on
  EXPECT_EQ(complete_utf8_prefix("a\xED\xA0"), 3u);  // a surrogate: passed on
  EXPECT_EQ(complete_utf8_prefix("a\x80"), 2u);      // a stray continuation byte
}

TEST(Detokenizer, StreamsCompleteUtf8AndEqualsDecode) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    vocab[byte_level_encode(std::string(1, static_cast<char>(b)))] = b;
  }
  nlohmann::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}};
  auto tok = Tokenizer::from_hf_json(j.dump(), "bytes");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::string text = "h\xC3\xA9\xF0\x9F\x98\x80!\xFF";
  const std::vector<TokenId> ids = tok->encode(text);
  ASSERT_EQ(ids.size(), text.size());
  StreamingDetokenizer stream(*tok);
  std::vector<std::string> emitted;
  for (const TokenId id : ids) {
    std::string out;
    ASSERT_TRUE(stream.push(id, out).ok());
    emitted.push_back(out);
  }
  std::string rest;
  stream.finish(rest);
  EXPECT_EQ(emitted, (std::vector<std::string>{"h", "", "\xC3\xA9", "", "", "", "\xF0\x9F\x98\x80",
                                               "!", "\xFF"}));
  EXPECT_EQ(rest, "");
  std::string out;
  EXPECT_EQ(stream.push(999, out).code(), ErrorCode::kInvalidArgument);
  StreamingDetokenizer partial(*tok);
  ASSERT_TRUE(partial.push(0xE2, out).ok());
  EXPECT_EQ(partial.pending_bytes(), 1u);
  partial.finish(out);
  EXPECT_EQ(out, "\xE2");
}

}  // namespace
}  // namespace synapse::tokenizer
