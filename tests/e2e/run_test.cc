// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of `synapse run` and `synapse ps`: the chat runs in a pseudo-terminal (as a
// person uses it: prompts, Ctrl-C as the terminal sends it) both in-process and against a
// running server, and answers once when its input is piped or a prompt is given.
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;
using testing::run_command;
using testing::synapse_cli;

std::string quote(const std::string& s) { return "'" + s + "'"; }

// `synapse ARGS` on a pseudo-terminal, with `env` ("NAME=value" entries) added.
class PtyProcess {
 public:
  PtyProcess(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      const std::string cli = synapse_cli();
      argv.push_back(const_cast<char*>(cli.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(cli.c_str(), argv.data());
      _exit(127);
    }
  }
  ~PtyProcess() {
    if (pid_ > 0 && exit_status_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }

  void send(const std::string& text) {
    ASSERT_EQ(write(master_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }

  // Reads until the output after `mark_` contains `what` (then moves the mark past it), or the
  // timeout; false on timeout or end of output.
  bool expect(const std::string& what, std::chrono::milliseconds timeout = 60s) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t at = output_.find(what, mark_);
      if (at != std::string::npos) {
        mark_ = at + what.size();
        return true;
      }
      if (std::chrono::steady_clock::now() > until || !read_some(until)) return false;
    }
  }
  // Reads until `n` bytes arrived after the mark (without moving it).
  bool expect_bytes(size_t n, std::chrono::milliseconds timeout = 60s) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (output_.size() < mark_ + n) {
      if (std::chrono::steady_clock::now() > until || !read_some(until)) return false;
    }
    return true;
  }
  // The output between the mark before the last expect() and now.
  const std::string& output() const { return output_; }
  size_t mark() const { return mark_; }

  // Waits for the exit (reading what is left); the exit code, or -1.
  int wait_exit(std::chrono::milliseconds timeout = 30s) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_status_;
      }
      read_some(std::chrono::steady_clock::now() + 50ms);
    }
    return -1;
  }
  bool alive() const { return kill(pid_, 0) == 0; }

 private:
  bool read_some(std::chrono::steady_clock::time_point until) {
    pollfd p{master_, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0) return true;
    char buffer[4096];
    const ssize_t n = read(master_, buffer, sizeof buffer);
    if (n <= 0) return false;  // EIO: the child closed the terminal
    output_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  int exit_status_ = -1;
  std::string output_;
  size_t mark_ = 0;
};

// The prompt tokens of the next verbose stats line.
int64_t next_prompt_tokens(PtyProcess& p) {
  if (!p.expect("prompt tokens: ")) return -1;
  const size_t at = p.mark();
  return std::stoll(p.output().substr(at, p.output().find(',', at) - at));
}

class RunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model_ = new std::string(dir_->file("tiny.gguf"));
    ASSERT_EQ(testing::synth_serving_model(*model_, 4096), "");
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }

  std::unique_ptr<testing::ServerProcess> start_server() {
    auto s =
        std::make_unique<testing::ServerProcess>(*model_, "--threads 1", dir_->file("server.log"));
    EXPECT_GT(s->port(), 0) << testing::read_file_text(dir_->file("server.log"));
    return s;
  }

  // Two turns, /clear and a third: the second prompt holds the first turn, the third does not.
  static void converse(PtyProcess& p, int64_t* first_prompt_tokens) {
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    for (const char* line :
         {"/set parameter temperature 0", "/set parameter num_predict 6", "/set verbose"}) {
      p.send(std::string(line) + "\n");
      ASSERT_TRUE(p.expect(">>> ")) << p.output();
    }
    p.send("hello there\n");
    const int64_t first = next_prompt_tokens(p);
    ASSERT_GT(first, 0) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("and then\n");
    const int64_t second = next_prompt_tokens(p);
    // The first question and its answer (6 tokens) come before the second question.
    EXPECT_GE(second, first + 6) << p.output();
    ASSERT_TRUE(p.expect(">>> "));
    p.send("/clear\n");
    ASSERT_TRUE(p.expect("Cleared session context")) << p.output();
    p.send("and then\n");
    const int64_t third = next_prompt_tokens(p);
    EXPECT_LT(third, second) << p.output();
    EXPECT_LE(third, first + 2) << p.output();
    ASSERT_TRUE(p.expect(">>> "));
    p.send("/bye\n");
    EXPECT_EQ(p.wait_exit(), 0) << p.output();
    *first_prompt_tokens = first;
  }

  // Ctrl-C mid-answer stops it and the prompt comes back; the next message is answered; Ctrl-C
  // at the prompt says how to leave, and Ctrl-D leaves.
  static void interrupt(PtyProcess& p) {
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("/set parameter num_predict 3000\n");
    ASSERT_TRUE(p.expect(">>> "));
    p.send("/set verbose\n");
    ASSERT_TRUE(p.expect(">>> "));
    p.send("go on and on\n");
    ASSERT_TRUE(p.expect("go on and on\r\n")) << p.output();  // the terminal's echo
    ASSERT_TRUE(p.expect_bytes(16)) << p.output();            // the answer streams
    p.send("\x03");
    ASSERT_TRUE(p.expect(">>> ", 20s)) << p.output();
    // Stopped: a finished answer would have printed its stats before the prompt.
    const std::string stopped = p.output().substr(0, p.mark());
    EXPECT_EQ(stopped.find("generated tokens"), std::string::npos) << stopped;
    EXPECT_TRUE(p.alive());
    p.send("/set parameter num_predict 4\n");
    ASSERT_TRUE(p.expect(">>> "));
    p.send("short one\n");
    ASSERT_TRUE(p.expect("generated tokens: ")) << p.output();
    ASSERT_TRUE(p.expect(">>> "));
    p.send("\x03");
    ASSERT_TRUE(p.expect("Use Ctrl + d or /bye to exit.")) << p.output();
    p.send("\x04");
    EXPECT_EQ(p.wait_exit(), 0) << p.output();
  }

  static testing::TempDir* dir_;
  static std::string* model_;
};

testing::TempDir* RunTest::dir_ = nullptr;
std::string* RunTest::model_ = nullptr;

TEST_F(RunTest, ConversationInProcess) {
  PtyProcess p({"run", "--local", "--threads", "1", *model_}, {});
  int64_t first = 0;
  converse(p, &first);
}

TEST_F(RunTest, CtrlCStopsTheAnswerInProcess) {
  PtyProcess p({"run", "--local", "--threads", "1", *model_}, {});
  interrupt(p);
}

TEST_F(RunTest, ConversationThroughAServer) {
  auto server = start_server();
  ASSERT_GT(server->port(), 0);
  PtyProcess p({"run", "tiny"}, {"SYNAPSE_HOST=" + server->url()});
  int64_t first = 0;
  converse(p, &first);
  // The server ran the turns: its prompt tokens are the three turns' (the first counted here).
  const testing::HttpReply metrics = testing::http_request(server->port(), "GET", "/metrics");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(metrics.body, m, std::regex("\nsynapse_prompt_tokens_total (\\d+)")))
      << metrics.body;
  EXPECT_GT(std::stoll(m[1]), first * 3) << metrics.body;
}

TEST_F(RunTest, CtrlCStopsTheAnswerThroughAServer) {
  auto server = start_server();
  ASSERT_GT(server->port(), 0);
  PtyProcess p({"run", "tiny"}, {"SYNAPSE_HOST=" + server->url()});
  interrupt(p);
  const testing::HttpReply metrics = testing::http_request(server->port(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("status=\"cancelled\"} 1"), std::string::npos) << metrics.body;
}

// The line editor on the terminal: a line corrected with Left and an insertion (across
// multi-byte characters) is the line the session gets; Up recalls the previous line, also in the
// next session through the history file; Ctrl-C clears a half-typed line and the session goes
// on; Ctrl-W deletes a word; Ctrl-D on an empty line leaves.
TEST_F(RunTest, LineEditingAndHistory) {
  const std::string home = dir_->file("home-editing");
  const std::vector<std::string> args = {"run", "--local", "--threads", "1", *model_};
  const std::string system =
      "hi x\xc3\xb6"
      "1\xc3\xb6";  // what the corrected line sets
  {
    PtyProcess p(args, {"SYNAPSE_HOME=" + home});
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    // Typed "hi ö1ö", then three Lefts (three characters, five bytes) and an x.
    p.send(
        "/set system hi \xc3\xb6"
        "1\xc3\xb6\x1b[D\x1b[D\x1b[Dx\r");
    ASSERT_TRUE(p.expect("Set system message.")) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("/show system\r");
    ASSERT_TRUE(p.expect("  system\r\n    " + system + "\r\n")) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("\x1b[A");  // Up: "/show system" again
    ASSERT_TRUE(p.expect("/show system")) << p.output();
    p.send("\r");
    ASSERT_TRUE(p.expect("    " + system + "\r\n")) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    // Ctrl-C on a half-typed line clears it: the next line is the session's, alone.
    p.send("/set system abandoned");
    ASSERT_TRUE(p.expect("abandoned")) << p.output();
    p.send("\x03");
    ASSERT_TRUE(p.expect("^C\r\n>>> ")) << p.output();
    // Ctrl-W deletes "junk", then "system" is typed in its place.
    p.send("/show junk\x17system\r");
    ASSERT_TRUE(p.expect("  system\r\n    " + system + "\r\n")) << p.output();
    EXPECT_EQ(p.output().find("abandoned\r\n"), std::string::npos) << p.output();
    EXPECT_EQ(p.output().find("Use Ctrl + d"), std::string::npos) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("\x04");
    EXPECT_EQ(p.wait_exit(), 0) << p.output();
  }
  // The history file: each line once in a row, as typed after editing.
  EXPECT_EQ(testing::read_file_text(home + "/history"),
            "/set system " + system + "\n/show system\n");
  {
    // A new session recalls the last session's lines: two Ups give the /set line back.
    PtyProcess p(args, {"SYNAPSE_HOME=" + home});
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("\x1b[A\x1b[A\r");
    ASSERT_TRUE(p.expect("Set system message.")) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("/show system\r");
    ASSERT_TRUE(p.expect("    " + system + "\r\n")) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("/bye\r");
    EXPECT_EQ(p.wait_exit(), 0) << p.output();
  }
  // $SYNAPSE_NO_HISTORY: no file is read or written.
  const std::string quiet_home = dir_->file("home-no-history");
  {
    PtyProcess p(args, {"SYNAPSE_HOME=" + quiet_home, "SYNAPSE_NO_HISTORY=1"});
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("/show system\r");
    ASSERT_TRUE(p.expect("(none)")) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("\x04");
    EXPECT_EQ(p.wait_exit(), 0) << p.output();
  }
  EXPECT_FALSE(std::filesystem::exists(quiet_home + "/history"));
}

// /show info tells what the backend knows of the model, from the server (its /v1/models and
// /api/show) and in-process alike.
TEST_F(RunTest, ShowInfoDescribesTheModel) {
  auto server = start_server();
  ASSERT_GT(server->port(), 0);
  for (const bool local : {false, true}) {
    const std::vector<std::string> args =
        local ? std::vector<std::string>{"run", "--local", "--threads", "1", *model_}
              : std::vector<std::string>{"run", "tiny"};
    PtyProcess p(args, {"SYNAPSE_HOST=" + server->url(), "SYNAPSE_NO_HISTORY=1"});
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    p.send("/show info\r");
    ASSERT_TRUE(p.expect("    runs on         ")) << p.output();
    ASSERT_TRUE(p.expect(">>> ")) << p.output();
    const std::string shown = p.output();
    EXPECT_NE(shown.find("    kind            generation\r\n"), std::string::npos) << shown;
    EXPECT_NE(shown.find("    loaded          yes\r\n"), std::string::npos) << shown;
    EXPECT_TRUE(std::regex_search(shown, std::regex("    context length  [1-9][0-9]*\r\n")))
        << shown;
    EXPECT_TRUE(std::regex_search(shown, std::regex("    chat template   (yes|no)\r\n"))) << shown;
    EXPECT_NE(shown.find(local ? "in-process" : server->url()), std::string::npos) << shown;
    p.send("/bye\r");
    EXPECT_EQ(p.wait_exit(), 0) << p.output();
  }
}

TEST_F(RunTest, PipedInputAndAPromptAnswerOnceTheSameEverywhere) {
  const std::string params = " --set temperature=0 --set num_predict=6";
  const auto piped = run_command("printf 'hello there' | " + synapse_cli() +
                                 " run --local --threads 1 " + quote(*model_) + params);
  ASSERT_EQ(piped.exit_code, 0) << piped.stderr_text;
  EXPECT_FALSE(piped.stdout_text.empty());
  EXPECT_EQ(piped.stdout_text.find(">>>"), std::string::npos) << piped.stdout_text;
  auto server = start_server();
  ASSERT_GT(server->port(), 0);
  const auto asked = run_command("SYNAPSE_HOST=" + server->url() + " " + synapse_cli() +
                                 " run tiny 'hello there'" + params + " </dev/null");
  ASSERT_EQ(asked.exit_code, 0) << asked.stderr_text;
  // The same greedy answer from the server as in-process: one request path.
  EXPECT_EQ(asked.stdout_text, piped.stdout_text);
  // ... and in-process with speculative decoding.
  const auto drafted = run_command("printf 'hello there' | " + synapse_cli() +
                                   " run --local --threads 1 --lookup " + quote(*model_) + params);
  ASSERT_EQ(drafted.exit_code, 0) << drafted.stderr_text;
  EXPECT_EQ(drafted.stdout_text, piped.stdout_text);
  // --host names a server that must serve the model.
  const auto missing =
      run_command(synapse_cli() + " run --host " + server->url() + " other 'hi' </dev/null");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.stderr_text.find("does not serve 'other'"), std::string::npos)
      << missing.stderr_text;
}

TEST_F(RunTest, PsListsTheLoadedModel) {
  auto server = start_server();
  ASSERT_GT(server->port(), 0);
  const std::string env = "SYNAPSE_HOST=" + server->url() + " ";
  const auto table = run_command(env + synapse_cli() + " ps");
  ASSERT_EQ(table.exit_code, 0) << table.stderr_text;
  EXPECT_TRUE(std::regex_search(table.stdout_text, std::regex("\ntiny +generation ")))
      << table.stdout_text;
  const auto json = run_command(env + synapse_cli() + " ps --json");
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  const Json out = Json::parse(json.stdout_text);
  ASSERT_EQ(out["models"].size(), 1u) << json.stdout_text;
  EXPECT_EQ(out["models"][0]["name"], "tiny");
  EXPECT_EQ(out["models"][0]["kind"], "generation");
  server->stop();
  const auto gone = run_command(env + synapse_cli() + " ps");
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.stderr_text.find("no Synapse server"), std::string::npos) << gone.stderr_text;
}

}  // namespace
}  // namespace synapse
