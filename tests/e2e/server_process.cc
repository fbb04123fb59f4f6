// SPDX-License-Identifier: Apache-2.0
#include "tests/e2e/server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <thread>

#include "tests/support/test_support.h"

namespace synapse::testing {
namespace {

using namespace std::chrono_literals;

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string http_request_text(const std::string& method, const std::string& path,
                              const std::string& body, const std::string& key,
                              const std::string& extra_headers) {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!key.empty()) r += "Authorization: Bearer " + key + "\r\n";
  r += extra_headers;
  if (method == "POST") {
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

std::string synth_serving_model(const std::string& path, int n_ctx, const std::string& arch) {
  const CommandResult r =
      run_command(synapse_cli() + " synth --arch " + arch +
                  " --n-embd 64 --n-ff 128 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ctx " +
                  std::to_string(n_ctx) + " --type q8_0 -o " + quote(path));
  return r.exit_code == 0 ? "" : "synth failed: " + r.stderr_text;
}

std::string openai_node_sdk_dir(const std::string& default_dir) {
  const char* dir = std::getenv("SYNAPSE_NPM_DIR");
  return dir != nullptr && *dir != '\0' ? dir : default_dir;
}

std::string openai_node_sdk_command(const std::string& npm_dir, const std::string& source_dir,
                                    const std::string& script, const std::string& url,
                                    const std::string& key, const std::string& model,
                                    const std::string& env) {
  return "NODE_PATH=" + quote(npm_dir + "/node_modules") + " SYNAPSE_URL=" + url +
         " SYNAPSE_KEY=" + quote(key) + " SYNAPSE_MODEL=" + quote(model) + " " + env + " node " +
         quote(source_dir + "/tests/e2e/" + script);
}

std::string openai_node_sdk_missing(const std::string& npm_dir) {
  if (run_command("node --version").exit_code != 0) return "node is not installed";
  if (run_command("test -f " + quote(npm_dir + "/node_modules/openai/package.json")).exit_code !=
      0) {
    return "the npm package 'openai' is not in " + npm_dir +
           " (./scripts/install-deps.sh installs it)";
  }
  return "";
}

namespace {

HttpReply parse_reply(const std::string& raw) {
  HttpReply reply;
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.size() < 12) return reply;
  reply.status = std::atoi(raw.c_str() + 9);
  size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    const size_t eol = raw.find("\r\n", pos);
    const std::string line = raw.substr(pos, eol - pos);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    pos = eol + 2;
  }
  std::string body = raw.substr(head_end + 4);
  if (reply.headers["transfer-encoding"] == "chunked") {
    std::string decoded;
    size_t p = 0;
    while (p < body.size()) {
      const size_t eol = body.find("\r\n", p);
      if (eol == std::string::npos) break;
      const size_t n = std::stoul(body.substr(p, eol - p), nullptr, 16);
      if (n == 0) break;
      decoded += body.substr(eol + 2, n);
      p = eol + 2 + n + 2;
    }
    body = decoded;
  }
  reply.body = body;
  return reply;
}

}  // namespace

ServerProcess::ServerProcess(const std::string& model, const std::string& args,
                             const std::string& log_path, int port) {
  int out[2];
  if (pipe(out) != 0) return;
  const std::string models = model.empty() ? std::string() : " -m " + quote(model);
  const std::string command = "exec " + synapse_cli() + " serve" + models + " --port " +
                              std::to_string(port) + " " + args + " 2>>" + quote(log_path);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  // The banner lists the models, then the line with the port.
  const auto has_port_line = [&line] {
    const size_t at = line.find("listening on ");
    return at != std::string::npos && line.find('\n', at) != std::string::npos;
  };
  while (std::chrono::steady_clock::now() < deadline && !has_port_line()) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char c[256];
    const ssize_t n = read(out[0], c, sizeof c);
    if (n <= 0) break;
    line.append(c, static_cast<size_t>(n));
  }
  close(out[0]);
  banner_ = line;
  std::smatch m;
  if (std::regex_search(line, m, std::regex("listening on http://127\\.0\\.0\\.1:([0-9]+)"))) {
    port_ = std::stoi(m[1]);
  }
}

bool ServerProcess::alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

int ServerProcess::stop(std::chrono::seconds patience) {
  if (pid_ <= 0) return exit_status_;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return exit_status_ = -1;
    }
    std::this_thread::sleep_for(20ms);
  }
  pid_ = -1;
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return exit_status_;
}

void ServerProcess::kill_hard() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  exit_status_ = -1;
}

HttpReply http_request(int port, const std::string& method, const std::string& path,
                       const std::string& body, const std::string& key,
                       const std::string& extra_headers) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  std::string raw;
  if (send_all(fd, http_request_text(method, path, body, key, extra_headers))) {
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return parse_reply(raw);
}

HttpReply http_request_within(int port, const std::string& method, const std::string& path,
                              const std::string& body, std::chrono::milliseconds patience) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  const auto deadline = std::chrono::steady_clock::now() + patience;
  std::string raw;
  bool timed_out = false;
  if (send_all(fd, http_request_text(method, path, body, ""))) {
    char buf[65536];
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
        timed_out = true;
        break;
      }
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      raw.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  HttpReply reply = parse_reply(raw);
  reply.timed_out = timed_out;
  return reply;
}

}  // namespace synapse::testing
