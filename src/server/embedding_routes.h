// SPDX-License-Identifier: Apache-2.0
// The embedding routes of the HTTP server: POST /v1/embeddings (OpenAI's shape: string, string
// array, token-id array or arrays of token-id arrays; encoding_format float or base64;
// extensions `pooling`, `normalize`, `truncate`, `priority`) and POST /v1/rerank (also /rerank;
// the Jina/Cohere shape llama-server answers) for a BERT-family cross-encoder. Every model runs
// them on its one Service: each input (each query-document pair) a prefill-only request
// scheduled with the request's class beside any generation. Handlers parse, submit and wait,
// watching their connection (a client that goes away cancels its requests). Asked of a model
// that cannot do it (rerank without a classifier, generation on an encoder), a route answers 400
// unsupported_parameter naming "model".
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "api/requests.h"
#include "base/status.h"
#include "http/router.h"
#include "serve/request.h"
#include "server/inference.h"

namespace synapse::server {

// What POST /v1/embeddings does, without HTTP: the route calls it, and so can anything that
// runs embedding requests another way (the durable-jobs executor, for items whose url is
// /v1/embeddings). Parses `body` (the OpenAI request described above), runs it on the
// inference's Service and returns the exact JSON response body the route sends; `inference`
// must outlive the call. It runs in `request_class`, whatever the body's "priority" says (the
// route passes the body's priority, else X-Synapse-Class; a job item its job's class, as
// run_generation_request does). Blocks until the request ends. `cancelled`, when given, is
// polled every 50 ms while waiting; once it returns true the request's work is cancelled and
// the result is `cancelled`.
// Errors are the Status the route maps to HTTP with api::api_error_from_status: invalid_json,
// invalid_type, invalid_value, missing_parameter (naming the field), model_not_found,
// unsupported_parameter ("dimensions", "pooling" cls/none on a decoder),
// context_length_exceeded ("input[i]", unless "truncate"), queue_full and unavailable
// (transient: retry later; the route adds Retry-After), cancelled.
Result<std::string> run_embeddings_request(const Inference& inference, std::string_view body,
                                           serve::RequestClass request_class,
                                           const std::function<bool()>& cancelled = {});

// Registers /v1/embeddings and /v1/rerank (and /rerank).
void add_embedding_routes(http::Router& router, const Inference& inference,
                          const api::RequestLimits& limits);

// The generation routes of a model that does not generate (a bidirectional encoder): 400
// unsupported_parameter naming "model".
void add_wrong_model_routes(http::Router& router, const std::string& model_id);

}  // namespace synapse::server
