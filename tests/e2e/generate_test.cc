// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the model-running commands: generate, logits, inspect --ir, bench, and
// their errors on bad input (clear message, exit code != 0, no crash).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::synapse_cli;

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string synth_llama(const testing::TempDir& dir) {
  std::string path = dir.file("llama.gguf");
  const auto r = run_command(synapse_cli() + " synth --arch llama --n-layer 2 -o " + q(path));
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  return path;
}

// Replaces every occurrence of `from` by `to` (same length) in a file.
void patch_bytes(const std::string& path, const std::string& from, const std::string& to) {
  std::vector<uint8_t> bytes = testing::read_file_bytes(path);
  std::string s(bytes.begin(), bytes.end());
  size_t n = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1), ++n) {
    s.replace(at, from.size(), to);
  }
  ASSERT_GT(n, 0u);
  testing::write_file_bytes(path, std::vector<uint8_t>(s.begin(), s.end()));
}

TEST(Generate, Stories260KStreamsTheAuthorsText) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  SYN_REQUIRE_FIXTURE(golden, "golden/stories260K_llama2c_greedy_n200.txt");
  const auto r = run_command(synapse_cli() + " generate -m " + q(model) + " -n 200 -t 2 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::string text = r.stdout_text;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  EXPECT_EQ(text, testing::read_file_text(golden));
  EXPECT_NE(r.stderr_text.find("time to first token"), std::string::npos) << r.stderr_text;

  const auto j = run_command(synapse_cli() + " generate -m " + q(model) +
                             " -p 'Once upon a time' -n 16 --temp 0 --json");
  ASSERT_EQ(j.exit_code, 0) << j.stderr_text;
  const Json out = Json::parse(j.stdout_text);
  EXPECT_EQ(out["n_generated_tokens"], 16);
  EXPECT_EQ(out["tokens"].size(), 16u);
}

TEST(Generate, SeededSamplingRepeatsAndStopStringsEndTheText) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  SYN_REQUIRE_FIXTURE(golden, "golden/stories260K_llama2c_greedy_n200.txt");
  const std::string sample = synapse_cli() + " generate -m " + q(model) +
                             " -p 'Once upon a time' -n 40 --temp 1.0 --top-k 0 --top-p 1 "
                             "--min-p 0 --json --seed ";
  const auto a = run_command(sample + "7");
  const auto b = run_command(sample + "7");
  const auto c = run_command(sample + "8");
  ASSERT_EQ(a.exit_code, 0) << a.stderr_text;
  ASSERT_EQ(c.exit_code, 0) << c.stderr_text;
  const Json ja = Json::parse(a.stdout_text);
  EXPECT_EQ(ja["tokens"], Json::parse(b.stdout_text)["tokens"]);
  EXPECT_NE(ja["tokens"], Json::parse(c.stdout_text)["tokens"]);
  EXPECT_EQ(ja["seed"], 7);

  // Greedy with a stop string: the text up to (not including) its first occurrence.
  const std::string text = testing::read_file_text(golden);
  const size_t cut = text.find(" the", 20);
  ASSERT_NE(cut, std::string::npos);
  const auto s = run_command(synapse_cli() + " generate -m " + q(model) +
                             " -n 200 --temp 0 --json --stop ' the' --stop 'zzzz'");
  ASSERT_EQ(s.exit_code, 0) << s.stderr_text;
  const Json js = Json::parse(s.stdout_text);
  EXPECT_EQ(js["stop_reason"], "stop");
  EXPECT_EQ(js["text"].get<std::string>(), text.substr(0, text.find(" the")));
  // Bad sampling settings are named.
  const auto bad = run_command(synapse_cli() + " generate -m " + q(model) + " --top-p 1.5");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.stderr_text.find("top_p"), std::string::npos) << bad.stderr_text;
}

// Speculative decoding changes speed, not text: the author's greedy text again with prompt
// lookup, with the model drafting for itself (every draft right) and with a random-weight draft of
// the same vocabulary (most drafts wrong); --json says how many drafts were taken. A draft model
// with another vocabulary is refused, naming --draft.
TEST(Generate, SpeculativeDecodingKeepsTheAuthorsText) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  SYN_REQUIRE_FIXTURE(golden, "golden/stories260K_llama2c_greedy_n200.txt");
  testing::TempDir dir;
  const std::string random_draft = dir.file("random-draft.gguf");
  const auto synth = run_command(synapse_cli() + " synth --arch llama --n-layer 1 --vocab-from " +
                                 q(model) + " -o " + q(random_draft));
  ASSERT_EQ(synth.exit_code, 0) << synth.stderr_text;
  const std::string golden_text = testing::read_file_text(golden);
  for (const std::string& mode : {std::string("--lookup"), "--draft " + q(model),
                                  "--draft " + q(random_draft) + " --draft-max 3"}) {
    SCOPED_TRACE(mode);
    const auto r =
        run_command(synapse_cli() + " generate -m " + q(model) + " -n 200 -t 2 --temp 0 " + mode);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    std::string text = r.stdout_text;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    EXPECT_EQ(text, golden_text);
    EXPECT_NE(r.stderr_text.find("drafts"), std::string::npos) << r.stderr_text;
    const auto j = run_command(synapse_cli() + " generate -m " + q(model) +
                               " -n 200 -t 2 --temp 0 --json " + mode);
    ASSERT_EQ(j.exit_code, 0) << j.stderr_text;
    const Json timings = Json::parse(j.stdout_text)["timings"];
    EXPECT_GT(timings["draft_tokens"].get<int>(), 0);
    if (mode.find("random") == std::string::npos) {
      EXPECT_GT(timings["draft_tokens_accepted"].get<int>(), 0);
      EXPECT_LT(timings["decode_steps"].get<int>(), 199);
    }
    if (mode == "--draft " + q(model)) {
      EXPECT_EQ(timings["draft_acceptance_rate"], 1.0);
    }
  }
  // At the end of a short context: the same tokens and stop reason as plain decoding.
  const std::string short_ctx =
      synapse_cli() + " generate -m " + q(model) + " --ctx 48 -n 100 -t 2 --temp 0 --json";
  const auto plain_end = run_command(short_ctx);
  ASSERT_EQ(plain_end.exit_code, 0) << plain_end.stderr_text;
  const Json plain_end_out = Json::parse(plain_end.stdout_text);
  EXPECT_EQ(plain_end_out["stop_reason"], "context");
  for (const std::string& mode : {std::string("--lookup"), "--draft " + q(model)}) {
    std::string command = short_ctx;
    command.append(" ").append(mode);
    const auto r = run_command(command);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    const Json out = Json::parse(r.stdout_text);
    EXPECT_EQ(out["tokens"], plain_end_out["tokens"]) << mode;
    EXPECT_EQ(out["stop_reason"], "context") << mode;
  }

  // A schema's mask applies to every verified row: the same valid JSON with and without drafts.
  const std::string schema = dir.file("names.schema.json");
  const std::string schema_text =
      R"({"type": "array", "items": {"enum": ["Lily", "Tim", "Ben"]}, "minItems": 6,
          "maxItems": 6})";
  testing::write_file_bytes(schema, std::vector<uint8_t>(schema_text.begin(), schema_text.end()));
  const std::string constrained = synapse_cli() + " generate -m " + q(model) +
                                  " -p 'Lily and Tim' -n 64 -t 2 --temp 0 --json-schema " +
                                  q(schema) + " --json";
  const auto plain = run_command(constrained);
  const auto drafted = run_command(constrained + " --lookup");
  ASSERT_EQ(plain.exit_code, 0) << plain.stderr_text;
  ASSERT_EQ(drafted.exit_code, 0) << drafted.stderr_text;
  const Json plain_out = Json::parse(plain.stdout_text);
  const Json drafted_out = Json::parse(drafted.stdout_text);
  EXPECT_EQ(drafted_out["text"], plain_out["text"]);
  EXPECT_EQ(drafted_out["tokens"], plain_out["tokens"]);
  EXPECT_EQ(Json::parse(drafted_out["text"].get<std::string>()).size(), 6u);
  EXPECT_GT(drafted_out["timings"]["draft_tokens_accepted"].get<int>(), 0) << drafted_out.dump();

  const auto other = run_command(synapse_cli() + " generate -m " + q(model) + " -n 4 --draft " +
                                 q(synth_llama(dir)));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.stderr_text.find("vocabulary"), std::string::npos) << other.stderr_text;
  EXPECT_NE(other.stderr_text.find("--draft"), std::string::npos) << other.stderr_text;
  const auto too_many =
      run_command(synapse_cli() + " generate -m " + q(model) + " -n 4 --lookup --draft-max 15");
  EXPECT_NE(too_many.exit_code, 0);
}

TEST(Generate, BadInputFailsClearly) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  testing::TempDir dir;
  const auto too_long = run_command(synapse_cli() + " generate -m " + q(model) +
                                    " --ctx 8 -p 'Once upon a time there was a little girl'");
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_NE(too_long.stderr_text.find("limit_exceeded"), std::string::npos) << too_long.stderr_text;
  const auto negative = run_command(synapse_cli() + " generate -m " + q(model) + " -n -3");
  EXPECT_NE(negative.exit_code, 0);
  EXPECT_NE(negative.stderr_text.find("-n"), std::string::npos) << negative.stderr_text;
  // A prompt file that opens but cannot be read (a directory) is an error, not an empty prompt.
  const auto unreadable =
      run_command(synapse_cli() + " generate -m " + q(model) + " --file " + q(dir.path()));
  EXPECT_NE(unreadable.exit_code, 0);
  EXPECT_NE(unreadable.stderr_text.find("io_error"), std::string::npos) << unreadable.stderr_text;
  EXPECT_NE(unreadable.stderr_text.find("reading the prompt file failed"), std::string::npos)
      << unreadable.stderr_text;

  const std::string truncated = dir.file("truncated.gguf");
  std::vector<uint8_t> bytes = testing::read_file_bytes(model);
  bytes.resize(bytes.size() / 2);
  testing::write_file_bytes(truncated, bytes);
  const auto t = run_command(synapse_cli() + " generate -m " + q(truncated) + " -n 4");
  EXPECT_NE(t.exit_code, 0);
  EXPECT_NE(t.stderr_text.find("error:"), std::string::npos) << t.stderr_text;

  const std::string unknown = synth_llama(dir);
  patch_bytes(unknown, "llama", "xyzzy");
  const auto u = run_command(synapse_cli() + " generate -m " + q(unknown) + " -n 4");
  EXPECT_NE(u.exit_code, 0);
  EXPECT_NE(u.stderr_text.find("unknown_architecture"), std::string::npos) << u.stderr_text;

  const std::string missing = dir.file("missing.gguf");
  testing::write_file_bytes(missing, testing::read_file_bytes(synth_llama(dir)));
  patch_bytes(missing, "blk.1.ffn_up.weight", "blk.1.ffn_up.weighx");
  const auto m = run_command(synapse_cli() + " generate -m " + q(missing) + " -n 4");
  EXPECT_NE(m.exit_code, 0);
  EXPECT_NE(m.stderr_text.find("blk.1.ffn_up.weight"), std::string::npos) << m.stderr_text;
  const auto ir = run_command(synapse_cli() + " inspect --ir " + q(missing));
  EXPECT_NE(ir.exit_code, 0);
}

TEST(Logits, WritesEveryPositionAndPackagesMatchTheirSource) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  testing::TempDir dir;
  const std::string ids = " --ids 1,403,407,261,378 -t 1 -o ";
  const auto a = run_command(synapse_cli() + " logits -m " + q(model) + ids + q(dir.file("a")));
  ASSERT_EQ(a.exit_code, 0) << a.stderr_text;
  EXPECT_EQ(testing::read_file_bytes(dir.file("a")).size(), 5u * 512 * 4);

  const std::string package = dir.file("stories.synapse");
  const auto c = run_command(synapse_cli() + " convert " + q(model) + " -o " + q(package));
  ASSERT_EQ(c.exit_code, 0) << c.stderr_text;
  const auto b = run_command(synapse_cli() + " logits -m " + q(package) + ids + q(dir.file("b")));
  ASSERT_EQ(b.exit_code, 0) << b.stderr_text;
  EXPECT_EQ(testing::read_file_bytes(dir.file("a")), testing::read_file_bytes(dir.file("b")));
}

TEST(InspectIr, PrintsRegionsOpsAndKernels) {
  testing::TempDir dir;
  const std::string model = synth_llama(dir);
  const auto r = run_command(synapse_cli() + " inspect --ir " + q(model));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  for (const char* s : {"token_embedding", "blk.1.attention", "blk.1.feed_forward", "output_head",
                        "kernel:", "q|k|v"}) {
    EXPECT_NE(r.stdout_text.find(s), std::string::npos) << s << "\n" << r.stdout_text;
  }
}

TEST(Bench, ModelBenchJson) {
  testing::TempDir dir;
  const std::string model = synth_llama(dir);
  const auto r =
      run_command(synapse_cli() + " bench -m " + q(model) + " -p 16 -n 4 -r 1 --threads 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json out = Json::parse(r.stdout_text);
  EXPECT_GT(out["pp_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(out["tg_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(out["memory_read_gb_per_s"].get<double>(), 0.0);
  // The peak resident memory is the model's run, not the bandwidth probe's 512 MiB buffer (a
  // tiny model under the sanitizers peaks far below it).
  EXPECT_GT(out["peak_rss_bytes"].get<double>(), 0.0);
  EXPECT_LT(out["peak_rss_bytes"].get<double>(), 384.0 * 1024 * 1024);
  // The machine and kernels beside the figures.
  EXPECT_FALSE(out["cpu"].get<std::string>().empty());
  EXPECT_FALSE(out["isa"].get<std::string>().empty());
  EXPECT_FALSE(out["isa_forced"].get<bool>());
  // A forced level is said so (scalar: every machine runs it, and every machine has better).
  const auto forced = run_command("SYNAPSE_ISA=scalar " + synapse_cli() + " bench -m " + q(model) +
                                  " -p 16 -n 4 -r 1 --threads 1 --json");
  ASSERT_EQ(forced.exit_code, 0) << forced.stderr_text;
  const Json scalar = Json::parse(forced.stdout_text);
  EXPECT_EQ(scalar["isa"], "scalar");
  EXPECT_EQ(scalar["isa_forced"].get<bool>(), scalar["isa_best"] != "scalar");
}

}  // namespace
}  // namespace synapse
