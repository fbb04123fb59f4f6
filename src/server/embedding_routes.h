// SPDX-License-Identifier: Apache-2.0
// The embedding routes of the HTTP server, for an encoder (BERT-family) model: POST
// /v1/embeddings (OpenAI's shape: string, string array, token-id array or arrays of token-id
// arrays; encoding_format float or base64; extensions `pooling`, `normalize`, `truncate`) and
// POST /v1/rerank (also /rerank; the Jina/Cohere shape llama-server answers). Handlers parse,
// submit to the EmbeddingService and wait, watching their connection (a client that goes away
// cancels its request). Also the routes that tell a client it asked the wrong kind of model:
// generation routes on an embedding server and embedding routes on a generation server answer
// 400 unsupported_parameter naming "model". Private to the server library (httplib types).
#pragma once

#include <httplib.h>

#include <string>

#include "api/requests.h"
#include "server/inference.h"

namespace synapse::server {

void add_embedding_routes(httplib::Server& http, const Embeddings& embeddings,
                          const api::RequestLimits& limits);

// Routes that answer "this server's model does not do that": `generation` true registers the
// generation routes (the model embeds), false the embedding routes (the model generates).
void add_wrong_model_routes(httplib::Server& http, const std::string& model_id, bool generation);

}  // namespace synapse::server
