// SPDX-License-Identifier: Apache-2.0
// Embeddings and rerank without HTTP: a parsed /v1/embeddings or /v1/rerank request run on the
// named model's Service, each input (each query-document pair) a prefill-only request of the
// request's class beside any generation, and the JSON response rendered. The HTTP routes and the
// durable-job executor both call here. Blocks until the request ends; `cancelled`, when given,
// is polled every poll interval and once it says true the work is cancelled (`cancelled`).
// Errors: model_not_found, unsupported_parameter ("dimensions"; "pooling" cls/none on a decoder;
// "model" for rerank on a model without a classifier), context_length_exceeded ("input[i]",
// unless "truncate"), invalid_value, queue_full and unavailable (transient: retry later),
// cancelled.
#pragma once

#include <functional>
#include <string>

#include "api/embeddings.h"
#include "base/status.h"
#include "request/model_directory.h"
#include "serve/request.h"

namespace synapse::request {

Result<std::string> run_embeddings(const ModelDirectory& models,
                                   const api::EmbeddingsRequest& request,
                                   serve::RequestClass request_class,
                                   const std::function<bool()>& cancelled = {});

Result<std::string> run_rerank(const ModelDirectory& models, const api::RerankRequest& request,
                               serve::RequestClass request_class,
                               const std::function<bool()>& cancelled = {});

// Seconds a client refused for a full queue on `model_name`'s service should wait (1 when the
// model is unknown).
uint32_t retry_after_s(const ModelDirectory& models, const std::string& model_name,
                       serve::RequestClass request_class);

}  // namespace synapse::request
