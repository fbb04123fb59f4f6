// SPDX-License-Identifier: Apache-2.0
// The HTTP front of `synapse serve`. It binds to loopback unless told otherwise, checks the API
// key on every route except /health, bounds request bodies and socket time, answers errors in
// OpenAI's shape, counts requests for /metrics, and shuts down gracefully. With an `Inference`
// it also serves the generation routes (inference_routes.h). HTTP threads never touch tensors
// (docs/ARCHITECTURE.md, threading model): they submit to the Service and stream its events.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/responses.h"
#include "base/status.h"
#include "server/http_metrics.h"
#include "server/inference.h"
#include "server/jobs_api.h"

namespace synapse::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback: serving beyond the machine is an explicit choice
  int port = 8080;                 // 0: any free port (see HttpServer::port())
  std::string api_key;             // empty: no authentication
  size_t max_body_bytes = 8u << 20;
  int read_timeout_s = 30;   // a client that stalls while sending its request is dropped
  int write_timeout_s = 60;  // a client that stops reading its response is dropped
  // Connection threads. A generation request holds its thread until it ends (running or
  // queued), so `synapse serve` sizes this to the admitted requests plus spare threads for quick
  // answers (429s, /health, /metrics).
  int threads = 8;
  std::vector<api::ModelInfo> models;
  const Inference* inference = nullptr;  // not owned; none: no generation routes
  // Not owned; an embedding model: the embedding routes, and generation routes answer 400.
  const Embeddings* embeddings = nullptr;
  // Not owned; the durable job routes (/v1/jobs, /v1/files, /v1/batches) when set.
  const JobsApi* jobs = nullptr;
};

// The key from --api-key, else the SYNAPSE_API_KEY environment variable, else none.
std::string resolve_api_key(const std::string& flag_value);

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stops and joins
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving on a background thread; unavailable when the address is taken.
  Status start();
  int port() const { return port_; }
  // Stops accepting, lets requests in flight finish, joins the threads. Idempotent.
  void stop();

 private:
  struct Impl;
  ServerOptions options_;
  HttpMetrics metrics_;
  std::unique_ptr<Impl> impl_;
  std::thread listener_;
  int port_ = 0;
  std::atomic<bool> running_{false};
};

}  // namespace synapse::server
