// SPDX-License-Identifier: Apache-2.0
// The web UI end to end: two `synapse serve` processes on a small synthesized model (one open
// with durable jobs, one with an API key, one decode slot and a queue of one, so that a third
// request gets 429), driven in headless Chromium by tests/e2e/web_browser.cjs (npm's
// puppeteer-core with Debian's chromium). Screenshots land in SYNAPSE_WEB_ARTIFACTS. Without
// chromium or puppeteer-core the test is skipped with the reason; under CI=true it fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using testing::run_command;

constexpr const char* kKey = "web-e2e-key";

std::string quote(const std::string& s) { return "'" + s + "'"; }

// The browser the test drives: $CHROMIUM, else `chromium` on the PATH; "" when there is none.
std::string chromium_path() {
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

TEST(WebE2e, ChatDashboardApiKeyAndBusyServerInHeadlessChromium) {
  const std::string npm_dir = testing::openai_node_sdk_dir(SYNAPSE_NPM_DIR);
  const std::string chromium = chromium_path();
  if (const std::string missing = browser_missing(npm_dir, chromium); !missing.empty()) {
    if (testing::running_in_ci()) FAIL() << missing << " (required under CI=true)";
    GTEST_SKIP() << missing;
  }
  testing::TempDir dir;
  const std::string model = dir.file("tiny.gguf");
  ASSERT_EQ(testing::synth_serving_model(model, 4096), "");
  testing::ServerProcess open(model,
                              "--threads 1 --parallel 4 --chat-template chatml --alias tiny "
                              "--job-workers 1 --jobs-db " +
                                  quote(dir.file("jobs.db")),
                              dir.file("open.log"));
  ASSERT_GT(open.port(), 0) << testing::read_file_text(dir.file("open.log"));
  testing::ServerProcess keyed(model,
                               std::string("--threads 1 --parallel 1 --queue-limit 1 ") +
                                   "--chat-template chatml --alias tiny --no-jobs --api-key " +
                                   kKey,
                               dir.file("keyed.log"));
  ASSERT_GT(keyed.port(), 0) << testing::read_file_text(dir.file("keyed.log"));

  const auto r = run_command(testing::openai_node_sdk_command(
      npm_dir, SYNAPSE_SOURCE_DIR, "web_browser.cjs", open.url(), kKey, "tiny",
      "SYNAPSE_KEY_URL=" + keyed.url() + " SYNAPSE_ARTIFACTS=" + quote(SYNAPSE_WEB_ARTIFACTS) +
          " CHROMIUM=" + quote(chromium)));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text << "\n--- open server:\n"
                            << testing::read_file_text(dir.file("open.log"));
  EXPECT_NE(r.stdout_text.find("\"ok\":true"), std::string::npos) << r.stdout_text;
  std::cout << r.stdout_text;
  EXPECT_EQ(open.stop(), 0);
  EXPECT_EQ(keyed.stop(), 0);
}

}  // namespace
}  // namespace synapse
