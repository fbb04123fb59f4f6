// SPDX-License-Identifier: Apache-2.0
// The HTTP handlers of Ollama's API (/api/*, and GET / answering "Ollama is running" as clients
// probe it): each parses (api/ollama.h), hands the request to the request layer
// (request/ollama.h) and writes what it returns: one JSON object, an NDJSON stream
// (application/x-ndjson, one object per line), or {"error": "..."} with Ollama's status code.
// Streams watch their connection; a client that goes away cancels its work. Private to the
// server library.
#pragma once

#include <optional>

#include "api/requests.h"
#include "http/server.h"
#include "request/endpoints.h"
#include "request/model_directory.h"
#include "request/ollama_models.h"

namespace synapse::server {

// The handler of an Ollama endpoint `kind` over `models` (which must outlive it, as `admin`: the
// store pull, delete and copy manage; null: none); nullopt for a kind that is not Ollama's.
std::optional<http::Handler> ollama_route(request::EndpointKind kind,
                                          const request::ModelDirectory& models,
                                          const request::ModelAdmin* admin,
                                          const api::RequestLimits& limits);

}  // namespace synapse::server
