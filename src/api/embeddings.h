// SPDX-License-Identifier: Apache-2.0
// The wire formats of /v1/embeddings (OpenAI's shape, with llama-server's extensions `pooling`,
// `normalize`, `truncate` and Synapse's `priority`) and of /v1/rerank (the Jina/Cohere shape
// llama-server answers): request bodies parsed and validated into typed structs through the one
// bounded JSON entry point (size, nesting depth, duplicate keys, overflowing numbers), and the
// response bodies. Errors name the field ("input[2]"), as the other request parsers do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/requests.h"
#include "base/status.h"

namespace synapse::api {

struct EmbeddingsRequest {
  std::string model;  // empty: not given
  // `input`: texts, or token-id lists (OpenAI's array of ids, or array of id arrays); never
  // both, never empty, no empty item.
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> tokens;
  bool base64 = false;                 // encoding_format "base64" (little-endian float32)
  std::optional<int64_t> dimensions;   // only the model's own size is accepted (checked later)
  std::optional<std::string> pooling;  // "mean", "cls", "last" or "none"
  bool normalize = true;
  bool truncate = false;
  std::string priority;  // a checked class name, or empty
};

struct RerankRequest {
  std::string model;
  std::string query;
  std::vector<std::string> documents;  // strings, or Cohere's {"text": ...}
  size_t top_n = 0;                    // 0: every document
  bool return_documents = true;
  bool truncate = false;
  std::string priority;
};

// Errors: request_too_large (413), invalid_json, missing_parameter, invalid_type, invalid_value.
Result<EmbeddingsRequest> parse_embeddings_request(std::string_view body,
                                                   const RequestLimits& limits = {});
Result<RerankRequest> parse_rerank_request(std::string_view body, const RequestLimits& limits = {});

// One embedding: n_embd values (pooled), or n_tokens rows of n_embd (pooling none: nested arrays
// in float form; in base64, all rows in order).
struct EmbeddingVector {
  const float* values = nullptr;
  size_t n_values = 0;
  size_t row_size = 0;  // n_embd; n_values / row_size rows when per_token
  bool per_token = false;
};

std::string embeddings_response(const std::vector<EmbeddingVector>& data, bool base64,
                                std::string_view model, int64_t prompt_tokens);

struct RerankScore {
  size_t index = 0;  // the document's position in the request
  double score = 0.0;
};

// Results in the order given (best first); with `documents`, each result repeats its text.
std::string rerank_response(const std::vector<RerankScore>& results,
                            const std::vector<std::string>* documents, std::string_view model,
                            int64_t prompt_tokens);

// OpenAI's base64 encoding of embeddings: the floats' little-endian bytes.
std::string base64_floats(const float* values, size_t n);

}  // namespace synapse::api
