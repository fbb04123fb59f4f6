// SPDX-License-Identifier: Apache-2.0
// The web UI end to end: two `synapse serve` processes on a small synthesized model (one open
// with durable jobs, one with an API key, one decode slot and a queue of one, so that a third
// request gets 429), driven in headless Chromium by tests/e2e/web_browser.cjs (npm's
// puppeteer-core with Debian's chromium). Mid-way the script asks this test to stop the open
// server (SIGTERM) and to start it again on the same port, and checks that the page recovers.
// Screenshots land in SYNAPSE_WEB_ARTIFACTS. Without chromium or puppeteer-core the test is
// skipped with the reason; under CI=true it fails.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using testing::run_command;

constexpr const char* kKey = "web-e2e-key";

std::string quote(const std::string& s) { return "'" + s + "'"; }

// The browser the test drives: $CHROMIUM, else `chromium` on the PATH; "" when there is none.
std::string chromium_path() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before the test starts a thread
  const char* env = std::getenv("CHROMIUM");
  if (env != nullptr && *env != '\0') return env;
  const auto r = run_command("command -v chromium");
  std::string path = r.exit_code == 0 ? r.stdout_text : "";
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  return path;
}

// Why the browser test cannot run ("" when it can).
std::string browser_missing(const std::string& npm_dir, const std::string& chromium) {
  if (run_command("node --version").exit_code != 0) return "node is not installed";
  if (chromium.empty()) return "chromium is not installed (./scripts/install-deps.sh installs it)";
  if (run_command("test -f " + quote(npm_dir + "/node_modules/puppeteer-core/package.json"))
          .exit_code != 0) {
    return "the npm package 'puppeteer-core' is not in " + npm_dir +
           " (./scripts/install-deps.sh installs it)";
  }
  return "";
}

struct ScriptRun {
  int exit_code = -1;  // -1: killed after its patience
  std::string output;  // stdout without the "@server" lines
};

// Runs `command` (a node script) with its stdout read line by line: a line "@server WHAT" asks
// the test to act, and `act(WHAT)`'s answer goes back as one line on the script's stdin. Its
// stderr goes to `err_path`.
ScriptRun run_script(const std::string& command, const std::string& err_path,
                     const std::function<std::string(const std::string&)>& act,
                     std::chrono::seconds patience) {
  ScriptRun run;
  // An answer to a script that died is an error, not our death.
  if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) return run;
  int in[2];
  int out[2];
  if (pipe(in) != 0) return run;
  if (pipe(out) != 0) return run;
  // `exec env`: the command starts with NAME=value words; node is then the child itself.
  const std::string shell = "exec env " + command + " 2>" + quote(err_path);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    execl("/bin/sh", "sh", "-c", shell.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  bool killed = false;
  std::string pending;
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (line.rfind("@server ", 0) == 0) {
        const std::string answer = act(line.substr(8)) + "\n";
        if (write(in[1], answer.data(), answer.size()) < 0) break;
      } else {
        run.output += line + "\n";
      }
    }
  }
  run.output += pending;
  close(out[0]);
  close(in[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = killed ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

TEST(WebE2e, ChatDashboardApiKeyAndBusyServerInHeadlessChromium) {
  const std::string npm_dir = testing::openai_node_sdk_dir(SYNAPSE_NPM_DIR);
  const std::string chromium = chromium_path();
  if (const std::string missing = browser_missing(npm_dir, chromium); !missing.empty()) {
    if (testing::running_in_ci()) FAIL() << missing << " (required under CI=true)";
    GTEST_SKIP() << missing;
  }
  testing::TempDir dir;
  const std::string model = dir.file("tiny.gguf");
  // A context long enough that the chat test's Stop always lands before the answer ends (see
  // chatStreamsAndStops in web_browser.cjs).
  ASSERT_EQ(testing::synth_serving_model(model, 32768), "");
  const std::string open_args =
      "--threads 1 --parallel 4 --chat-template chatml --alias tiny "
      "--job-workers 1 --jobs-db " +
      quote(dir.file("jobs.db"));
  testing::ServerProcess open(model, open_args, dir.file("open.log"));
  ASSERT_GT(open.port(), 0) << testing::read_file_text(dir.file("open.log"));
  testing::ServerProcess keyed(model,
                               std::string("--threads 1 --parallel 1 --queue-limit 1 ") +
                                   "--chat-template chatml --alias tiny --no-jobs --api-key " +
                                   kKey,
                               dir.file("keyed.log"));
  ASSERT_GT(keyed.port(), 0) << testing::read_file_text(dir.file("keyed.log"));

  // The script's requests: "stop" the open server (answered once it has exited, with its exit
  // status), "start" it again on its port (with the same job database).
  std::unique_ptr<testing::ServerProcess> restarted;
  std::vector<std::string> asked;
  const auto act = [&](const std::string& what) -> std::string {
    asked.push_back(what);
    if (what == "stop" && !restarted) return "stopped " + std::to_string(open.stop());
    if (what == "start" && !restarted) {
      const int port = open.port();
      restarted =
          std::make_unique<testing::ServerProcess>(model, open_args, dir.file("open.log"), port);
      return restarted->port() == port ? "started" : "failed";
    }
    return "unexpected request: " + what;
  };
  const ScriptRun r = run_script(
      testing::openai_node_sdk_command(
          npm_dir, SYNAPSE_SOURCE_DIR, "web_browser.cjs", open.url(), kKey, "tiny",
          "SYNAPSE_KEY_URL=" + keyed.url() + " SYNAPSE_ARTIFACTS=" + quote(SYNAPSE_WEB_ARTIFACTS) +
              " CHROMIUM=" + quote(chromium) + " SYNAPSE_RESTART=1"),
      dir.file("script.err"), act, std::chrono::minutes(15));
  EXPECT_EQ(r.exit_code, 0) << r.output << testing::read_file_text(dir.file("script.err"))
                            << "\n--- open server:\n"
                            << testing::read_file_text(dir.file("open.log"));
  EXPECT_NE(r.output.find("\"ok\":true"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"restarted\":true"), std::string::npos) << r.output;
  EXPECT_EQ(asked, (std::vector<std::string>{"stop", "start"}));
  std::cout << r.output;
  EXPECT_EQ(open.stop(), 0);  // the exit status of the stop the script asked for
  ASSERT_NE(restarted, nullptr);
  EXPECT_EQ(restarted->stop(), 0);
  EXPECT_EQ(keyed.stop(), 0);
}

}  // namespace
}  // namespace synapse
