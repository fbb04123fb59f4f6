// SPDX-License-Identifier: Apache-2.0
// `synapse serve [-m MODEL ...] [--host H] [--port P] [--api-key K] [--max-memory B] ...`: the
// models of -m (or every model in the store, loaded on demand: serve_models.h), the HTTP server
// over the endpoint table, and the durable-job executor. Prints the models and the URL, and on
// SIGINT/SIGTERM stops admitting, lets requests in flight finish for --shutdown-grace seconds,
// cancels the rest and exits. A request's "model" picks the model; every model answers
// /v1/embeddings, a BERT-family cross-encoder also /v1/rerank, and an encoder does not generate
// (its generation requests answer 400).
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/model_runner.h"
#include "cli/serve_jobs.h"
#include "cli/serve_models.h"
#include "request/job_items.h"
#include "server/http_server.h"

namespace synapse::cli {
namespace {

struct ServeOptions {
  ServeModelsOptions models;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;
  int http_threads = 0;
  double shutdown_grace_s = 10.0;
  size_t max_body_bytes = 8u << 20;
  server::ServerOptions http;  // its time and connection bounds; the rest is set from the above
  ServeJobsOptions jobs;
};

// The HTTP server's options from the flags. `admitted` requests may each hold a connection
// thread; spare threads answer the rest (429s, /health, /metrics) at once.
server::ServerOptions http_options(const ServeOptions& o, size_t admitted) {
  constexpr size_t kSpareThreads = 16;
  server::ServerOptions options = o.http;
  options.host = o.host;
  options.port = o.port;
  options.api_key = server::resolve_api_key(o.api_key);
  options.max_body_bytes = o.max_body_bytes;
  options.threads = o.http_threads > 0
                        ? o.http_threads
                        : static_cast<int>(std::min<size_t>(admitted + kSpareThreads, 1024));
  return options;
}

// After the service has finished (or cancelled) its requests, the HTTP server still has to write
// what they produced: the last events of a stream, its final chunk and [DONE]. It gets what is
// left of the grace period for that, and at least this much.
constexpr auto kMinWriteGrace = std::chrono::seconds(5);

std::chrono::steady_clock::time_point write_deadline(
    std::chrono::steady_clock::time_point grace_end) {
  return std::max(grace_end, std::chrono::steady_clock::now() + kMinWriteGrace);
}

std::chrono::steady_clock::time_point grace_end(const ServeOptions& o) {
  return std::chrono::steady_clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_grace_s * 1000));
}

// One line per model, then where the server listens (tests read the port from that line).
void print_models(const request::ModelDirectory& models, const std::string& host, int port) {
  for (const request::ModelListing& m : models.list()) {
    std::string state;
    if (m.loaded) {
      state = ", ctx " + std::to_string(m.n_ctx);
      if (m.kind == request::ServedKind::kGeneration) {
        state += m.chat_template ? ", chat template" : ", no chat template";
      }
      state += ", loaded";
    }
    std::printf("synapse serve: %s (%s, %.1f MB%s)\n", m.name.c_str(),
                std::string(request::served_kind_name(m.kind)).c_str(),
                static_cast<double>(m.bytes) / 1e6, state.c_str());
  }
  std::printf("synapse serve: listening on http://%s:%d\n", host.c_str(), port);
}

void print_jobs_line(const ServeJobs* jobs, const ServeJobsOptions& options) {
  if (jobs == nullptr) return;
  std::printf("synapse serve: durable jobs in %s (%zu worker%s)\n", jobs->database().c_str(),
              options.workers, options.workers == 1 ? "" : "s");
}

// The stop signals, blocked in every thread: the main thread takes them with sigwait().
sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return stop_signals;
}

// A server lives long and handles request bodies up to --max-body (uploads of tens of MB): glibc's
// default raises its mmap threshold to the largest block freed (up to 32 MB), after which such
// buffers come from the heap and stay in the process when freed (RSS grew by ~1 GB over 20 uploads
// of 50 MB). A fixed threshold keeps every large buffer mapped, so it goes back when freed. The
// engine allocates its large buffers once, so this costs nothing on the decode path.
void return_large_buffers_to_the_system() {
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
}

int run_serve(const ServeOptions& o) {
  return_large_buffers_to_the_system();
  // Signals go to the main thread's sigwait() only: block them before any thread exists (the
  // threads inherit the mask). A client that disconnects must not kill the process.
  sigset_t stop_signals = block_stop_signals();

  request::ModelDirectory models;
  if (Status s = setup_served_models(o.models, models); !s.ok()) return fail(s);

  // Every admitted request (running or queued in any class) holds a connection thread.
  const size_t parallel = o.models.parallel;
  server::ServerOptions server_options = http_options(o, parallel + 3 * o.models.queue_limit);
  server_options.models = &models;
  // /api/pull, /api/delete and /api/copy manage the store this server serves from.
  const request::ModelAdmin admin{o.models.run.store, &models};
  server_options.admin = &admin;
  api::RequestLimits item_limits;
  item_limits.max_body_bytes = o.max_body_bytes;
  Result<std::unique_ptr<ServeJobs>> jobs =
      ServeJobs::start(o.jobs, request::job_item_call(models, item_limits));
  if (!jobs.ok()) {
    models.shutdown(std::chrono::milliseconds(0));
    return fail(jobs.status());
  }
  if (*jobs) server_options.jobs = (*jobs)->api();
  server::HttpServer http(server_options);
  if (Status s = http.start(); !s.ok()) {
    if (*jobs) (*jobs)->stop();
    models.shutdown(std::chrono::milliseconds(0));
    return fail(s);
  }
  print_models(models, o.host, http.port());
  print_jobs_line(jobs->get(), o.jobs);
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "synapse serve: %s, shutting down (grace %.0f s)\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM", o.shutdown_grace_s);
  // Stop executing jobs (items in flight are cancelled and run again after a restart), stop
  // admitting (new requests get 503), let running ones finish for the grace period, cancel the
  // rest (their streams end with an error event), wait until every response is written out
  // (streams to their [DONE]), then stop the HTTP threads.
  const auto grace_over = grace_end(o);
  if (*jobs) (*jobs)->stop();
  models.shutdown(std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_grace_s * 1000)));
  http.shutdown(write_deadline(grace_over));
  std::fprintf(stderr, "synapse serve: stopped\n");
  return kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd =
      app.add_subcommand("serve",
                         "Serve a model over an OpenAI-compatible HTTP API (a BERT-family model: "
                         "/v1/embeddings and /v1/rerank)");
  add_serve_model_options(cmd, o->models);
  cmd->add_option("--host", o->host, "Address to listen on (loopback unless told otherwise)")
      ->capture_default_str();
  cmd->add_option("--port", o->port, "Port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--api-key", o->api_key,
                  "Require 'Authorization: Bearer KEY' on every route but /health "
                  "(default: $SYNAPSE_API_KEY)");
  cmd->add_option("--cors-origin", o->http.cors_origins,
                  "Let browser pages from ORIGIN call the API (repeatable; '*': any origin)");
  cmd->add_option("--http-threads", o->http_threads,
                  "Handler threads: requests answered at once (default: parallel + 3 x "
                  "queue-limit + 16)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--shutdown-grace", o->shutdown_grace_s,
                  "Seconds requests in flight may finish after SIGINT/SIGTERM")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  add_serve_jobs_options(cmd, o->jobs);
  cmd->add_option("--max-body", o->max_body_bytes, "Largest request body in bytes (413 beyond)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30))
      ->capture_default_str();
  server::ServerOptions& limits = o->http;
  cmd->add_option("--header-timeout", limits.header_timeout_s,
                  "Seconds a client has to send a request's head (408 beyond)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cmd->add_option("--body-timeout", limits.body_timeout_s,
                  "Seconds a client has to send a request's body, plus one per --body-min-rate "
                  "bytes sent (408 beyond)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cmd->add_option("--body-min-rate", limits.body_min_rate,
                  "Bytes per second a request body must keep up once --body-timeout is spent")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--idle-timeout", limits.idle_timeout_s,
                  "Seconds an idle keep-alive connection stays open")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cmd->add_option("--max-connections", limits.max_connections,
                  "Open connections in all (503 beyond)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--max-client-connections", limits.max_connections_per_client,
                  "Open connections from one client address (429 beyond)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_serve(*o); });
}

}  // namespace synapse::cli
