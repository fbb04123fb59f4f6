// SPDX-License-Identifier: Apache-2.0
// One generation request run without HTTP, as a durable job's item runs: the same parsing,
// validation, templating and response JSON as POST /v1/completions and /v1/chat/completions
// (inference_routes.cc holds both, so they cannot drift apart), submitted to the same Service.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "api/requests.h"
#include "base/status.h"
#include "serve/request.h"
#include "server/inference.h"

namespace synapse::server {

// Runs `body` as a request to `url` (/v1/completions or /v1/chat/completions; another url is
// unsupported_parameter on field "url") in `request_class`, whatever the body's "priority" says,
// and returns the JSON response the route would send. Errors are the Status the route would
// answer with (queue_full included: the caller decides whether to wait and retry); a body asking
// to stream is unsupported_parameter. `cancelled` is asked every 50 ms while the request runs;
// when it says true the request is cancelled (its slot is freed within one engine step) and the
// result is `cancelled`. Blocks the calling thread until the request ends.
Result<std::string> run_generation_request(const Inference& inference, std::string_view url,
                                           std::string_view body, serve::RequestClass request_class,
                                           const std::function<bool()>& cancelled,
                                           const api::RequestLimits& limits = {});

}  // namespace synapse::server
