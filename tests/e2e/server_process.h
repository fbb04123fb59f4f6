// SPDX-License-Identifier: Apache-2.0
// What end-to-end tests of `synapse serve` share: the server as a child process on a free
// loopback port, and a plain HTTP/1.1 client over one socket (no client library, so a test sees
// exactly what was sent).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>

namespace synapse::testing {

// One `synapse serve -m MODEL --port PORT ARGS` process (no -m when `model` is empty: the store's
// models; port 0: a free one, else that port, e.g. to restart a server where its clients are),
// its stderr appended to `log_path`. The constructor waits (up to a minute) for the
// "listening on http://127.0.0.1:PORT" line; port() is -1 when it never came. SIGTERM and a wait
// when the object dies.
class ServerProcess {
 public:
  ServerProcess(const std::string& model, const std::string& args, const std::string& log_path,
                int port = 0);
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& banner() const { return banner_; }  // stdout up to the start-up line
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool alive() const;

  // SIGTERM, then the exit status (-1 if it had to be killed after `patience`).
  int stop(std::chrono::seconds patience = std::chrono::seconds(30));
  // SIGKILL (a crash: nothing is flushed, no handler runs) and reap.
  void kill_hard();

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  int exit_status_ = -1;
  std::string banner_;
};

struct HttpReply {
  int status = 0;                              // 0: no answer (connection refused or closed)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // chunked bodies decoded
  bool timed_out = false;                      // http_request_within: no end within the time
};

// The pieces of http_request, for tests that must control the connection themselves: a socket
// connected to 127.0.0.1:port (-1 on failure), a whole send, and the request's bytes.
int connect_loopback(int port);
bool send_all(int fd, const std::string& data);
std::string http_request_text(const std::string& method, const std::string& path,
                              const std::string& body, const std::string& key,
                              const std::string& extra_headers = "");

// Writes the small model the serving tests run (`synapse synth`: `arch`, 64 wide, 2 blocks, Q8_0,
// context `n_ctx`) to `path`; the command's stderr when it failed, else "".
std::string synth_serving_model(const std::string& path, int n_ctx,
                                const std::string& arch = "qwen2");

// Why the official OpenAI SDK for Node cannot run here ("" when it can): node missing, or the npm
// package `openai` not installed under `npm_dir` (./scripts/install-deps.sh installs it).
std::string openai_node_sdk_missing(const std::string& npm_dir);

// Where the SDK is installed: $SYNAPSE_NPM_DIR, else `default_dir` (the build's build/npm).
std::string openai_node_sdk_dir(const std::string& default_dir);
// The shell command that runs tests/e2e/`script` with node against `url`:
// NODE_PATH, SYNAPSE_URL, SYNAPSE_KEY and SYNAPSE_MODEL set, `env` ("NAME=value ...") added.
std::string openai_node_sdk_command(const std::string& npm_dir, const std::string& source_dir,
                                    const std::string& script, const std::string& url,
                                    const std::string& key, const std::string& model,
                                    const std::string& env = "");

}  // namespace synapse::testing

// Binds `var` to the SDK's npm directory, or skips the test (fails it under CI=true) when the
// SDK cannot run.
#define SYN_REQUIRE_OPENAI_NODE_SDK(var, default_dir)                                  \
  const std::string var = ::synapse::testing::openai_node_sdk_dir(default_dir);        \
  do {                                                                                 \
    const std::string syn_missing_ = ::synapse::testing::openai_node_sdk_missing(var); \
    if (!syn_missing_.empty()) {                                                       \
      if (::synapse::testing::running_in_ci()) {                                       \
        FAIL() << syn_missing_ << " (required under CI=true)";                         \
      }                                                                                \
      GTEST_SKIP() << syn_missing_;                                                    \
    }                                                                                  \
  } while (false)

namespace synapse::testing {

// One request with Connection: close. `key` becomes "Authorization: Bearer KEY" when not empty;
// `extra_headers` are raw "Name: value\r\n" lines.
HttpReply http_request(int port, const std::string& method, const std::string& path,
                       const std::string& body = "", const std::string& key = "",
                       const std::string& extra_headers = "");

// http_request that gives up when the whole answer has not come within `patience` (timed_out
// set; what came is parsed), for tests that must tell a hung request from a slow one.
HttpReply http_request_within(int port, const std::string& method, const std::string& path,
                              const std::string& body, std::chrono::milliseconds patience);

}  // namespace synapse::testing
