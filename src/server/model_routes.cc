// SPDX-License-Identifier: Apache-2.0
#include "server/model_routes.h"

#include <functional>
#include <memory>

#include "api/embeddings.h"
#include "request/embeddings.h"
#include "request/generation.h"
#include "request/tokens.h"
#include "server/http_reply.h"

namespace synapse::server {
namespace {

using request::EndpointKind;

// Status logged (and counted in /metrics) for a request whose client went away first; nginx's
// "client closed request".
constexpr int kClientClosedRequest = 499;

std::optional<std::string> class_header(const http::Request& req) {
  if (!req.has_header(std::string(request::kClassHeader))) return std::nullopt;
  return req.header(std::string(request::kClassHeader));
}

// An error of a request that ran: nothing when its client went away first (499), else the status,
// with the scheduler's retry delay when the code is transient (send_error ignores it otherwise).
void send_failure(http::Response& res, const Status& s, uint32_t retry_s) {
  if (s.code() == ErrorCode::kCancelled) {
    res.status = kClientClosedRequest;
    return;
  }
  send_error(res, s, retry_s * 1000);
}

void generation(EndpointKind kind, const request::ModelDirectory& models,
                const api::RequestLimits& limits, const http::Request& req, http::Response& res) {
  const request::ClassChoice choose = [&req](const std::string& priority) {
    return request::choose_request_class(priority, class_header(req));
  };
  Result<request::GenerationCall> call =
      request::prepare_generation(kind, models, req.body, choose, limits);
  if (!call.ok()) return send_error(res, call.status());
  if (std::optional<std::string> answer = request::answer_without_running(*call)) {
    return res.set_content(std::move(*answer),
                           call->stream.stream ? "text/event-stream" : std::string(kJson));
  }
  Result<std::shared_ptr<serve::RequestHandle>> handle = request::submit_generation(*call);
  if (!handle.ok()) return send_failure(res, handle.status(), request::retry_after_s(*call));
  if (call->stream.stream) {
    return send_stream(res, "text/event-stream",
                       std::make_shared<request::GenerationStream>(std::move(*call), *handle));
  }
  bool client_gone = false;
  Result<std::string> body = request::collect_generation(*call, **handle, [&] {
    client_gone = req.client_gone();
    return client_gone;
  });
  if (client_gone) {
    res.status = kClientClosedRequest;
    return;
  }
  if (!body.ok()) return send_failure(res, body.status(), request::retry_after_s(*call));
  res.set_content(std::move(*body), std::string(kJson));
}

// An embeddings or rerank request: `parse` reads the body, `run` does the work in the class the
// body or the header names, watching the connection.
template <typename Body>
void prefill_route(Result<Body> (*parse)(std::string_view, const api::RequestLimits&),
                   Result<std::string> (*run)(const request::ModelDirectory&, const Body&,
                                              serve::RequestClass, const std::function<bool()>&),
                   const request::ModelDirectory& models, const api::RequestLimits& limits,
                   const http::Request& req, http::Response& res) {
  Result<Body> body = parse(req.body, limits);
  if (!body.ok()) return send_error(res, body.status());
  Result<serve::RequestClass> c = request::choose_request_class(body->priority, class_header(req));
  if (!c.ok()) return send_error(res, c.status());
  Result<std::string> out = run(models, *body, *c, [&req] { return req.client_gone(); });
  if (!out.ok()) {
    return send_failure(res, out.status(), request::retry_after_s(models, body->model, *c));
  }
  res.set_content(std::move(*out), std::string(kJson));
}

}  // namespace

std::optional<http::Handler> model_route(EndpointKind kind, const request::ModelDirectory& models,
                                         const api::RequestLimits& limits) {
  const request::ModelDirectory* m = &models;
  switch (kind) {
    case EndpointKind::kCompletions:
    case EndpointKind::kChatCompletions:
      return [m, limits, kind](const http::Request& req, http::Response& res) {
        generation(kind, *m, limits, req, res);
      };
    case EndpointKind::kEmbeddings:
      return [m, limits](const http::Request& req, http::Response& res) {
        prefill_route(&api::parse_embeddings_request, &request::run_embeddings, *m, limits, req,
                      res);
      };
    case EndpointKind::kRerank:
      return [m, limits](const http::Request& req, http::Response& res) {
        prefill_route(&api::parse_rerank_request, &request::run_rerank, *m, limits, req, res);
      };
    case EndpointKind::kTokenize:
    case EndpointKind::kDetokenize:
      return [m, limits, kind](const http::Request& req, http::Response& res) {
        Result<std::string> out = kind == EndpointKind::kTokenize
                                      ? request::run_tokenize(*m, req.body, limits)
                                      : request::run_detokenize(*m, req.body, limits);
        if (!out.ok()) return send_error(res, out.status());
        res.set_content(std::move(*out), std::string(kJson));
      };
    default:
      return std::nullopt;
  }
}

}  // namespace synapse::server
