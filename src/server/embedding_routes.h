// SPDX-License-Identifier: Apache-2.0
// The embedding routes of the HTTP server: POST /v1/embeddings (OpenAI's shape: string, string
// array, token-id array or arrays of token-id arrays; encoding_format float or base64;
// extensions `pooling`, `normalize`, `truncate`, `priority`) for a BERT-family model (through
// the EmbeddingService) or a decoder model (through the generation Service: prefill-only
// requests scheduled with the request's class beside generation), and POST /v1/rerank (also
// /rerank; the Jina/Cohere shape llama-server answers) for a BERT-family reranker. Handlers
// parse, submit and wait, watching their connection (a client that goes away cancels its
// request). Also the routes that tell a client it asked the wrong kind of model: generation
// routes on an encoder and rerank on a decoder answer 400 unsupported_parameter naming "model".
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
// /v1/embeddings). Parses `body` (the OpenAI request described above), runs it on the BERT
// EmbeddingService (`bert`) or, for a decoder model, on the generation Service (`decoder`), and
// returns the exact JSON response body the route sends. Exactly one of `bert` and `decoder` is
// given; both must outlive the call. It runs in `request_class`, whatever the body's "priority"
// says (the route passes the body's priority, else X-Synapse-Class; a job item its job's class,
// as run_generation_request does): decoder inputs through the Service's scheduler, BERT requests
// through the EmbeddingService's class-ordered queue. Blocks until the request ends.
// `cancelled`, when given, is polled every 50 ms while waiting; once it returns true the
// request's work is cancelled and the result is `cancelled`.
// Errors are the Status the route maps to HTTP with api::api_error_from_status: invalid_json,
// invalid_type, invalid_value, missing_parameter (naming the field), model_not_found,
// unsupported_parameter ("dimensions", "pooling" cls/none on a decoder),
// context_length_exceeded ("input[i]", unless "truncate"), queue_full and unavailable
// (transient: retry later; the route adds Retry-After), cancelled.
Result<std::string> run_embeddings_request(const Embeddings* bert, const Inference* decoder,
                                           std::string_view body, serve::RequestClass request_class,
                                           const std::function<bool()>& cancelled = {});

// Registers /v1/embeddings on `bert` or `decoder` (one of them), and /v1/rerank for `bert`.
void add_embedding_routes(http::Router& router, const Embeddings* bert, const Inference* decoder,
                          const api::RequestLimits& limits);

// Routes that answer "this server's model does not do that": `generation` true registers the
// generation routes (an encoder model), false the rerank routes (a decoder model).
void add_wrong_model_routes(http::Router& router, const std::string& model_id, bool generation);

}  // namespace synapse::server
