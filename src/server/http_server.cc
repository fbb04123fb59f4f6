// SPDX-License-Identifier: Apache-2.0
#include "server/http_server.h"

#include <httplib.h>

#include <chrono>
#include <cstdlib>

#include "api/api_error.h"
#include "api/requests.h"
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

}  // namespace

std::string resolve_api_key(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  // Read once at start-up, before any thread that could change the environment exists.
  const char* env = std::getenv("SYNAPSE_API_KEY");  // NOLINT(concurrency-mt-unsafe)
  return env != nullptr ? std::string(env) : std::string();
}

struct HttpServer::Impl {
  httplib::Server http;
  std::atomic<bool> listen_returned{false};
  socket_t listen_socket = INVALID_SOCKET;
};

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  httplib::Server& http = impl_->http;
  const int threads = std::max(1, options_.threads);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_payload_max_length(options_.max_body_bytes);
  http.set_read_timeout(options_.read_timeout_s, 0);
  http.set_write_timeout(options_.write_timeout_s, 0);
  http.set_keep_alive_max_count(100);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second server
  // bind the same port and silently take half the connections.
  http.set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    impl_->listen_socket = sock;
  });

  // Authentication before routing: every path but /health needs the key when one is set.
  const std::string key = options_.api_key;
  http.set_pre_routing_handler([key](const httplib::Request& req, httplib::Response& res) {
    if (key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    const std::string header = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    const bool ok = header.size() > kBearer.size() &&
                    header.compare(0, kBearer.size(), kBearer) == 0 &&
                    same_key(std::string_view(header).substr(kBearer.size()), key);
    if (ok) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, Status(ErrorCode::kInvalidApiKey,
                           header.empty() ? "missing API key (send 'Authorization: Bearer <key>')"
                                          : "invalid API key"));
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  });

  http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", std::string(kJson));
  });
  const std::string models = api::models_response(options_.models);
  http.Get("/v1/models", [models](const httplib::Request&, httplib::Response& res) {
    res.set_content(models, std::string(kJson));
  });

  const Inference* inference = options_.inference;
  if (inference != nullptr) {
    api::RequestLimits limits;
    limits.max_body_bytes = options_.max_body_bytes;
    add_inference_routes(http, *inference, limits);
    add_embedding_routes(http, nullptr, inference, limits);
    add_wrong_model_routes(http, inference->model_id, /*generation=*/false);
  }
  if (options_.embeddings != nullptr) {
    api::RequestLimits limits;
    limits.max_body_bytes = options_.max_body_bytes;
    add_embedding_routes(http, options_.embeddings, nullptr, limits);
    add_wrong_model_routes(http, options_.embeddings->model_id, /*generation=*/true);
  }
  if (options_.jobs != nullptr && options_.jobs->store != nullptr) {
    add_job_routes(http, *options_.jobs);
    add_batch_routes(http, *options_.jobs);
  }
  // The service's metrics (when there is one) and the HTTP counts.
  http.Get("/metrics", [this, inference](const httplib::Request&, httplib::Response& res) {
    std::string text = inference != nullptr ? inference->service->render_prometheus() : "";
    text += metrics_.render_prometheus();
    res.set_content(text, "text/plain; version=0.0.4");
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count(req.path, res.status);
  });

  // Anything else, and errors httplib raises itself (413 for a body over the limit), in
  // OpenAI's error shape.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler already wrote its error
    if (res.status == 413) {
      send_error(res, Status(ErrorCode::kRequestTooLarge, "request body too large"));
    } else if (res.status == 404) {
      send_error(res, Status(ErrorCode::kNotFound, "no route " + req.method + " " + req.path));
    } else if (res.status == 405) {
      send_error(res, Status(ErrorCode::kInvalidArgument, "method not allowed"));
      res.status = 405;
    }
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
        send_error(res, Status(ErrorCode::kInternal, "internal error"));
      });

  if (options_.port == 0) {
    port_ = http.bind_to_any_port(options_.host);
  } else {
    port_ = http.bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    return Status(ErrorCode::kUnavailable,
                  "cannot listen on " + options_.host + ":" + std::to_string(options_.port));
  }
  // httplib 0.11 listens with a backlog of 5: a burst of clients (200 at once) would have their
  // connections dropped and retried for seconds before anyone can answer them, even with a 429.
  // listen() again on the bound socket raises it.
  if (impl_->listen_socket != INVALID_SOCKET) ::listen(impl_->listen_socket, SOMAXCONN);
  running_ = true;
  listener_ = std::thread([this] {
    impl_->http.listen_after_bind();
    impl_->listen_returned = true;
  });
  // httplib 0.11's stop() does nothing until the accept loop runs, so a stop() right after
  // start() would leave the loop running forever; wait for it (milliseconds).
  while (!http.is_running() && !impl_->listen_returned)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return ok_status();
}

void HttpServer::stop() {
  if (!running_.exchange(false)) return;
  impl_->http.stop();  // closes the listening socket; the pool finishes requests in flight
  if (listener_.joinable()) listener_.join();
}

}  // namespace synapse::server
