// SPDX-License-Identifier: Apache-2.0
// The HTTP front of `synapse serve`: the route table of every endpoint over the http::Server. It
// binds to loopback unless told otherwise, checks the API key on every route except /health as
// soon as a request's head is in (before its body), bounds request bodies, connection time and
// connections per client, answers errors in OpenAI's shape, counts requests for /metrics, and
// shuts down gracefully (every response in flight written before the listener's threads stop).
// Every route comes from the endpoint table (request/endpoints.h); with a model directory it
// serves the model routes (model_routes.h), with a job store the job and batch routes. HTTP
// threads never touch tensors (docs/ARCHITECTURE.md, threading model): the request layer submits
// to a model's Service and they write what it returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/responses.h"
#include "base/status.h"
#include "http/router.h"
#include "http/server.h"
#include "request/model_directory.h"
#include "request/ollama_models.h"
#include "server/http_metrics.h"
#include "server/jobs_api.h"

namespace synapse::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback: serving beyond the machine is an explicit choice
  int port = 8080;                 // 0: any free port (see HttpServer::port())
  std::string api_key;             // empty: no authentication
  size_t max_body_bytes = 8u << 20;
  // Time bounds on a connection (http/server.h): the request head must arrive within
  // header_timeout_s; the body within body_timeout_s plus a second per body_min_rate bytes; an
  // idle keep-alive connection is closed after idle_timeout_s; a client that stops reading its
  // response for write_timeout_s is dropped.
  int header_timeout_s = 10;
  int body_timeout_s = 10;
  size_t body_min_rate = 1024;  // bytes per second
  int idle_timeout_s = 5;
  int write_timeout_s = 60;
  size_t max_connections = 1024;
  size_t max_connections_per_client = 256;
  // Handler threads. A generation request holds its thread until it ends (running or queued),
  // so `synapse serve` sizes this to the admitted requests plus spare threads for quick answers
  // (429s, /health, /metrics). Connections that are still sending their request, or idle, hold
  // no thread.
  int threads = 8;
  // Not owned; the model routes (generation, embeddings, rerank, tokenize) over these models;
  // none: no model routes, and /v1/models lists nothing.
  const request::ModelDirectory* models = nullptr;
  // Not owned; the durable job routes (/v1/jobs, /v1/files, /v1/batches) when set.
  const JobsApi* jobs = nullptr;
  // Not owned; the store /api/pull, /api/delete and /api/copy manage (its directory the same as
  // `models`); none: they answer that this server manages no store.
  const request::ModelAdmin* admin = nullptr;
  // Browser origins allowed to call the API (--cors-origin; "*" allows any): their requests get
  // Access-Control-Allow-Origin and their preflight OPTIONS is answered (before the API key,
  // which browsers never send on a preflight). Empty: no CORS headers at all.
  std::vector<std::string> cors_origins;
};

// What the http::Server runs for these options: the routes of the endpoint table's rows that
// `options` serves (404/405 for the rest), the API-key gate, errors in OpenAI's shape, the
// metrics count. HttpServer::start uses it; the HTTP fuzz target drives it without sockets.
// `options` (and what it points to) and `metrics` must outlive the hooks.
http::ServerHooks make_server_hooks(const ServerOptions& options, HttpMetrics& metrics);

// The key from --api-key, else the SYNAPSE_API_KEY environment variable, else none.
std::string resolve_api_key(const std::string& flag_value);

// The router make_server_hooks uses: one route per endpoint-table row `options` serves.
http::Router build_routes(const ServerOptions& options, const HttpMetrics& metrics);

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stops and joins
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving on background threads; unavailable when the address is taken.
  Status start();
  int port() const;
  // Graceful end: stops accepting and closing idle connections, then waits until every response
  // in flight has been written (streams to their last event) or `deadline`, then stops. Call it
  // once the service has finished its own requests, so that what remains is writing.
  void shutdown(std::chrono::steady_clock::time_point deadline);
  // Stops at once: responses still being written are cut. Idempotent.
  void stop();

 private:
  ServerOptions options_;
  HttpMetrics metrics_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace synapse::server
