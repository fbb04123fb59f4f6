// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of `synapse embed` and `synapse rerank`: the OpenAI response shape against
// llama.cpp's vectors, every input form, rerank order and --top-n, and bad input (missing model,
// inputs past the context, models that cannot do the job) with exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::synapse_cli;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void synth(const std::string& args, const std::string& path) {
  const auto r = run_command(synapse_cli() + " synth " + args + " -o " + quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
}

TEST(EmbedCli, OpenAiShapeMatchesLlamaCpp) {
  SYN_REQUIRE_FIXTURE(summary_path, "reference/embeddings/embeddings_summary.json");
  const std::string dir = summary_path.substr(0, summary_path.rfind('/') + 1);
  const Json summary = Json::parse(testing::read_file_text(summary_path));
  const Json expected =
      Json::parse(testing::read_file_text(dir + "emb.tiny-bert-bge-f32.mean.l2.fa_off.json"));
  std::string args;
  size_t tokens = 0;
  for (size_t i = 0; i < summary["sentences"].size(); ++i) {
    args += " -p " + quote(summary["sentences"][i].get<std::string>());
    tokens += summary["token_ids"][i].size();
  }
  const auto r = run_command(synapse_cli() + " embed -m " + quote(dir + "tiny-bert-bge-f32.gguf") +
                             " --pooling mean --json -t 2" + args);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json got = Json::parse(r.stdout_text);
  EXPECT_EQ(got["object"], "list");
  EXPECT_EQ(got["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(got["usage"]["total_tokens"], tokens);
  EXPECT_TRUE(got["model"].is_string());
  ASSERT_EQ(got["data"].size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(got["data"][i]["object"], "embedding");
    EXPECT_EQ(got["data"][i]["index"], i);
    const Json& v = got["data"][i]["embedding"];
    ASSERT_EQ(v.size(), 32u);
    for (size_t e = 0; e < 32; ++e) {
      // The F32 parity bound of tests/embedding_parity_test.cc.
      EXPECT_NEAR(v[e].get<double>(), expected["data"][i]["embedding"][e].get<double>(), 1e-3);
    }
  }
}

TEST(EmbedCli, InputFormsAndPooling) {
  testing::TempDir dir;
  const std::string model = dir.file("bert.gguf");
  synth("--arch bert", model);
  const std::string base = synapse_cli() + " embed -m " + quote(model);
  const auto prompts = run_command(base + " -p 'the cat' -p 'a hat' --json");
  ASSERT_EQ(prompts.exit_code, 0) << prompts.stderr_text;
  {
    std::ofstream f(dir.file("inputs.txt"));
    f << "the cat\n\na hat\r\n";
  }
  const auto file = run_command(base + " -f " + quote(dir.file("inputs.txt")) + " --json");
  ASSERT_EQ(file.exit_code, 0) << file.stderr_text;
  EXPECT_EQ(Json::parse(file.stdout_text)["data"], Json::parse(prompts.stdout_text)["data"]);
  const auto jsonl =
      run_command("printf '%s\\n' '{\"text\": \"the cat\"}' '\"a hat\"' | " + base + " --jsonl");
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.stderr_text;
  std::istringstream lines(jsonl.stdout_text);
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(Json::parse(line), Json::parse(prompts.stdout_text)["data"][n]["embedding"]);
    ++n;
  }
  EXPECT_EQ(n, 2u);
  // Unnormalized vectors are not unit length; pooling none gives one vector per token.
  const auto raw =
      Json::parse(run_command(base + " -p 'the cat' --no-normalize --json").stdout_text);
  double norm = 0.0;
  for (const Json& x : raw["data"][0]["embedding"]) norm += x.get<double>() * x.get<double>();
  EXPECT_GT(std::abs(std::sqrt(norm) - 1.0), 1e-3);
  const auto none =
      Json::parse(run_command(base + " -p 'the cat' --pooling none --json").stdout_text);
  EXPECT_EQ(none["data"][0]["embedding"].size(), none["usage"]["prompt_tokens"].get<size_t>());
  const auto readable = run_command(base + " -p 'the cat'");
  EXPECT_EQ(readable.exit_code, 0);
  EXPECT_NE(readable.stdout_text.find("[0] ("), std::string::npos) << readable.stdout_text;
}

TEST(EmbedCli, BadInput) {
  testing::TempDir dir;
  const std::string model = dir.file("bert.gguf");
  synth("--arch bert --n-ctx 8", model);
  const std::string base = synapse_cli() + " embed -m " + quote(model);
  const auto missing =
      run_command(synapse_cli() + " embed -m " + quote(dir.file("nope.gguf")) + " -p x");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.stderr_text.find("not_found"), std::string::npos) << missing.stderr_text;
  const std::string long_text = "a b c d e f g h i j k l";
  const auto too_long = run_command(base + " -p " + quote(long_text));
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.stderr_text.find("context_length_exceeded"), std::string::npos)
      << too_long.stderr_text;
  EXPECT_NE(too_long.stderr_text.find("input[0]"), std::string::npos) << too_long.stderr_text;
  const auto truncated = run_command(base + " -p " + quote(long_text) + " --truncate --json");
  EXPECT_EQ(truncated.exit_code, 0) << truncated.stderr_text;
  EXPECT_EQ(Json::parse(truncated.stdout_text)["usage"]["prompt_tokens"], 8);
  EXPECT_EQ(run_command(base + " -p ''").exit_code, 1);
  EXPECT_EQ(run_command(base + " -p x --pooling max").exit_code, 2);
  EXPECT_EQ(run_command(base).exit_code, 2);
  const std::string llama = dir.file("llama.gguf");
  synth("--arch llama", llama);
  // A decoder embeds (last-token pooling by default), but CLS pooling needs an encoder.
  const auto decoder =
      run_command(synapse_cli() + " embed -m " + quote(llama) + " -p 'the cat' --json");
  EXPECT_EQ(decoder.exit_code, 0) << decoder.stderr_text;
  EXPECT_EQ(Json::parse(decoder.stdout_text)["data"][0]["embedding"].size(), 64u);
  const auto cls = run_command(synapse_cli() + " embed -m " + quote(llama) + " -p x --pooling cls");
  EXPECT_EQ(cls.exit_code, 1);
  EXPECT_NE(cls.stderr_text.find("unsupported"), std::string::npos) << cls.stderr_text;
  EXPECT_NE(cls.stderr_text.find("pooling"), std::string::npos) << cls.stderr_text;
}

TEST(RerankCli, OrderTopNAndErrors) {
  testing::TempDir dir;
  const std::string model = dir.file("reranker.gguf");
  synth("--arch bert --classifier-labels 1", model);
  const std::string base = synapse_cli() + " rerank -m " + quote(model) + " -q 'the cat'";
  const std::string docs = " -d 'a cat sat' -d 'the dog' -d 'hat and bat' -d 'on the mat'";
  const auto all = run_command(base + docs + " --json");
  ASSERT_EQ(all.exit_code, 0) << all.stderr_text;
  const Json results = Json::parse(all.stdout_text)["results"];
  ASSERT_EQ(results.size(), 4u);
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_GE(results[i - 1]["relevance_score"].get<double>(),
              results[i]["relevance_score"].get<double>());
  }
  const auto top = run_command(base + docs + " --top-n 2 --json");
  const Json top_results = Json::parse(top.stdout_text)["results"];
  ASSERT_EQ(top_results.size(), 2u);
  EXPECT_EQ(top_results[0], results[0]);
  EXPECT_EQ(top_results[1], results[1]);
  EXPECT_EQ(results[0]["document"]["text"].is_string(), true);
  const auto table = run_command(base + docs);
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.stdout_text.find("rank"), std::string::npos);

  // An embedding model has no classification head; a decoder is not an encoder.
  const std::string embedder = dir.file("bert.gguf");
  synth("--arch bert", embedder);
  const auto no_head = run_command(synapse_cli() + " rerank -m " + quote(embedder) + " -q a -d b");
  EXPECT_EQ(no_head.exit_code, 1);
  EXPECT_NE(no_head.stderr_text.find("not a reranker"), std::string::npos) << no_head.stderr_text;
  const std::string llama = dir.file("llama.gguf");
  synth("--arch llama", llama);
  const auto decoder = run_command(synapse_cli() + " rerank -m " + quote(llama) + " -q a -d b");
  EXPECT_EQ(decoder.exit_code, 1);
  EXPECT_NE(decoder.stderr_text.find("unsupported"), std::string::npos) << decoder.stderr_text;
  EXPECT_EQ(run_command(base).exit_code, 2);  // no documents
}

}  // namespace
}  // namespace synapse
