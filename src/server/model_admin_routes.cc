// SPDX-License-Identifier: Apache-2.0
#include "server/model_admin_routes.h"

#include <memory>

#include "api/model_pull.h"
#include "server/http_reply.h"

namespace synapse::server {
namespace {

// Status logged (and counted in /metrics) for a request whose client went away first.
constexpr int kClientClosedRequest = 499;

const request::ModelAdmin kNoStore;  // answers that this server manages no store

void pull(const request::ModelAdmin& admin, const api::RequestLimits& limits,
          const http::Request& req, http::Response& res) {
  Result<api::ModelPullRequest> body = api::parse_model_pull_request(req.body, limits);
  if (!body.ok()) return send_error(res, body.status());
  // Refused before any event is sent, with its status code, when nothing could be pulled.
  if (const Status s = request::check_model_admin(admin); !s.ok()) return send_error(res, s);
  request::ModelPullRequest pull{std::move(body->model), std::move(body->file)};
  if (body->stream) {
    return send_stream(res, "text/event-stream",
                       std::make_shared<request::ModelPullStream>(admin, std::move(pull)));
  }
  Result<request::ModelPulled> pulled = request::pull_model(
      admin, pull, [&req](const request::ModelPullEvent&) { return !req.client_gone(); });
  if (!pulled.ok() && pulled.status().code() == ErrorCode::kCancelled) {
    res.status = kClientClosedRequest;
    return;
  }
  if (!pulled.ok()) return send_error(res, pulled.status());
  res.set_content(
      api::model_pull_done({pulled->name, pulled->digest, pulled->bytes, pulled->source}),
      std::string(kJson));
}

}  // namespace

std::optional<http::Handler> model_admin_route(request::EndpointKind kind,
                                               const request::ModelAdmin* admin,
                                               const api::RequestLimits& limits) {
  const request::ModelAdmin* a = admin != nullptr ? admin : &kNoStore;
  switch (kind) {
    case request::EndpointKind::kPullModel:
      return [a, limits](const http::Request& req, http::Response& res) {
        pull(*a, limits, req, res);
      };
    default:
      return std::nullopt;
  }
}

}  // namespace synapse::server
