// SPDX-License-Identifier: Apache-2.0
// The HTTP handler of the OpenAI-style model-store endpoint POST /v1/models/pull: it parses the
// body (api/model_pull.h), runs the request layer's pull pipeline (request/model_pull.h, the one
// Ollama's /api/pull runs too) and writes server-sent progress events through send_stream, or
// one JSON object when not streaming, or OpenAI's error with its status. Private to the server
// library.
#pragma once

#include <optional>

#include "api/requests.h"
#include "http/server.h"
#include "request/endpoints.h"
#include "request/model_pull.h"

namespace synapse::server {

// The handler of `kind` over `admin` (which must outlive it; null: this server manages no store,
// answered as unsupported); nullopt for a kind that is not a model-store endpoint.
std::optional<http::Handler> model_admin_route(request::EndpointKind kind,
                                               const request::ModelAdmin* admin,
                                               const api::RequestLimits& limits);

}  // namespace synapse::server
