// SPDX-License-Identifier: Apache-2.0
#include "tests/support/test_support.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace synapse::testing {

std::string fixtures_dir() {
  // Tests read the environment, never write it: getenv cannot race a setenv here.
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  if (const char* dir = std::getenv("SYNAPSE_FIXTURES"); dir != nullptr && *dir != '\0') return dir;
  return SYNAPSE_SOURCE_DIR "/../shared/fixtures";
}

bool running_in_ci() {
  const char* ci = std::getenv("CI");  // NOLINT(concurrency-mt-unsafe): read-only environment
  return ci != nullptr && std::strcmp(ci, "true") == 0;
}

std::optional<std::string> find_fixture(const std::string& relative_path) {
  const std::string path = fixtures_dir() + "/" + relative_path;
  if (!std::filesystem::exists(path)) return std::nullopt;
  return std::filesystem::canonical(path).string();
}

std::string synapse_cli() { return SYNAPSE_CLI_PATH; }

TempDir::TempDir() {
  std::string pattern = std::filesystem::temp_directory_path().string() + "/synapse-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): on the test's thread, read at once
    ADD_FAILURE() << "mkdtemp failed: " << std::strerror(errno);
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

CommandResult run_command(const std::string& command) {
  TempDir dir;
  const std::string out_path = dir.file("stdout");
  const std::string err_path = dir.file("stderr");
  const std::string full = command + " >" + out_path + " 2>" + err_path;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): a test runs its commands from its own thread
  const int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.stdout_text = read_file_text(out_path);
  result.stderr_text = read_file_text(err_path);
  return result;
}

long resident_pages(const uint8_t* begin, const uint8_t* end) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  long present = 0;
  for (uintptr_t p = reinterpret_cast<uintptr_t>(begin) / page;
       p < (reinterpret_cast<uintptr_t>(end) + page - 1) / page; ++p) {
    uint64_t entry = 0;
    if (::pread(fd, &entry, sizeof(entry), static_cast<off_t>(p * sizeof(entry))) !=
        sizeof(entry)) {
      ::close(fd);
      return -1;
    }
    present += static_cast<long>(entry >> 63);
  }
  ::close(fd);
  return present;
}

void run_unprivileged(const std::string& directory, const std::function<void()>& checks) {
  if (geteuid() != 0) {
    checks();
    return;
  }
  ASSERT_EQ(chmod(directory.c_str(), 0777), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    constexpr uid_t kNobody = 65534;
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    checks();
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the checks failed in the unprivileged child (see above)";
}

}  // namespace synapse::testing
