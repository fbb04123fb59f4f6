// SPDX-License-Identifier: Apache-2.0
// Helpers shared by tests: where the external fixtures are, temporary directories, file I/O.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace synapse::testing {

// The fixtures folder: $SYNAPSE_FIXTURES, else ../shared/fixtures beside the project root.
std::string fixtures_dir();
// Absolute path of a fixture, or nullopt when it is missing. A missing fixture is a failure
// under CI=true and a skip (with the reason) otherwise: use SYN_REQUIRE_FIXTURE.
std::optional<std::string> find_fixture(const std::string& relative_path);
bool running_in_ci();

// The `synapse` executable built alongside the tests.
std::string synapse_cli();

// A fresh directory removed (with its contents) when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::vector<uint8_t> read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
std::string read_file_text(const std::string& path);

struct CommandResult {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};
// Runs a shell command, capturing both streams.
CommandResult run_command(const std::string& command);

// Pages of [begin, end) present in this process's page tables, from /proc/self/pagemap (bit 63;
// unprivileged readers get it, only the frame numbers are hidden); -1 when it cannot be read.
long resident_pages(const uint8_t* begin, const uint8_t* end);

// Runs `checks` as an unprivileged user sees the files: directly when the test is not root, else
// in a child process as user `nobody` (root ignores permission bits, and CI runs as root), with
// `directory` opened to that user. A failure inside the child fails the calling test.
void run_unprivileged(const std::string& directory, const std::function<void()>& checks);

}  // namespace synapse::testing

// Binds `var` to the fixture's path, or skips (fails under CI=true) when it is missing.
#define SYN_REQUIRE_FIXTURE(var, relative)                                                       \
  std::string var;                                                                               \
  do {                                                                                           \
    const auto syn_found_ = ::synapse::testing::find_fixture(relative);                          \
    if (!syn_found_) {                                                                           \
      if (::synapse::testing::running_in_ci()) {                                                 \
        FAIL() << "fixture missing under CI=true: " << ::synapse::testing::fixtures_dir() << "/" \
               << (relative);                                                                    \
      }                                                                                          \
      GTEST_SKIP() << "fixture not found: " << ::synapse::testing::fixtures_dir() << "/"         \
                   << (relative) << " (set SYNAPSE_FIXTURES)";                                   \
    }                                                                                            \
    (var) = *syn_found_;                                                                         \
  } while (false)
