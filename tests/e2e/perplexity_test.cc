// SPDX-License-Identifier: Apache-2.0
// `synapse perplexity` against llama-perplexity's published output (the fixtures' F32-KV runs:
// final PPL, its error and every running per-chunk value within 0.1% relative), KL divergence
// against saved reference logits, `synapse score`, and their errors on bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::synapse_cli;

std::string q(const std::string& s) { return "'" + s + "'"; }

// The bound: every value within 0.1% of llama-perplexity's. F32 models match to the
// printed digits (measured max 4.4e-7 relative), and the Q8_0 model's final PPL and error are held
// to 0.1% (measured 7e-5 to 1.5e-4 on every kernel level).
constexpr double kRelative = 1e-3;
// The Q8_0 model's running values of its first chunks (127-635 scored tokens) move by ~2e-3 with
// the last bits of the quantized products alone: measured against llama-perplexity, worst chunk,
// our kernel levels (each right in its own terms) give 9.3e-4 (AVX2), 1.05e-3 (AVX-512 VNNI,
// rows as stored), 1.22e-3 (VNNI, interleaved: the reference's arithmetic) and 2.06e-3 (the
// scalar reference); with ggml's x86 activation rounding instead of its reference rounding,
// 1.08-1.15e-3. So per chunk the Q8_0 bound is that spread, not 0.1%: at 0.1% the test said
// which rounding order a machine happened to run, not whether the protocol matches.
constexpr double kQuantizedChunkRelative = 2.5e-3;

void expect_matches_llama_perplexity(const std::string& model_file, const std::string& key,
                                     double final_tolerance, double chunk_tolerance = kRelative) {
  SYN_REQUIRE_FIXTURE(model, model_file);
  SYN_REQUIRE_FIXTURE(text, "reference/perplexity/ppl_en_fortunes_40k.txt");
  SYN_REQUIRE_FIXTURE(summary_file, "reference/perplexity/ppl_summary.json");
  const Json summary = Json::parse(testing::read_file_text(summary_file));
  const Json& ref = summary.at(key);
  const auto r = run_command(synapse_cli() + " perplexity -m " + q(model) + " -f " + q(text) +
                             " -c 128 -t 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json ours = Json::parse(r.stdout_text);
  const double ppl = std::stod(ref.at("final_ppl").get<std::string>());
  const double err = std::stod(ref.at("final_ppl_err").get<std::string>());
  EXPECT_NEAR(ours["ppl"].get<double>(), ppl, final_tolerance * ppl) << key;
  EXPECT_NEAR(ours["ppl_err"].get<double>(), err, final_tolerance * err) << key;
  const auto& chunks = ref.at("per_chunk_running_ppl_as_printed");
  ASSERT_EQ(ours["chunks"].size(), chunks.size()) << key;
  ASSERT_EQ(ours["n_chunks"].get<size_t>(), ref.at("n_chunks").get<size_t>());
  double worst = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const double expected = std::stod(chunks[i].get<std::string>());
    const double got = ours["chunks"][i].get<double>();
    worst = std::max(worst, std::abs(got - expected) / expected);
    EXPECT_NEAR(got, expected, chunk_tolerance * expected) << key << " chunk " << i + 1;
  }
  std::printf("%s: PPL %.4f +/- %.5f (llama-perplexity %.4f +/- %.5f), worst chunk %.2e\n",
              key.c_str(), ours["ppl"].get<double>(), ours["ppl_err"].get<double>(), ppl, err,
              worst);
}

// F32 models: the final value to the printed digits (4 decimals of ~100-1000, 1e-6 relative).
TEST(Perplexity, Stories260KMatchesLlamaPerplexity) {
  expect_matches_llama_perplexity("models/stories260K.gguf", "stories260K.t1.kvf32_faoff", 2e-6);
}
TEST(Perplexity, TinyQwen2F32MatchesLlamaPerplexity) {
  expect_matches_llama_perplexity("reference/logits/tiny-qwen2-f32.gguf",
                                  "tiny-qwen2-f32.t1.kvf32_faoff", 2e-6);
}
TEST(Perplexity, TinyQwen2Q8MatchesLlamaPerplexity) {
  expect_matches_llama_perplexity("reference/logits/tiny-qwen2-q8_0.gguf",
                                  "tiny-qwen2-q8_0.t1.kvf32_faoff", kRelative,
                                  kQuantizedChunkRelative);
}

TEST(Perplexity, KlDivergenceAgainstSavedLogits) {
  SYN_REQUIRE_FIXTURE(f32, "reference/logits/tiny-llama-f32.gguf");
  SYN_REQUIRE_FIXTURE(q4k, "reference/logits/tiny-llama-q4_k_m.gguf");
  SYN_REQUIRE_FIXTURE(text, "reference/perplexity/ppl_en_fortunes_40k.txt");
  testing::TempDir dir;
  const std::string saved = dir.file("f32.logits");
  const auto base = run_command(synapse_cli() + " perplexity -m " + q(f32) + " -f " + q(text) +
                                " -c 128 --chunks 12 --json --save-logits " + q(saved));
  ASSERT_EQ(base.exit_code, 0) << base.stderr_text;
  const double base_ppl = Json::parse(base.stdout_text)["ppl"].get<double>();

  // The model against its own logits: bit-identical, so exactly zero.
  const auto self = run_command(synapse_cli() + " perplexity -m " + q(f32) + " --kl-divergence " +
                                q(saved) + " -t 2 --json");
  ASSERT_EQ(self.exit_code, 0) << self.stderr_text;
  const Json s = Json::parse(self.stdout_text);
  EXPECT_EQ(s["kld_mean"].get<double>(), 0.0);
  EXPECT_EQ(s["kld_max"].get<double>(), 0.0);
  EXPECT_EQ(s["same_top"].get<double>(), 1.0);
  EXPECT_NEAR(s["ppl_base"].get<double>(), base_ppl, 1e-6 * base_ppl);

  // Q4_K_M against its F32 parent: positive divergence, not every top token kept, and the same
  // figures with 1 and 2 threads (logits are bit-identical across thread counts).
  Json by_threads[2];
  for (int t = 1; t <= 2; ++t) {
    const auto r = run_command(synapse_cli() + " perplexity -m " + q(q4k) + " --kl-divergence " +
                               q(saved) + " -t " + std::to_string(t) + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    by_threads[t - 1] = Json::parse(r.stdout_text);
  }
  const Json& k = by_threads[0];
  EXPECT_GT(k["kld_mean"].get<double>(), 0.0);
  EXPECT_GT(k["kld_err"].get<double>(), 0.0);
  EXPECT_LT(k["same_top"].get<double>(), 1.0);
  EXPECT_EQ(k["kld_mean"], by_threads[1]["kld_mean"]);
  EXPECT_EQ(k["same_top"], by_threads[1]["same_top"]);
  EXPECT_EQ(k["ppl"], by_threads[1]["ppl"]);
  std::printf(
      "tiny-llama Q4_K_M vs F32, 12 chunks: KLD %.6f +/- %.6f, same top %.2f%%, "
      "PPL %.3f vs %.3f\n",
      k["kld_mean"].get<double>(), k["kld_err"].get<double>(), 100 * k["same_top"].get<double>(),
      k["ppl"].get<double>(), k["ppl_base"].get<double>());

  // A reference for another vocabulary is refused.
  SYN_REQUIRE_FIXTURE(stories, "models/stories260K.gguf");
  const auto other =
      run_command(synapse_cli() + " perplexity -m " + q(stories) + " --kl-divergence " + q(saved));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.stderr_text.find("size_mismatch"), std::string::npos) << other.stderr_text;
}

TEST(Perplexity, BadInputIsAClearError) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  testing::TempDir dir;
  const std::string empty = dir.file("empty.txt");
  const std::string short_text = dir.file("short.txt");
  testing::write_file_bytes(empty, {});
  const std::string words = "Once upon a time there was a cat. ";
  testing::write_file_bytes(short_text, std::vector<uint8_t>(words.begin(), words.end()));
  const std::string cmd = synapse_cli() + " perplexity -m " + q(model);

  const auto e = run_command(cmd + " -f " + q(empty) + " -c 64");
  EXPECT_NE(e.exit_code, 0);
  EXPECT_NE(e.stderr_text.find("empty"), std::string::npos) << e.stderr_text;
  const auto s = run_command(cmd + " -f " + q(short_text) + " -c 64");
  EXPECT_NE(s.exit_code, 0);
  EXPECT_NE(s.stderr_text.find("two chunks"), std::string::npos) << s.stderr_text;
  const auto big = run_command(cmd + " -f " + q(short_text) + " -c 100000");
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.stderr_text.find("context"), std::string::npos) << big.stderr_text;
  const auto none = run_command(cmd);
  EXPECT_NE(none.exit_code, 0);
  const auto missing = run_command(cmd + " -f " + q(dir.file("nope.txt")));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.stderr_text.find("nope.txt"), std::string::npos) << missing.stderr_text;
  const auto bad_ref = run_command(cmd + " --kl-divergence " + q(short_text));
  EXPECT_NE(bad_ref.exit_code, 0);
}

TEST(Score, TeacherForcedLogProbabilities) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  const auto r = run_command(synapse_cli() + " score -m " + q(model) +
                             " -p 'Once upon a time, there was a little girl.' --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json out = Json::parse(r.stdout_text);
  const auto& tokens = out["tokens"];
  ASSERT_EQ(tokens.size() + 1, out["n_tokens"].get<size_t>());  // BOS is not scored
  double sum = 0;
  for (const auto& t : tokens) {
    const double lp = t["logprob"].get<double>();
    EXPECT_LE(lp, 0.0);
    sum += lp;
  }
  EXPECT_NEAR(out["sum_logprob"].get<double>(), sum, 1e-9 * std::abs(sum));
  EXPECT_NEAR(out["perplexity"].get<double>(), std::exp(-sum / static_cast<double>(tokens.size())),
              1e-9);
  // A trained model predicts this story opening well: most tokens have a large probability.
  EXPECT_GT(out["sum_logprob"].get<double>() / static_cast<double>(tokens.size()), -3.0);

  const auto empty = run_command(synapse_cli() + " score -m " + q(model) + " -p ''");
  EXPECT_NE(empty.exit_code, 0);
}

}  // namespace
}  // namespace synapse
