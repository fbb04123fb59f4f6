// SPDX-License-Identifier: Apache-2.0
// The generation routes of the HTTP server: POST /v1/completions, /v1/chat/completions,
// /tokenize and /detokenize. Handlers run on HTTP threads and only parse, template, tokenize,
// submit to the Service and turn its events into JSON or server-sent events; they cancel the
// request when the client goes away.
#pragma once

#include "api/requests.h"
#include "http/router.h"
#include "server/inference.h"

namespace synapse::server {

void add_inference_routes(http::Router& router, const Inference& inference,
                          const api::RequestLimits& limits);

// The scheduling class of a request: the body's "priority" (already checked) when not empty,
// else the X-Synapse-Class header, else interactive. invalid_value for a bad header.
Result<serve::RequestClass> request_class(const std::string& priority, const http::Request& req);

}  // namespace synapse::server
