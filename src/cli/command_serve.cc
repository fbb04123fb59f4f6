// SPDX-License-Identifier: Apache-2.0
// `synapse serve -m MODEL [--host H] [--port P] [--api-key K] [--ctx N] [--parallel N]
// [--threads N] [--chat-template NAME] [--queue-limit N]`: loads the model once (with the
// serving decoder options: batch-invariant logits), starts the service's engine loop and the
// HTTP server, prints the URL, and on SIGINT/SIGTERM stops admitting, lets requests in flight
// finish for --shutdown-grace seconds, cancels the rest and exits. Every model answers
// /v1/embeddings as prefill-only requests on the same engine loop; a BERT-family cross-encoder
// also /v1/rerank. A bidirectional encoder does not generate: its generation routes answer 400.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "base/cpu_info.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/model_runner.h"
#include "cli/serve_jobs.h"
#include "encoder/embedder.h"
#include "format/model_file.h"
#include "model/arch/architecture.h"
#include "request/job_items.h"
#include "request/served_model.h"
#include "serve/service.h"
#include "server/http_server.h"
#include "store/model_ref.h"

namespace synapse::cli {
namespace {

struct ServeOptions {
  RunOptions run;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;
  size_t parallel = 4;
  size_t queue_limit = 64;
  std::string chat_template;
  std::string alias;
  int http_threads = 0;
  double shutdown_grace_s = 10.0;
  size_t max_body_bytes = 8u << 20;
  std::string json_whitespace = "compact";  // structured outputs: "compact" or "flexible"
  server::ServerOptions http;  // its time and connection bounds; the rest is set from the above
  ServeJobsOptions jobs;
};

// The id clients name in "model": --alias, else the store name or the file name without its
// extension.
std::string model_id(const ServeOptions& o) {
  if (!o.alias.empty()) return o.alias;
  const std::filesystem::path p(o.run.model);
  if (p.has_extension() || o.run.model.find('/') != std::string::npos) return p.stem().string();
  return o.run.model;
}

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

  Result<LoadedModel> loaded = load_model(o.run, serve::serving_decoder_options());
  if (!loaded.ok()) return fail(loaded.status());
  DecoderModel& model = *loaded->model;
  Result<tokenizer::Tokenizer> tok = load_tokenizer(model);
  if (!tok.ok()) return fail(tok.status());

  request::ServedModelOptions served_options;
  served_options.chat_template = o.chat_template;
  served_options.flexible_json = o.json_whitespace == "flexible";
  Result<request::ServedModel> served =
      request::describe_served_model(model_id(o), model, *tok, served_options);
  if (!served.ok()) return fail(served.status());

  serve::ServiceConfig config;
  config.scheduler.max_active = o.parallel;
  config.scheduler.max_queued = {o.queue_limit, o.queue_limit, o.queue_limit};
  config.eog_tokens = end_of_generation_tokens(model);
  serve::Service service(model, *tok, config);
  served->service = &service;
  request::ModelDirectory models;
  models.add(request::unowned(*served));
  const request::ServedModel& served_model = *served;

  // Every admitted request (running or queued in any class) holds a connection thread.
  server::ServerOptions server_options = http_options(o, o.parallel + 3 * o.queue_limit);
  server_options.models = &models;
  api::RequestLimits item_limits;
  item_limits.max_body_bytes = o.max_body_bytes;
  Result<std::unique_ptr<ServeJobs>> jobs =
      ServeJobs::start(o.jobs, request::job_item_call(models, item_limits));
  if (!jobs.ok()) {
    service.shutdown(std::chrono::milliseconds(0));
    return fail(jobs.status());
  }
  if (*jobs) server_options.jobs = (*jobs)->api();
  server::HttpServer http(server_options);
  if (Status s = http.start(); !s.ok()) {
    if (*jobs) (*jobs)->stop();
    service.shutdown(std::chrono::milliseconds(0));
    return fail(s);
  }
  if (service.generates()) {
    std::printf("synapse serve: %s (ctx %u, parallel %zu, %s), listening on http://%s:%d\n",
                served_model.id.c_str(), service.n_ctx(), o.parallel,
                served_model.chat_template ? "chat template" : "no chat template", o.host.c_str(),
                http.port());
  } else {
    std::printf(
        "synapse serve: %s (embeddings, %u dimensions, ctx %u%s), listening on http://%s:%d\n",
        served_model.id.c_str(), service.n_embd(), service.n_ctx(),
        service.can_rerank() ? ", rerank" : "", o.host.c_str(), http.port());
  }
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
  service.shutdown(std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_grace_s * 1000)));
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
  add_run_options(cmd, o->run);
  cmd->add_option("--host", o->host, "Address to listen on (loopback unless told otherwise)")
      ->capture_default_str();
  cmd->add_option("--port", o->port, "Port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--api-key", o->api_key,
                  "Require 'Authorization: Bearer KEY' on every route but /health "
                  "(default: $SYNAPSE_API_KEY)");
  cmd->add_option("--parallel", o->parallel, "Sequences decoded together")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--queue-limit", o->queue_limit,
                  "Requests each class (interactive, batch, background) may queue; more get 429")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--chat-template", o->chat_template,
                  "Built-in chat template (chatml, llama3, llama2, mistral, phi3, gemma, ...) "
                  "instead of the model's");
  cmd->add_option("--alias", o->alias, "Model id clients use (default: the file or store name)");
  cmd->add_option("--http-threads", o->http_threads,
                  "Handler threads: requests answered at once (default: parallel + 3 x "
                  "queue-limit + 16)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--shutdown-grace", o->shutdown_grace_s,
                  "Seconds requests in flight may finish after SIGINT/SIGTERM")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  add_serve_jobs_options(cmd, o->jobs);
  cmd->add_option("--json-whitespace", o->json_whitespace,
                  "Structured outputs: compact JSON, or flexible (whitespace between tokens)")
      ->check(CLI::IsMember({"compact", "flexible"}))
      ->default_val("compact");
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
