// SPDX-License-Identifier: Apache-2.0
#include "server/http_server.h"

#include <cstdlib>

#include "api/api_error.h"
#include "api/requests.h"
#include "base/echo.h"
#include "http/router.h"
#include "request/endpoints.h"
#include "server/batch_routes.h"
#include "server/http_reply.h"
#include "server/job_routes.h"
#include "server/model_admin_routes.h"
#include "server/model_routes.h"
#include "server/ollama_routes.h"
#include "server/web_routes.h"

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

// Every path but the table's open ones (/health) needs the key when one is set. Runs on the request
// head, before the body is read: an unauthenticated client cannot make the server read (or wait
// for) a body.
std::optional<http::Response> check_api_key(const std::string& key, const http::Request& head) {
  if (key.empty()) return std::nullopt;
  const request::Endpoint* endpoint = request::find_endpoint(head.path);
  if (endpoint != nullptr && endpoint->open) return std::nullopt;
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

// CORS (--cors-origin): the value of Access-Control-Allow-Origin for this request, or empty
// when its origin is not allowed (or it has none).
std::string cors_allow_origin(const std::vector<std::string>& allowed, const http::Request& req) {
  if (allowed.empty() || !req.has_header("Origin")) return "";
  const std::string origin = req.header("Origin");
  for (const std::string& a : allowed) {
    if (a == "*") return "*";
    if (a == origin) return origin;
  }
  return "";
}

bool cors_preflight(const std::vector<std::string>& allowed, const http::Request& req) {
  return req.method == "OPTIONS" && req.has_header("Access-Control-Request-Method") &&
         !cors_allow_origin(allowed, req).empty();
}

// Errors the HTTP layer answers itself (a malformed request, a timeout, a limit), in OpenAI's
// shape with the layer's stable code.
http::Response protocol_error(int http_status, std::string_view code, const std::string& message) {
  http::Response res;
  send_api_error(res, api::api_error_from_code_name(http_status, code, message));
  return res;
}

// The handler of a server endpoint (health, the model list, metrics).
http::Handler server_route(request::EndpointKind kind, const ServerOptions& options,
                           const HttpMetrics& metrics) {
  const request::ModelDirectory* models = options.models;
  switch (kind) {
    case request::EndpointKind::kHealth:
      return [](const http::Request&, http::Response& res) {
        res.set_content(R"({"status":"ok"})", std::string(kJson));
      };
    case request::EndpointKind::kListModels:
      return [models](const http::Request&, http::Response& res) {
        res.set_content(api::models_response(models != nullptr ? models->model_infos()
                                                               : std::vector<api::ModelInfo>{}),
                        std::string(kJson));
      };
    default:  // kMetrics: every model's service metrics, the job executor's, the HTTP counts.
      return [&metrics, models, jobs = options.jobs](const http::Request&, http::Response& res) {
        std::string text = models != nullptr ? models->render_prometheus() : "";
        if (jobs != nullptr && jobs->render_metrics) text += jobs->render_metrics();
        text += metrics.render_prometheus();
        res.set_content(text, "text/plain; version=0.0.4");
      };
  }
}

// The handler of `endpoint` when `options` serves its group.
std::optional<http::Handler> route_for(const request::Endpoint& endpoint,
                                       const ServerOptions& options, const HttpMetrics& metrics,
                                       const api::RequestLimits& limits) {
  switch (endpoint.group) {
    case request::EndpointGroup::kServer:
      if (auto handler = web_route(endpoint.kind)) return handler;
      return server_route(endpoint.kind, options, metrics);
    case request::EndpointGroup::kModel: {
      if (options.models == nullptr) return std::nullopt;
      if (auto handler = model_route(endpoint.kind, *options.models, limits)) return handler;
      if (auto handler = model_admin_route(endpoint.kind, options.admin, limits)) return handler;
      std::optional<http::Handler> handler =
          ollama_route(endpoint.kind, *options.models, options.admin, limits);
      // GET / is Ollama's probe and the web UI's page: browsers get the page.
      if (handler && endpoint.kind == request::EndpointKind::kOllamaRoot) {
        return web_root(*handler);
      }
      return handler;
    }
    case request::EndpointGroup::kJobs:
      if (options.jobs == nullptr || options.jobs->store == nullptr) return std::nullopt;
      if (auto handler = job_route(endpoint.kind, *options.jobs)) return handler;
      return batch_route(endpoint.kind, *options.jobs);
  }
  return std::nullopt;
}

}  // namespace

http::Router build_routes(const ServerOptions& options, const HttpMetrics& metrics) {
  api::RequestLimits limits;
  limits.max_body_bytes = options.max_body_bytes;
  http::Router router;
  for (const request::Endpoint& endpoint : request::endpoints()) {
    std::optional<http::Handler> handler = route_for(endpoint, options, metrics, limits);
    if (handler) router.add(std::string(endpoint.method), std::string(endpoint.path), *handler);
  }
  return router;
}

http::ServerHooks make_server_hooks(const ServerOptions& options, HttpMetrics& metrics) {
  auto router = std::make_shared<const http::Router>(build_routes(options, metrics));
  http::ServerHooks hooks;
  hooks.handler = [router, cors = options.cors_origins](http::Request& req, http::Response& res) {
    if (const std::string allow = cors_allow_origin(cors, req); !allow.empty()) {
      res.set_header("Access-Control-Allow-Origin", allow);
      if (allow != "*") res.set_header("Vary", "Origin");
      if (cors_preflight(cors, req)) {
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        const std::string asked = req.header("Access-Control-Request-Headers");
        res.set_header("Access-Control-Allow-Headers",
                       asked.empty() ? "Authorization, Content-Type" : asked);
        res.set_header("Access-Control-Max-Age", "600");
        return;
      }
    }
    const http::Router::Match match = router->match(req);
    switch (match.kind) {
      case http::Router::Match::Kind::kFound:
        return match.route->handler(req, res);
      case http::Router::Match::Kind::kMethodNotAllowed:
        send_error(res, Status(ErrorCode::kMethodNotAllowed, "method " + clip_for_echo(req.method) +
                                                                 " not allowed; this path takes " +
                                                                 match.allow));
        res.set_header("Allow", match.allow);
        return;
      case http::Router::Match::Kind::kNotFound:
        return send_error(
            res, Status(ErrorCode::kNotFound,
                        "no route " + clip_for_echo(req.method) + " " + clip_for_echo(req.path)));
    }
  };
  hooks.gate = [key = options.api_key, cors = options.cors_origins](const http::Request& head) {
    if (cors_preflight(cors, head)) return std::optional<http::Response>();
    std::optional<http::Response> refused = check_api_key(key, head);
    // An allowed page may read why it was refused.
    const std::string allow = cors_allow_origin(cors, head);
    if (refused && !allow.empty()) refused->set_header("Access-Control-Allow-Origin", allow);
    return refused;
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
