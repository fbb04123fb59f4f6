// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 server under `synapse serve`. Design goals, each a finding of the hostile-input
// probe (issue 22) that cpp-httplib 0.11's thread-per-connection loop could not meet:
//  - A connection holds a thread only while its request runs. One event-loop thread (epoll)
//    accepts, reads request heads and bodies and enforces time bounds on them: the head must
//    arrive within header_timeout, the body within body_timeout plus one second per
//    body_min_rate bytes, an idle keep-alive connection is closed after idle_timeout. A slow or
//    silent client costs a socket, never a thread.
//  - The gate (the API key) runs as soon as the head is in, before any body is read, and before
//    "100 Continue" is sent.
//  - Caps on open connections in all and per client address; beyond them a client is answered
//    429/503 and closed at once.
//  - Keep-alive and pipelining: requests on one connection are answered in order, one at a time.
//  - Graceful shutdown in three steps: stop accepting (begin_shutdown), wait until every response
//    in flight is fully written (wait_idle, bounded by the caller), then stop.
// Non-goals: TLS (a reverse proxy's job), HTTP/2, request bodies streamed to handlers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "http/message.h"
#include "http/request_parser.h"

namespace synapse::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int threads = 8;  // handler threads: requests running at once
  ParserLimits parser;
  int header_timeout_ms = 10'000;  // the whole request head, from the connection or first byte
  int idle_timeout_ms = 5'000;     // a keep-alive connection with no request
  int body_timeout_ms = 10'000;    // the body, extended by a second per body_min_rate bytes
  size_t body_min_rate = 1024;     // bytes per second a body must keep up past body_timeout
  int write_timeout_ms = 60'000;   // a client that stops reading its response
  size_t max_connections = 1024;
  size_t max_connections_per_client = 256;
  size_t max_requests_per_connection = 1000;
};

// Runs a request the server has read completely; fills the response.
using Handler = std::function<void(Request&, Response&)>;
// Looks at a request head before its body is read: a response to send instead (the connection
// is then closed), or nullopt to go on.
using Gate = std::function<std::optional<Response>(const Request& head)>;
// The response for a protocol error or limit the server itself answers (400, 408, 413, 429, ...):
// `code` is a stable error-code name for the body.
using ErrorResponder =
    std::function<Response(int http_status, std::string_view code, const std::string& message)>;
// Told after every response (the request's path and method may be empty for a request that never
// parsed).
using ResponseObserver = std::function<void(const Request&, int http_status)>;

struct ServerHooks {
  Handler handler;
  Gate gate;
  ErrorResponder error;
  ResponseObserver observer;
};

class Server {
 public:
  Server(ServerOptions options, ServerHooks hooks);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the loop and handler threads; unavailable when the address is
  // taken.
  Status start();
  int port() const { return port_; }

  // Stops accepting and closes connections that have no request running (a partly received
  // request is answered 503). Requests running go on. Idempotent.
  void begin_shutdown();
  // Waits until no request is running or queued, or `deadline`; true when idle.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  // begin_shutdown(), cuts the connections still answering (their writes fail, their handlers see
  // the client gone), joins every thread. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace synapse::http
