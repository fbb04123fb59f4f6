// SPDX-License-Identifier: Apache-2.0
// The HTTP handlers of the model endpoints (generation, embeddings, rerank, tokenize): each reads
// the scheduling-class header, hands the body to the request layer (request/), and writes what
// it returns: a JSON body, a stream of server-sent events, or an error with its status code and
// Retry-After. They probe their connection while a request runs, and a client that goes away
// cancels its work (logged as 499). Private to the server library.
#pragma once

#include <optional>

#include "api/requests.h"
#include "http/server.h"
#include "request/endpoints.h"
#include "request/model_directory.h"

namespace synapse::server {

// The handler of a kModel endpoint `kind` over `models` (which must outlive it); nullopt for a
// kind of another group.
std::optional<http::Handler> model_route(request::EndpointKind kind,
                                         const request::ModelDirectory& models,
                                         const api::RequestLimits& limits);

}  // namespace synapse::server
