// SPDX-License-Identifier: Apache-2.0
// The tokenizer on small hand-made vocabularies (byte-level BPE and WordPiece through
// tokenizer.json); the real vocabularies are covered by tests/tokenizer_parity_test.cc.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"

namespace synapse::tokenizer {
namespace {

using Json = nlohmann::json;

// Every byte as a token (ids 0..255 in byte order), then merges "a b" -> "ab", "ab c" -> "abc",
// "Ġ a" -> "Ġa", and two added tokens.
std::string tiny_bpe_json() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_encode(std::string(1, static_cast<char>(b)))] = b;
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  vocab
      ["\xC4\xA0"
       "a"] = 258;
  Json j;
  j["model"] = {{"type", "BPE"},
                {"vocab", vocab},
                {"merges", Json::array({"a b", Json::array({"ab", "c"}), "\xC4\xA0 a"})}};
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  j["added_tokens"] =
      Json::array({{{"id", 259}, {"content", "<|end|>"}, {"special", true}},
                   {{"id", 260}, {"content", "<tool>"}, {"special", false}, {"rstrip", true}}});
  return j.dump();
}

Tokenizer tiny_bpe() {
  auto tok = Tokenizer::from_hf_json(tiny_bpe_json(), "tiny");
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

// Byte tokens, "bc" (256) and "ab" (257), with merges that compete for the "b" of "abc": "b c"
// ranks first, and is listed again after "a b" (the first listing's rank is the one that counts).
Tokenizer competing_bpe() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_encode(std::string(1, static_cast<char>(b)))] = b;
  vocab["bc"] = 256;
  vocab["ab"] = 257;
  Json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array({"b c", "a b", "b c"})}};
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  auto tok = Tokenizer::from_hf_json(j.dump(), "competing");
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

TEST(Tokenizer, BytelevelBpeMergesByRank) {
  const Tokenizer tok = tiny_bpe();
  EXPECT_EQ(tok.kind(), TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(tok.encode("abc a"), (std::vector<TokenId>{257, 258}));
  EXPECT_EQ(tok.encode("abab"), (std::vector<TokenId>{256, 256}));
  // NFC first: "e" + combining acute becomes U+00E9, two bytes.
  EXPECT_EQ(tok.encode("e\xCC\x81"), (std::vector<TokenId>{0xC3, 0xA9}));
  // The lower rank wins where two merges overlap: "a" "bc", not "ab" "c".
  const Tokenizer competing = competing_bpe();
  EXPECT_EQ(competing.encode("abc"), (std::vector<TokenId>{'a', 256}));
  EXPECT_EQ(competing.encode("cabcab"), (std::vector<TokenId>{'c', 'a', 256, 257}));
}

TEST(Tokenizer, InvalidUtf8GoesThroughByteTokensAndRoundTrips) {
  const Tokenizer tok = tiny_bpe();
  const std::string bad = "ab\xFF\xC3(c\xE2\x82";
  const auto ids = tok.encode(bad);
  EXPECT_EQ(ids.front(), 256);
  EXPECT_EQ(tok.decode(ids).value(), bad);
}

TEST(Tokenizer, ControlTokensOnlyWhenParsingSpecialUserDefinedAlways) {
  const Tokenizer tok = tiny_bpe();
  EXPECT_EQ(tok.encode("<|end|>", {.parse_special = true}), (std::vector<TokenId>{259}));
  EXPECT_EQ(tok.encode("<|end|>", {.parse_special = false}).size(), 7u);
  // <tool> is matched without parse_special and (rstrip) swallows the spaces after it.
  EXPECT_EQ(tok.encode("<tool>  ab"), (std::vector<TokenId>{260, 256}));
  EXPECT_EQ(tok.decode(std::vector<TokenId>{259, 97}).value(), "a");
  EXPECT_EQ(tok.decode(std::vector<TokenId>{259, 97}, {.render_special = true}).value(),
            "<|end|>a");
}

TEST(Tokenizer, DecodeRejectsIdsOutOfRange) {
  const Tokenizer tok = tiny_bpe();
  const auto text = tok.decode(std::vector<TokenId>{1, 261});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("position 1"), std::string::npos);
  EXPECT_FALSE(tok.decode(std::vector<TokenId>{-1}).ok());
}

TEST(Tokenizer, MalformedJsonIsAStructuredError) {
  for (const char* bad : {"", "[]", "{\"model\": 3}", "{\"model\": {\"type\": \"BPE\"}}",
                          "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"x\"}}}",
                          "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": [\"a b\"]}}",
                          "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": [],"
                          " \"byte_fallback\": 7}}"}) {
    const auto tok = Tokenizer::from_hf_json(bad, "bad.json");
    ASSERT_FALSE(tok.ok()) << bad;
    EXPECT_EQ(tok.status().code(), ErrorCode::kBadValue) << bad << ": " << tok.status().to_string();
  }
  const auto unigram = Tokenizer::from_hf_json("{\"model\": {\"type\": \"Unigram\"}}", "u.json");
  ASSERT_FALSE(unigram.ok());
  EXPECT_EQ(unigram.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(unigram.status().where().field, "model.type");
}

TEST(Tokenizer, WordPieceNormalizesAndSplits) {
  Json vocab = Json::object();
  int id = 0;
  for (const char* t : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", ",", "world", "wor", "##ld",
                        "\xE4\xBD\xA0", "a"}) {
    vocab[t] = id++;
  }
  Json j;
  j["model"] = {{"type", "WordPiece"}, {"vocab", vocab}, {"unk_token", "[UNK]"}};
  j["normalizer"] = {{"type", "BertNormalizer"}, {"lowercase", true}};
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  j["post_processor"] = {{"type", "TemplateProcessing"}};
  j["added_tokens"] = Json::array({{{"id", 2}, {"content", "[CLS]"}, {"special", true}},
                                   {{"id", 3}, {"content", "[SEP]"}, {"special", true}}});
  auto tok = Tokenizer::from_hf_json(j.dump(), "wp");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->encode("H\xC3\xA9llo,WORLD\xE4\xBD\xA0x"),
            (std::vector<TokenId>{2, 4, 5, 6, 9, 1, 3}));
  EXPECT_EQ(tok->encode("WorLD", {.add_special = false}), (std::vector<TokenId>{6}));
  // A word whose rest has no piece is one [UNK], not "wor" followed by [UNK].
  EXPECT_EQ(tok->encode("worx wor", {.add_special = false}), (std::vector<TokenId>{1, 7}));
  EXPECT_EQ(tok->encode(std::string(101, 'a'), {.add_special = false}),
            (std::vector<TokenId>{1}));  // over 100 characters: [UNK]
  EXPECT_EQ(tok->decode(std::vector<TokenId>{2, 4, 7, 8}).value(), "hello world");
}

}  // namespace
}  // namespace synapse::tokenizer
