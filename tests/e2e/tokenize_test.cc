// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of `synapse tokenize`: every output form, --special, --no-bos, --detokenize,
// the --jsonl batch mode over a whole corpus file, tokenizer.json input, and exit codes.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::synapse_cli;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

TEST(TokenizeCli, IdsPiecesJsonAndSpecialTokens) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/qwen2-vocab.gguf");
  const std::string cmd =
      synapse_cli() + " tokenize -m " + quote(vocab) + " -p " + quote("Hello world!<|im_end|>");
  const auto plain = run_command(cmd + " --ids");
  ASSERT_EQ(plain.exit_code, 0) << plain.stderr_text;
  EXPECT_EQ(Json::parse(plain.stdout_text).size(), 8u);  // <|im_end|> stays text
  const auto special = run_command(cmd + " --ids --special");
  EXPECT_EQ(Json::parse(special.stdout_text), Json::parse("[9707, 1879, 0, 151645]"));
  const auto json = run_command(cmd + " --json --special");
  ASSERT_EQ(json.exit_code, 0);
  const Json j = Json::parse(json.stdout_text);
  EXPECT_EQ(j["n_tokens"], 4);
  EXPECT_EQ(j["pieces"][1], " world");
  const auto pieces = run_command(cmd + " --pieces --special");
  EXPECT_EQ(Json::parse(pieces.stdout_text)[3], "<|im_end|>");
  const auto table = run_command(cmd + " --special");
  EXPECT_NE(table.stdout_text.find("151645 -> \"<|im_end|>\""), std::string::npos)
      << table.stdout_text;
}

TEST(TokenizeCli, BosAndDetokenize) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/ggml-vocab-llama-spm.gguf");
  const std::string base = synapse_cli() + " tokenize -m " + quote(vocab);
  const auto with_bos = run_command(base + " -p 'Hello world' --ids");
  EXPECT_EQ(Json::parse(with_bos.stdout_text), Json::parse("[1, 15043, 3186]"));
  const auto no_bos = run_command(base + " -p 'Hello world' --ids --no-bos");
  EXPECT_EQ(Json::parse(no_bos.stdout_text), Json::parse("[15043, 3186]"));
  const auto text = run_command(base + " --detokenize -p '[1, 15043, 3186]'");
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_EQ(text.stdout_text, "Hello world\n");
  const auto bad = run_command(base + " --detokenize -p '1 32000'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.stderr_text.find("invalid_argument"), std::string::npos) << bad.stderr_text;
}

TEST(TokenizeCli, JsonlBatchMatchesTheCorpus) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  SYN_REQUIRE_FIXTURE(corpus, "tokenizer/corpus/llama3.jsonl");
  const auto r = run_command(synapse_cli() + " tokenize -m " + quote(vocab) +
                             " --jsonl --no-bos < " + quote(corpus));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::ifstream expected_in(corpus);
  std::istringstream got(r.stdout_text);
  std::string expected_line, got_line;
  size_t lines = 0;
  while (std::getline(expected_in, expected_line)) {
    ASSERT_TRUE(std::getline(got, got_line)) << "missing output line " << lines + 1;
    const Json record = Json::parse(expected_line);
    EXPECT_EQ(Json::parse(got_line), record.contains("ids_hf") ? record["ids_hf"] : record["ids"])
        << record["id"];
    ++lines;
  }
  EXPECT_GT(lines, 200u);
  const auto malformed = run_command("echo '{\"txt\": 1}' | " + synapse_cli() + " tokenize -m " +
                                     quote(vocab) + " --jsonl");
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_NE(malformed.stderr_text.find("line 1"), std::string::npos);
}

TEST(TokenizeCli, HfTokenizerJsonAndErrors) {
  SYN_REQUIRE_FIXTURE(dir, "tokenizer/hf/qwen3/tokenizer.json");
  const auto r = run_command(synapse_cli() + " tokenize -m " + quote(dir) + " -p 'Hello' --ids");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(Json::parse(r.stdout_text), Json::parse("[9707]"));
  EXPECT_EQ(run_command(synapse_cli() + " tokenize -p x").exit_code, 2);
  EXPECT_EQ(run_command(synapse_cli() + " tokenize -m x.gguf --ids --json -p x").exit_code, 2);
  const auto missing = run_command(synapse_cli() + " tokenize -m /nonexistent.gguf -p x");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.stderr_text.find("not_found"), std::string::npos) << missing.stderr_text;
}

}  // namespace
}  // namespace synapse
