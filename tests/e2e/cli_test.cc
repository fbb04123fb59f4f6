// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the `synapse` executable: commands, exit codes, JSON output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::synapse_cli;

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

TEST(Cli, VersionNamesBuildAndCpu) {
  const auto r = run_command(synapse_cli() + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.stdout_text.find("synapse 0.1.0 (commit "), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("cpu features:"), std::string::npos);
}

TEST(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run_command(synapse_cli()).exit_code, 2);
  EXPECT_EQ(run_command(synapse_cli() + " no-such-command").exit_code, 2);
  EXPECT_EQ(run_command(synapse_cli() + " inspect").exit_code, 2);
  EXPECT_EQ(run_command(synapse_cli() + " synth -o x.gguf --type q9_9").exit_code, 2);
  const auto help = run_command(synapse_cli() + " synth --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.stdout_text.find("--vocab-from"), std::string::npos);
}

TEST(Cli, SynthThenInspectJson) {
  testing::TempDir dir;
  const std::string a = dir.file("a.gguf"), b = dir.file("b.gguf");
  const std::string synth = synapse_cli() +
                            " synth --arch qwen3 --n-embd 96 --n-head 4 --n-head-kv 2 "
                            "--head-dim 32 --n-layer 3 --type f16 --seed 7 -o ";
  ASSERT_EQ(run_command(synth + shell_quote(a)).exit_code, 0);
  ASSERT_EQ(run_command(synth + shell_quote(b)).exit_code, 0);
  EXPECT_EQ(testing::read_file_bytes(a), testing::read_file_bytes(b))
      << "synth is not deterministic";

  const auto r = run_command(synapse_cli() + " inspect --json " + shell_quote(a));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json report = Json::parse(r.stdout_text);
  EXPECT_TRUE(report["valid"].get<bool>());
  EXPECT_EQ(report["architecture"], "qwen3");
  EXPECT_TRUE(report["model_check"]["ok"].get<bool>()) << report["model_check"].dump();
  EXPECT_TRUE(report["model_check"]["tied_output"].get<bool>());
  EXPECT_EQ(report["hparams"]["n_layer"], 3);
  EXPECT_EQ(report["hparams"]["head_dim_k"], 32);
  EXPECT_EQ(report["hparams"]["rope"]["layout"], "neox");
  EXPECT_EQ(report["tokenizer"]["model"], "gpt2");
  EXPECT_EQ(report["tokenizer"]["eos"]["text"], "<|im_end|>");
  EXPECT_EQ(report["tensors"].size(), 1u + 3 * 11 + 1);
  const Json& layout = report["layout"];
  uint64_t sum = 0;
  for (const char* part :
       {"header_bytes", "metadata_bytes", "tensor_info_bytes", "alignment_padding_bytes",
        "tensor_data_bytes", "tensor_padding_bytes", "trailing_bytes"}) {
    sum += layout[part].get<uint64_t>();
  }
  EXPECT_EQ(sum, layout["file_bytes"].get<uint64_t>());
  EXPECT_EQ(layout["file_bytes"].get<uint64_t>(), testing::read_file_bytes(a).size());
  uint64_t parameters = 0;
  for (const Json& t : report["tensors"]) {
    uint64_t n = 1;
    for (const Json& d : t["shape"]) n *= d.get<uint64_t>();
    parameters += n;
  }
  EXPECT_EQ(report["parameters"].get<uint64_t>(), parameters);

  const auto text = run_command(synapse_cli() + " inspect " + shell_quote(a));
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.stdout_text.find("valid GGUF; qwen3 model"), std::string::npos)
      << text.stdout_text;
}

TEST(Cli, InspectRefusesAnInvalidFileWithItsCode) {
  testing::TempDir dir;
  testing::write_file_bytes(dir.file("bad.gguf"), {'G', 'G', 'M', 'L', 3, 0, 0, 0});
  const auto r =
      run_command(synapse_cli() + " inspect --json " + shell_quote(dir.file("bad.gguf")));
  EXPECT_EQ(r.exit_code, 1);
  const Json report = Json::parse(r.stdout_text);
  EXPECT_FALSE(report["valid"].get<bool>());
  EXPECT_EQ(report["error"]["code"], "bad_magic");
  EXPECT_EQ(report["error"]["byte_offset"], 0);
  const auto text = run_command(synapse_cli() + " inspect " + shell_quote(dir.file("bad.gguf")));
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.stdout_text.find("INVALID: bad_magic"), std::string::npos) << text.stdout_text;
  const auto missing =
      run_command(synapse_cli() + " inspect --json " + shell_quote(dir.file("missing.gguf")));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(Json::parse(missing.stdout_text)["error"]["code"], "not_found");
}

TEST(Cli, InspectRealModel) {
  SYN_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  const auto r = run_command(synapse_cli() + " inspect " + shell_quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("valid GGUF; llama model, 47/47 required tensors, 1 optional"),
            std::string::npos)
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("parameters    292800"), std::string::npos);
}

TEST(Cli, SynthErrorsAreClear) {
  testing::TempDir dir;
  const auto r = run_command(synapse_cli() + " synth --arch qwen2 --type iq2_xxs -o " +
                             shell_quote(dir.file("x.gguf")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("unsupported"), std::string::npos) << r.stderr_text;
  // K-quants need rows of whole 256-element super-blocks; the error names the tensor.
  const auto rows = run_command(synapse_cli() + " synth --arch qwen2 --type q4_k -o " +
                                shell_quote(dir.file("x.gguf")));
  EXPECT_EQ(rows.exit_code, 1);
  EXPECT_NE(rows.stderr_text.find("invalid_argument"), std::string::npos) << rows.stderr_text;
  EXPECT_NE(rows.stderr_text.find("block size 256"), std::string::npos) << rows.stderr_text;
  const auto ok =
      run_command(synapse_cli() + " synth --arch qwen2 --n-embd 256 --n-ff 512 --type q4_k -o " +
                  shell_quote(dir.file("q4k.gguf")));
  EXPECT_EQ(ok.exit_code, 0) << ok.stderr_text;
  const auto both =
      run_command(synapse_cli() + " synth --tied --untied -o " + shell_quote(dir.file("x.gguf")));
  EXPECT_EQ(both.exit_code, 2);
}

TEST(Cli, DoctorChecksStateDirectoryAndSqlite) {
  testing::TempDir dir;
  const auto r = run_command("SYNAPSE_HOME=" + shell_quote(dir.file("state")) + " " +
                             synapse_cli() + " doctor --json");
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  const Json report = Json::parse(r.stdout_text);
  EXPECT_TRUE(report["ok"].get<bool>());
  std::set<std::string> names;
  for (const Json& c : report["checks"]) names.insert(c["name"].get<std::string>());
  EXPECT_EQ(names,
            (std::set<std::string>{"cpu", "kernels", "memory", "state directory", "sqlite"}));
  EXPECT_TRUE(report["kernels"]["disabled"].empty()) << report["kernels"].dump();
  EXPECT_TRUE(report["kernels"]["selected"].is_string());
  const auto scalar =
      run_command("SYNAPSE_ISA=scalar SYNAPSE_HOME=" + shell_quote(dir.file("state")) + " " +
                  synapse_cli() + " doctor --json");
  EXPECT_EQ(Json::parse(scalar.stdout_text)["kernels"]["selected"], "scalar");
  // A state directory that cannot be created fails the doctor, with exit code 1.
  testing::write_file_bytes(dir.file("file"), {1});
  const auto bad = run_command("SYNAPSE_HOME=" + shell_quote(dir.file("file") + "/state") + " " +
                               synapse_cli() + " doctor --json");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_FALSE(Json::parse(bad.stdout_text)["ok"].get<bool>());
}

TEST(Cli, BenchMemoryReportsBandwidth) {
  const auto r =
      run_command(synapse_cli() + " bench memory --size-mib 16 --passes 1 --threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json report = Json::parse(r.stdout_text);
  ASSERT_EQ(report["read_bandwidth"].size(), 2u);
  EXPECT_EQ(report["read_bandwidth"][1]["threads"], 2);
  EXPECT_GT(report["read_bandwidth"][0]["best_gb_per_s"].get<double>(), 0.0);
  EXPECT_EQ(run_command(synapse_cli() + " bench").exit_code, 2);  // needs a subcommand
}

}  // namespace
}  // namespace synapse
