// SPDX-License-Identifier: Apache-2.0
#include "server/http_server.h"

#include <cstdlib>

#include "api/api_error.h"
#include "api/requests.h"
#include "base/echo.h"
#include "http/router.h"
#include "server/batch_routes.h"
#include "server/embedding_routes.h"
#include "server/http_reply.h"
#include "server/inference_routes.h"
#include "server/job_routes.h"

namespace synapse::server {
namespace {

// Compares without an early exit, so that timing does not reveal how much of a key matched.
bool same_key(std::string_view given, std::string_view expected) {
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned>(
        static_cast<unsigned char>(given[i]) ^
        static_cast<unsigned char>(expected[i % std::max<size_t>(1, expected.size())]));
  }
  return diff == 0 && !expected.empty();
}

// Every path but /health needs the key when one is set. Runs on the request head, before the
// body is read: an unauthenticated client cannot make the server read (or wait for) a body.
std::optional<http::Response> check_api_key(const std::string& key, const http::Request& head) {
  if (key.empty() || head.path == "/health") return std::nullopt;
  const std::string header = head.header("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  const bool ok = header.size() > kBearer.size() &&
                  header.compare(0, kBearer.size(), kBearer) == 0 &&
                  same_key(std::string_view(header).substr(kBearer.size()), key);
  if (ok) return std::nullopt;
  http::Response res;
  send_error(res, Status(ErrorCode::kInvalidApiKey,
                         header.empty() ? "missing API key (send 'Authorization: Bearer <key>')"
                                        : "invalid API key"));
  res.set_header("WWW-Authenticate", "Bearer");
  return res;
}

// Errors the HTTP layer answers itself (a malformed request, a timeout, a limit), in OpenAI's
// shape with the layer's stable code.
http::Response protocol_error(int http_status, std::string_view code, const std::string& message) {
  api::ApiError error;
  error.http_status = http_status;
  error.message = message;
  error.type = api::error_type_for_status(http_status);
  error.code = std::string(code);
  http::Response res;
  res.status = http_status;
  if (http_status == 429 || http_status == 503) res.set_header("Retry-After", "1");
  res.set_content(api::error_body(error), std::string(kJson));
  return res;
}

// The table of every endpoint this server answers, built from what it serves.
http::Router build_routes(const ServerOptions& options, const HttpMetrics& metrics) {
  http::Router router;
  router.add("GET", "/health", [](const http::Request&, http::Response& res) {
    res.set_content(R"({"status":"ok"})", std::string(kJson));
  });
  const std::string models = api::models_response(options.models);
  router.add("GET", "/v1/models", [models](const http::Request&, http::Response& res) {
    res.set_content(models, std::string(kJson));
  });
  api::RequestLimits limits;
  limits.max_body_bytes = options.max_body_bytes;
  const Inference* inference = options.inference;
  if (inference != nullptr) {
    add_inference_routes(router, *inference, limits);
    add_embedding_routes(router, *inference, limits);
    if (!inference->service->generates()) add_wrong_model_routes(router, inference->model_id);
  }
  if (options.jobs != nullptr && options.jobs->store != nullptr) {
    add_job_routes(router, *options.jobs);
    add_batch_routes(router, *options.jobs);
  }
  // The service's metrics (when there is one) and the HTTP counts.
  router.add("GET", "/metrics", [&metrics, inference](const http::Request&, http::Response& res) {
    std::string text = inference != nullptr ? inference->service->render_prometheus() : "";
    text += metrics.render_prometheus();
    res.set_content(text, "text/plain; version=0.0.4");
  });
  return router;
}

}  // namespace

http::ServerHooks make_server_hooks(const ServerOptions& options, HttpMetrics& metrics) {
  auto router = std::make_shared<const http::Router>(build_routes(options, metrics));
  http::ServerHooks hooks;
  hooks.handler = [router](http::Request& req, http::Response& res) {
    const http::Router::Match match = router->match(req);
    switch (match.kind) {
      case http::Router::Match::Kind::kFound:
        return match.route->handler(req, res);
      case http::Router::Match::Kind::kMethodNotAllowed:
        send_error(res, Status(ErrorCode::kInvalidArgument, "method " + clip_for_echo(req.method) +
                                                                " not allowed; this path takes " +
                                                                match.allow));
        res.status = 405;
        res.set_header("Allow", match.allow);
        return;
      case http::Router::Match::Kind::kNotFound:
        return send_error(
            res, Status(ErrorCode::kNotFound,
                        "no route " + clip_for_echo(req.method) + " " + clip_for_echo(req.path)));
    }
  };
  hooks.gate = [key = options.api_key](const http::Request& head) {
    return check_api_key(key, head);
  };
  hooks.error = protocol_error;
  hooks.observer = [&metrics](const http::Request& req, int status) {
    metrics.count(req.path, status);
  };
  return hooks;
}

std::string resolve_api_key(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  // Read once at start-up, before any thread that could change the environment exists.
  const char* env = std::getenv("SYNAPSE_API_KEY");  // NOLINT(concurrency-mt-unsafe)
  return env != nullptr ? std::string(env) : std::string();
}

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  http::ServerOptions o;
  o.host = options_.host;
  o.port = options_.port;
  o.threads = std::max(1, options_.threads);
  o.parser.max_body_bytes = options_.max_body_bytes;
  o.header_timeout_ms = options_.header_timeout_s * 1000;
  o.body_timeout_ms = options_.body_timeout_s * 1000;
  o.body_min_rate = options_.body_min_rate;
  o.idle_timeout_ms = options_.idle_timeout_s * 1000;
  o.write_timeout_ms = options_.write_timeout_s * 1000;
  o.max_connections = options_.max_connections;
  o.max_connections_per_client = options_.max_connections_per_client;

  server_ = std::make_unique<http::Server>(std::move(o), make_server_hooks(options_, metrics_));
  return server_->start();
}

int HttpServer::port() const { return server_ ? server_->port() : 0; }

void HttpServer::shutdown(std::chrono::steady_clock::time_point deadline) {
  if (!server_) return;
  server_->begin_shutdown();
  server_->wait_idle(deadline);
  server_->stop();
}

void HttpServer::stop() {
  if (server_) server_->stop();
}

}  // namespace synapse::server
