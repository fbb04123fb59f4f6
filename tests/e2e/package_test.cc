// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of packages and the model store through the `synapse` executable: convert,
// verify (naming a damaged tensor), inspect, models import/list/show/rm/gc, tokenize from a
// stored model, `rm` against a running process that holds the model, and a crash mid-import.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/hash.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::synapse_cli;

std::string quote(const std::string& s) { return "'" + s + "'"; }

class PackageCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto synth = run_command(synapse_cli() +
                                   " synth --arch qwen2 --n-embd 128 --n-ff 384 --n-layer 2 "
                                   "--n-head 4 --n-head-kv 2 --type f16 -o " +
                                   quote(model_));
    ASSERT_EQ(synth.exit_code, 0) << synth.stderr_text;
  }
  // A command with this test's store.
  std::string cli(const std::string& args) const {
    return "SYNAPSE_STORE=" + quote(store_) + " " + synapse_cli() + " " + args;
  }
  // The same, for a shell that replaces itself with synapse (so its pid is synapse's).
  std::string cli_exec(const std::string& args) const {
    return "SYNAPSE_STORE=" + quote(store_) + " exec " + synapse_cli() + " " + args;
  }
  Json json_of(const std::string& args, int expected_exit = 0) const {
    const auto r = run_command(cli(args));
    EXPECT_EQ(r.exit_code, expected_exit) << args << "\n" << r.stdout_text << r.stderr_text;
    return Json::parse(r.stdout_text, nullptr, false);
  }

  testing::TempDir dir_;
  std::string model_ = dir_.file("tiny-qwen2.gguf");
  std::string package_ = dir_.file("tiny-qwen2.synapse");
  std::string store_ = dir_.file("store");
};

TEST_F(PackageCli, ConvertVerifyInspect) {
  const Json converted = json_of("convert " + quote(model_) + " -o " + quote(package_) + " --json");
  EXPECT_EQ(converted["source_sha256"], to_hex(*sha256_file(model_)));
  EXPECT_EQ(converted["package_bytes"], std::filesystem::file_size(package_));
  EXPECT_EQ(converted["tensor_count"], 2 + 2 * 12);  // embedding, final norm, 12 per block

  const Json verified = json_of("verify --json " + quote(package_));
  EXPECT_TRUE(verified["ok"].get<bool>());
  EXPECT_EQ(verified["tensors_checked"], converted["tensor_count"]);
  EXPECT_GT(verified["mb_per_s"].get<double>(), 0.0);
  const auto text = run_command(cli("verify " + quote(package_)));
  EXPECT_NE(text.stdout_text.find("OK  "), std::string::npos) << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("MB/s"), std::string::npos);

  const Json report = json_of("inspect --json " + quote(package_));
  EXPECT_EQ(report["format"], "synapse");
  EXPECT_TRUE(report["valid"].get<bool>());
  EXPECT_TRUE(report["model_check"]["ok"].get<bool>()) << report["model_check"].dump();
  EXPECT_EQ(report["architecture"], "qwen2");
  EXPECT_EQ(report["package"]["source"]["sha256"], converted["source_sha256"]);
  EXPECT_EQ(report["package"]["graph_sha256"], converted["graph_sha256"]);
  uint64_t sum = 0;
  for (const auto& [part, bytes] : report["layout"].items()) {
    if (part != "file_bytes") sum += bytes.get<uint64_t>();
  }
  EXPECT_EQ(sum, report["layout"]["file_bytes"].get<uint64_t>());
  for (const Json& t : report["tensors"]) {
    EXPECT_EQ(t["offset"].get<uint64_t>() % 4096, 0u);
    EXPECT_EQ(t["xxh3_128"].get<std::string>().size(), 32u);
  }
  // The package reads like its source: same metadata, same tensors.
  const Json source = json_of("inspect --json " + quote(model_));
  EXPECT_EQ(report["metadata"], source["metadata"]);
  EXPECT_EQ(report["hparams"], source["hparams"]);
  EXPECT_EQ(report["tokenizer"], source["tokenizer"]);
  ASSERT_EQ(report["tensors"].size(), source["tensors"].size());
  for (size_t i = 0; i < source["tensors"].size(); ++i) {
    for (const char* key : {"name", "type", "shape", "bytes"}) {
      EXPECT_EQ(report["tensors"][i][key], source["tensors"][i][key]);
    }
  }
  const auto inspect_text = run_command(cli("inspect " + quote(package_)));
  EXPECT_NE(inspect_text.stdout_text.find("valid package; qwen2 model"), std::string::npos)
      << inspect_text.stdout_text;
}

TEST_F(PackageCli, VerifyNamesTheDamagedTensorAndOpenNamesTheDamagedSection) {
  ASSERT_EQ(run_command(cli("convert " + quote(model_) + " -o " + quote(package_))).exit_code, 0);
  const Json report = json_of("inspect --json " + quote(package_));
  const Json& tensor = report["tensors"][5];
  std::vector<uint8_t> bytes = testing::read_file_bytes(package_);
  bytes[tensor["offset"].get<uint64_t>() + tensor["bytes"].get<uint64_t>() / 2] ^= 0x10;
  testing::write_file_bytes(package_, bytes);
  const Json damaged = json_of("verify --json " + quote(package_), 1);
  EXPECT_FALSE(damaged["ok"].get<bool>());
  EXPECT_EQ(damaged["error"]["code"], "checksum_mismatch");
  EXPECT_EQ(damaged["error"]["tensor"], tensor["name"]);
  const auto text = run_command(cli("verify " + quote(package_)));
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.stdout_text.find("DAMAGED"), std::string::npos);
  EXPECT_NE(text.stdout_text.find(tensor["name"].get<std::string>()), std::string::npos);

  // Damage in the manifest: refused at open, by verify and inspect alike.
  bytes[200] ^= 0x01;
  testing::write_file_bytes(package_, bytes);
  const Json manifest = json_of("verify --json " + quote(package_), 1);
  EXPECT_EQ(manifest["error"]["code"], "checksum_mismatch");
  EXPECT_EQ(manifest["error"]["field"], "manifest");
  const Json inspected = json_of("inspect --json " + quote(package_), 1);
  EXPECT_EQ(inspected["format"], "synapse");
  EXPECT_EQ(inspected["error"]["field"], "manifest");
}

TEST_F(PackageCli, ConvertAndVerifyErrors) {
  testing::write_file_bytes(dir_.file("junk.gguf"), {'n', 'o', 'p', 'e', 0, 0, 0, 0});
  const auto junk = run_command(cli("convert " + quote(dir_.file("junk.gguf")) + " -o x.synapse"));
  EXPECT_EQ(junk.exit_code, 1);
  EXPECT_NE(junk.stderr_text.find("bad_magic"), std::string::npos) << junk.stderr_text;
  EXPECT_EQ(run_command(cli("convert " + quote(model_))).exit_code, 2) << "-o is required";
  ASSERT_EQ(run_command(cli("convert " + quote(model_) + " -o " + quote(package_))).exit_code, 0);
  const auto again =
      run_command(cli("convert " + quote(package_) + " -o " + quote(dir_.file("y"))));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.stderr_text.find("already a synapse package"), std::string::npos);
  const auto gguf = run_command(cli("verify " + quote(model_)));
  EXPECT_EQ(gguf.exit_code, 1);
  EXPECT_NE(gguf.stderr_text.find("not a package"), std::string::npos);
  EXPECT_EQ(run_command(cli("verify nothing-of-that-name")).exit_code, 1);
}

TEST_F(PackageCli, ModelsLifecycle) {
  const Json first = json_of("models import --json " + quote(model_));
  EXPECT_EQ(first["name"], "tiny-qwen2");
  EXPECT_FALSE(first["already_stored"].get<bool>());
  const std::string digest = first["model"]["digest"];
  const Json second = json_of("models import --json --name copy " + quote(model_));
  EXPECT_TRUE(second["already_stored"].get<bool>());
  EXPECT_EQ(second["model"]["digest"], digest);
  const Json listed = json_of("models list --json");
  ASSERT_EQ(listed["models"].size(), 1u);
  EXPECT_EQ(listed["models"][0]["aliases"], Json({"copy", "tiny-qwen2"}));
  size_t blobs = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(store_ + "/blobs")) {
    ++blobs;
  }
  EXPECT_EQ(blobs, 1u);

  const Json shown = json_of("models show --json " + digest.substr(0, 10));
  EXPECT_EQ(shown["digest"], digest);
  EXPECT_EQ(shown["architecture"], "qwen2");
  EXPECT_EQ(shown["tensors"], 26);
  const auto show_text = run_command(cli("models show copy"));
  EXPECT_NE(show_text.stdout_text.find("copy, tiny-qwen2"), std::string::npos);

  // Commands take a store name (and a package path) wherever they take a model.
  const auto by_name = run_command(cli("tokenize -m copy -p 'hello world' --ids"));
  ASSERT_EQ(by_name.exit_code, 0) << by_name.stderr_text;
  const auto by_path = run_command(cli("tokenize -m " + quote(model_) + " -p 'hello world' --ids"));
  EXPECT_EQ(by_name.stdout_text, by_path.stdout_text);
  EXPECT_EQ(run_command(cli("verify copy")).exit_code, 0);
  EXPECT_EQ(json_of("inspect --json tiny-qwen2")["format"], "synapse");
  const auto unknown = run_command(cli("tokenize -m no-such-model -p x"));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.stderr_text.find("no model 'no-such-model'"), std::string::npos);

  const Json removed_name = json_of("models rm --json copy");
  EXPECT_TRUE(removed_name["blob_deleted"].is_null());
  const Json removed = json_of("models rm --json tiny-qwen2");
  EXPECT_EQ(removed["blob_deleted"], digest);
  EXPECT_TRUE(json_of("models list --json")["models"].empty());
  EXPECT_EQ(run_command(cli("models rm tiny-qwen2")).exit_code, 1);
  const Json gc = json_of("models gc --json --grace 0");
  EXPECT_TRUE(gc["deleted"].empty());
}

// A child process with pipes for its stdin and stdout.
struct Child {
  pid_t pid = -1;
  int in = -1;   // write end of its stdin
  int out = -1;  // read end of its stdout
};

Child spawn_shell(const std::string& command) {
  // Close-on-exec, so that a later child does not inherit (and keep open) this one's stdin.
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[1]);
    ::close(out[0]);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  return {pid, in[1], out[0]};
}

std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

// `synapse tokenize --jsonl` keeps running while its input is open, holding a lease on the
// stored model it uses; `models rm` refuses while it runs, and with --wait finishes after it ends.
TEST_F(PackageCli, RmRefusesOrWaitsWhileARunningCommandHoldsTheModel) {
  ASSERT_EQ(run_command(cli("models import --name held " + quote(model_))).exit_code, 0);
  Child tokenize = spawn_shell(cli_exec("tokenize -m held --jsonl"));
  ASSERT_GT(tokenize.pid, 0);
  const std::string request = "{\"text\": \"hello\"}\n";
  ASSERT_EQ(::write(tokenize.in, request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  const std::string answer = read_line(tokenize.out);  // it has the model (and its lease) now
  ASSERT_FALSE(answer.empty());
  EXPECT_TRUE(Json::parse(answer).is_array());

  const auto refused = run_command(cli("models rm held"));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.stderr_text.find("in use by process " + std::to_string(tokenize.pid)),
            std::string::npos)
      << refused.stderr_text;
  const Json listed = json_of("models list --json");
  ASSERT_EQ(listed["models"].size(), 1u) << "a refused rm changed the store";
  EXPECT_EQ(listed["models"][0]["lease_holders"], Json({tokenize.pid}));
  EXPECT_EQ(json_of("models gc --json --grace 0")["deleted"].size(), 0u);

  // rm --wait blocks until the command ends.
  Child rm = spawn_shell(cli_exec("models rm --wait 60 held"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int status = 0;
  EXPECT_EQ(::waitpid(rm.pid, &status, WNOHANG), 0) << "rm --wait did not wait";
  ::close(tokenize.in);  // end of input: tokenize exits and its lease goes
  ::waitpid(tokenize.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(::waitpid(rm.pid, &status, 0), rm.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(tokenize.out);
  ::close(rm.in);
  ::close(rm.out);
  EXPECT_TRUE(json_of("models list --json")["models"].empty());
}

// The real binary is killed (abort) in the middle of writing the package.
TEST_F(PackageCli, CrashMidImportLeavesTheStoreConsistent) {
  const auto crashed =
      run_command(cli("models import --crash-after-bytes 200000 " + quote(model_)));
  EXPECT_NE(crashed.exit_code, 0);
  EXPECT_NE(crashed.stderr_text.find("crashing on purpose"), std::string::npos)
      << crashed.stderr_text;
  EXPECT_TRUE(json_of("models list --json")["models"].empty());
  EXPECT_EQ(run_command(cli("tokenize -m tiny-qwen2 -p x")).exit_code, 1);
  const Json gc = json_of("models gc --json --grace 0");
  EXPECT_EQ(gc["stray_files_removed"].size(), 1u) << gc.dump();
  const Json again = json_of("models import --json " + quote(model_));
  EXPECT_FALSE(again["already_stored"].get<bool>());
  EXPECT_EQ(run_command(cli("verify tiny-qwen2")).exit_code, 0);
}

}  // namespace
}  // namespace synapse
