// SPDX-License-Identifier: Apache-2.0
// `synapse run MODEL [PROMPT]`: a chat in the terminal (Ollama's `run`). On a terminal it is a
// conversation (history, slash commands, Ctrl-C stops an answer); with a PROMPT, or with stdin
// piped, it answers once and exits. It talks to a running `synapse serve` that serves MODEL
// ($SYNAPSE_HOST, --host) and loads the model in this process otherwise (--local forces it).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/chat_backend.h"
#include "cli/chat_input.h"
#include "cli/chat_session.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/line_editor.h"

namespace synapse::cli {
namespace {

struct Options {
  std::string model;
  std::vector<std::string> prompt;
  std::string host;  // forces the server
  bool local = false;
  bool verbose = false;
  std::vector<std::string> parameters;  // NAME=VALUE, as /set parameter NAME VALUE
  std::string system;
  ServeModelsOptions serve;  // in-process: store, threads, context, chat template
};

// Ctrl-C: counted here and written to a pipe that the prompt's reader watches, so that it is
// seen whichever thread it lands on (in-process, the model has threads) and whenever it comes
// (even just before the read starts).
std::atomic<int> g_interrupts{0};
int g_wake[2] = {-1, -1};
void on_interrupt(int) {
  g_interrupts.fetch_add(1);
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_wake[1], &byte, 1);
}

void drain_interrupts() {
  char bytes[64];
  while (::read(g_wake[0], bytes, sizeof bytes) > 0) {
  }
  g_interrupts = 0;
}

Status catch_interrupts() {
  if (::pipe2(g_wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    return Status(ErrorCode::kIoError, "cannot make a pipe for Ctrl-C");
  }
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  return ok_status();
}

Result<std::unique_ptr<ChatBackend>> open_backend(const Options& o) {
  if (!o.local) {
    const std::string url = o.host.empty() ? default_server_url() : o.host;
    ServerClient client(url, default_api_key());
    SYN_ASSIGN_OR_RETURN(const ServerProbe probe, probe_server(client, o.model));
    if (probe == ServerProbe::kServesModel) return make_http_chat_backend(std::move(client));
    if (!o.host.empty()) {
      return Status(ErrorCode::kModelNotFound,
                    probe == ServerProbe::kNoServer
                        ? "no Synapse server answers at " + url
                        : "the server at " + url + " does not serve '" + o.model + "'",
                    ErrorWhere{.field = "model"});
    }
    if (probe == ServerProbe::kOtherModels) {
      std::fprintf(stderr, "synapse run: the server at %s does not serve '%s'; running it here\n",
                   url.c_str(), o.model.c_str());
    }
  }
  ServeModelsOptions serve = o.serve;
  serve.models = {o.model};
  serve.alias = o.model;
  serve.parallel = 1;
  serve.queue_limit = 4;
  const bool show = isatty(STDERR_FILENO) != 0;
  if (show) std::fprintf(stderr, "loading %s ...", o.model.c_str());
  std::fflush(stderr);
  Result<std::unique_ptr<ChatBackend>> backend = make_local_chat_backend(serve);
  if (show) std::fprintf(stderr, "\r\033[K");
  return backend;
}

// The history file of the line editor; none with $SYNAPSE_NO_HISTORY.
std::string history_path() {
  const char* off = std::getenv("SYNAPSE_NO_HISTORY");
  return off != nullptr && *off != '\0' ? std::string() : default_history_path();
}

// The conversation on a terminal, until /bye, Ctrl-D or a second Ctrl-C at the prompt. With
// stdout a terminal too, lines are edited (line_editor.h); else read as typed, with prompts.
int converse(ChatSession& session) {
  std::unique_ptr<LineSource> input;
  if (stdio_is_terminal()) {
    input = std::make_unique<TerminalLineSource>(STDIN_FILENO, STDOUT_FILENO, g_wake[0],
                                                 history_path());
  } else {
    input = std::make_unique<LineReader>(STDIN_FILENO, g_wake[0], stdout);
  }
  bool warned = false;
  std::string message;
  for (;;) {
    // What a stopped answer left in the pipe must not interrupt the next read.
    drain_interrupts();
    const InputEvent event = read_message(*input, message);
    if (event == InputEvent::kEof) {
      std::fputc('\n', stdout);
      return kExitOk;
    }
    if (event == InputEvent::kInterrupted) {
      if (warned) {
        std::fputc('\n', stdout);
        return kExitOk;
      }
      std::fputs("\nUse Ctrl + d or /bye to exit.\n", stdout);
      warned = true;
      continue;
    }
    warned = false;
    if (message.find_first_not_of(" \t\n") == std::string::npos) continue;
    if (message.front() == '/') {
      if (session.command(message) == ChatSession::Action::kExit) return kExitOk;
      continue;
    }
    // A SIGINT the editor took as Ctrl-C (clearing a line) must not stop this answer.
    drain_interrupts();
    const Status s = session.ask(message, [] { return g_interrupts > 0; });
    if (!s.ok() && s.code() != ErrorCode::kCancelled) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
}

int run(const Options& o) {
  const bool interactive = o.prompt.empty() && isatty(STDIN_FILENO) != 0;
  std::string once;
  for (const std::string& word : o.prompt) once += (once.empty() ? "" : " ") + word;
  if (!interactive && o.prompt.empty()) once = LineReader(STDIN_FILENO).read_all();
  if (!interactive && once.find_first_not_of(" \t\r\n") == std::string::npos) {
    return fail(Status(ErrorCode::kInvalidArgument, "nothing to ask: the prompt is empty"));
  }
  Result<std::unique_ptr<ChatBackend>> backend = open_backend(o);
  if (!backend.ok()) return fail(backend.status());
  ChatSession session(o.model, **backend, stdout, stderr);
  session.set_verbose(o.verbose);
  session.set_system(o.system);
  for (const std::string& p : o.parameters) {
    const size_t eq = p.find('=');
    std::vector<std::string> values;
    if (eq != std::string::npos) values.push_back(p.substr(eq + 1));
    const Status s = session.set_parameter(p.substr(0, eq), values);
    if (!s.ok()) return fail(s);
  }
  if (const Status s = catch_interrupts(); !s.ok()) return fail(s);
  if (interactive) return converse(session);
  const Status s = session.ask(once, [] { return g_interrupts > 0; });
  if (s.code() == ErrorCode::kCancelled) return 130;  // as a shell reports SIGINT
  return s.ok() ? kExitOk : fail(s);
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Chat with a model in the terminal (through a running server, else in-process)");
  cmd->add_option("model", options->model, "Model: a stored model's name, or a GGUF or package")
      ->required();
  cmd->add_option("prompt", options->prompt, "Answer this once and exit (else: stdin if piped)");
  CLI::Option* host =
      cmd->add_option("--host", options->host,
                      "Server to use (default $SYNAPSE_HOST, else http://127.0.0.1:8080 when it "
                      "serves MODEL)");
  cmd->add_flag("--local", options->local, "Load the model in this process, even if a server runs")
      ->excludes(host);
  cmd->add_flag("--verbose", options->verbose, "Print token counts and speed after each answer");
  cmd->add_option("--set", options->parameters,
                  "A parameter as NAME=VALUE (as /set parameter NAME VALUE); repeatable");
  cmd->add_option("--system", options->system, "The system message");
  add_load_options(cmd, options->serve.run);
  cmd->add_option("--chat-template", options->serve.chat_template,
                  "In-process: a built-in chat template instead of the model's");
  auto* lookup = cmd->add_flag("--lookup", options->serve.lookup,
                               "In-process: speculative decoding by prompt lookup (same answers)");
  cmd->add_option("--draft", options->serve.draft,
                  "In-process: speculative decoding with this smaller model of the same "
                  "vocabulary (same answers)")
      ->excludes(lookup);
  cmd->add_option("--draft-max", options->serve.draft_max,
                  "In-process, with --lookup or --draft: most drafted tokens per step")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->capture_default_str();
  cmd->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace synapse::cli
