// SPDX-License-Identifier: Apache-2.0
#include "api/embeddings.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/echo.h"
#include "base/json_body.h"

namespace synapse::api {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 4> kPoolings = {"mean", "cls", "last", "none"};

Status field_error(ErrorCode code, const std::string& field, const std::string& message) {
  return Status(code, message, ErrorWhere{.field = field});
}

// The value of `key`, or nullptr when absent or null (OpenAI treats null as "not given").
const Json* find(const Json& body, std::string_view key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

Result<Json> parse_object(std::string_view body, const RequestLimits& limits) {
  return parse_json_text<Json>(
      body, JsonLimits{.max_bytes = limits.max_body_bytes, .max_depth = limits.max_json_depth});
}

Status read_string(const Json& body, const char* key, std::string& out) {
  const Json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_string()) return field_error(ErrorCode::kInvalidType, key, "must be a string");
  out = v->get<std::string>();
  return ok_status();
}

Status read_bool(const Json& body, const char* key, bool& out) {
  const Json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_boolean()) return field_error(ErrorCode::kInvalidType, key, "must be a boolean");
  out = v->get<bool>();
  return ok_status();
}

// A name from `allowed` (the message lists them), or empty when absent.
template <typename Names>
Status read_name(const Json& body, const char* key, const Names& allowed,
                 const std::string& expected, std::string& out) {
  const Json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_string()) return field_error(ErrorCode::kInvalidType, key, "must be " + expected);
  const std::string name = v->get<std::string>();
  const bool known = std::any_of(std::begin(allowed), std::end(allowed),
                                 [&](std::string_view a) { return a == name; });
  if (!known) {
    return field_error(ErrorCode::kInvalidValue, key,
                       "must be " + expected + ", not '" + clip_for_echo(name) + "'");
  }
  out = name;
  return ok_status();
}

Status read_common(const Json& body, std::string& model, bool& truncate, std::string& priority) {
  SYN_RETURN_IF_ERROR(read_string(body, "model", model));
  SYN_RETURN_IF_ERROR(read_bool(body, "truncate", truncate));
  return read_name(body, "priority", kPriorityNames, "'interactive', 'batch' or 'background'",
                   priority);
}

Result<std::vector<int32_t>> token_list(const Json& v, const std::string& field) {
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    if (!v[i].is_number_integer()) {
      return field_error(ErrorCode::kInvalidType, item, "token ids must be integers");
    }
    // Compared as written: a uint64 above INT64_MAX read as int64_t would wrap negative.
    const bool in_range = v[i].is_number_unsigned()
                              ? v[i].get<uint64_t>() <= uint64_t{INT32_MAX}
                              : v[i].get<int64_t>() >= 0 && v[i].get<int64_t>() <= INT32_MAX;
    if (!in_range) {
      return field_error(ErrorCode::kInvalidValue, item,
                         "token id " + v[i].dump() + " outside the vocabulary");
    }
    ids.push_back(static_cast<int32_t>(v[i].get<int64_t>()));
  }
  if (ids.empty()) return field_error(ErrorCode::kInvalidValue, field, "empty token list");
  return ids;
}

Status non_empty_text(const std::string& text, const std::string& field, const char* what) {
  if (!text.empty()) return ok_status();
  return field_error(ErrorCode::kInvalidValue, field,
                     std::string("the ") + what + " is an empty string");
}

// OpenAI's `input`: a string, an array of strings, an array of token ids, or an array of
// token-id arrays.
Status read_input(const Json& body, EmbeddingsRequest& out) {
  const Json* input = find(body, "input");
  if (input == nullptr) {
    return field_error(ErrorCode::kMissingParameter, "input", "'input' is required");
  }
  if (input->is_string()) {
    out.texts.push_back(input->get<std::string>());
    return non_empty_text(out.texts.back(), "input", "input");
  }
  if (!input->is_array()) {
    return field_error(ErrorCode::kInvalidType, "input",
                       "must be a string, an array of strings, an array of token ids or an array "
                       "of token-id arrays");
  }
  if (input->empty()) return field_error(ErrorCode::kInvalidValue, "input", "the list is empty");
  if ((*input)[0].is_number_integer()) {
    SYN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, token_list(*input, "input"));
    out.tokens.push_back(std::move(ids));
    return ok_status();
  }
  const bool token_lists = (*input)[0].is_array();
  for (size_t i = 0; i < input->size(); ++i) {
    const std::string field = "input[" + std::to_string(i) + "]";
    const Json& item = (*input)[i];
    if (token_lists) {
      if (!item.is_array()) {
        return field_error(ErrorCode::kInvalidType, field,
                           "must be an array of token ids, like the other items");
      }
      SYN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, token_list(item, field));
      out.tokens.push_back(std::move(ids));
      continue;
    }
    if (!item.is_string()) {
      return field_error(ErrorCode::kInvalidType, field, "must be a string, like the other items");
    }
    out.texts.push_back(item.get<std::string>());
    SYN_RETURN_IF_ERROR(non_empty_text(out.texts.back(), field, "input"));
  }
  return ok_status();
}

Json float_array(const float* v, size_t n) {
  Json out = Json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(v[i]);
  return out;
}

Json embedding_json(const EmbeddingVector& e, bool base64) {
  if (base64) return base64_floats(e.values, e.n_values);
  if (!e.per_token || e.row_size == 0) return float_array(e.values, e.n_values);
  Json rows = Json::array();
  for (size_t at = 0; at + e.row_size <= e.n_values; at += e.row_size) {
    rows.push_back(float_array(e.values + at, e.row_size));
  }
  return rows;
}

std::string base64(const unsigned char* p, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < n) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0u);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace

Result<EmbeddingsRequest> parse_embeddings_request(std::string_view text,
                                                   const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json body, parse_object(text, limits));
  EmbeddingsRequest out;
  SYN_RETURN_IF_ERROR(read_input(body, out));
  std::string format;
  SYN_RETURN_IF_ERROR(read_name(body, "encoding_format",
                                std::array<std::string_view, 2>{"float", "base64"},
                                "\"float\" or \"base64\"", format));
  out.base64 = format == "base64";
  if (const Json* v = find(body, "dimensions")) {
    if (!v->is_number_integer()) {
      return field_error(ErrorCode::kInvalidType, "dimensions", "must be an integer");
    }
    const bool huge = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX};
    out.dimensions = huge ? INT64_MAX : v->get<int64_t>();
  }
  std::string pooling;
  SYN_RETURN_IF_ERROR(
      read_name(body, "pooling", kPoolings, "\"mean\", \"cls\", \"last\" or \"none\"", pooling));
  if (!pooling.empty()) out.pooling = pooling;
  SYN_RETURN_IF_ERROR(read_bool(body, "normalize", out.normalize));
  SYN_RETURN_IF_ERROR(read_common(body, out.model, out.truncate, out.priority));
  return out;
}

Result<RerankRequest> parse_rerank_request(std::string_view text, const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json body, parse_object(text, limits));
  RerankRequest out;
  SYN_RETURN_IF_ERROR(read_common(body, out.model, out.truncate, out.priority));
  const Json* query = find(body, "query");
  if (query == nullptr) {
    return field_error(ErrorCode::kMissingParameter, "query", "'query' is required");
  }
  if (!query->is_string()) return field_error(ErrorCode::kInvalidType, "query", "must be a string");
  out.query = query->get<std::string>();
  SYN_RETURN_IF_ERROR(non_empty_text(out.query, "query", "query"));
  const Json* docs = find(body, "documents");
  if (docs == nullptr) {
    return field_error(ErrorCode::kMissingParameter, "documents", "'documents' is required");
  }
  if (!docs->is_array()) {
    return field_error(ErrorCode::kInvalidType, "documents", "must be an array of strings");
  }
  if (docs->empty()) return field_error(ErrorCode::kInvalidValue, "documents", "the list is empty");
  for (size_t i = 0; i < docs->size(); ++i) {
    const Json& d = (*docs)[i];
    const std::string field = "documents[" + std::to_string(i) + "]";
    const Json* text_value = &d;  // Cohere also accepts {"text": ...}
    if (d.is_object() && d.contains("text")) text_value = &d["text"];
    if (!text_value->is_string()) {
      return field_error(ErrorCode::kInvalidType, field, "must be a string");
    }
    out.documents.push_back(text_value->get<std::string>());
    SYN_RETURN_IF_ERROR(non_empty_text(out.documents.back(), field, "document"));
  }
  if (const Json* v = find(body, "top_n")) {
    if (!v->is_number_integer()) {
      return field_error(ErrorCode::kInvalidType, "top_n", "must be an integer");
    }
    if (v->is_number_unsigned() ? v->get<uint64_t>() == 0 : v->get<int64_t>() < 1) {
      return field_error(ErrorCode::kInvalidValue, "top_n", "must be >= 1");
    }
    // More than the documents keeps them all.
    out.top_n = static_cast<size_t>(std::min<uint64_t>(
        v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>()),
        out.documents.size()));
  }
  SYN_RETURN_IF_ERROR(read_bool(body, "return_documents", out.return_documents));
  return out;
}

std::string embeddings_response(const std::vector<EmbeddingVector>& data, bool base64,
                                std::string_view model, int64_t prompt_tokens) {
  Json items = Json::array();
  for (size_t i = 0; i < data.size(); ++i) {
    items.push_back(
        {{"object", "embedding"}, {"index", i}, {"embedding", embedding_json(data[i], base64)}});
  }
  const Json out = {{"object", "list"},
                    {"data", std::move(items)},
                    {"model", model},
                    {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string rerank_response(const std::vector<RerankScore>& results,
                            const std::vector<std::string>* documents, std::string_view model,
                            int64_t prompt_tokens) {
  Json items = Json::array();
  for (const RerankScore& r : results) {
    Json one = {{"index", r.index}, {"relevance_score", r.score}};
    if (documents != nullptr && r.index < documents->size()) {
      one["document"] = {{"text", (*documents)[r.index]}};
    }
    items.push_back(std::move(one));
  }
  const Json out = {{"object", "list"},
                    {"model", model},
                    {"results", std::move(items)},
                    {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string base64_floats(const float* values, size_t n) {
  std::vector<unsigned char> bytes(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, values + i, sizeof bits);
    for (size_t b = 0; b < 4; ++b) {
      bytes[i * 4 + b] = static_cast<unsigned char>((bits >> (8 * b)) & 0xffu);
    }
  }
  return base64(bytes.data(), bytes.size());
}

}  // namespace synapse::api
