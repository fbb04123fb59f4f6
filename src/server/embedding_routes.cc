// SPDX-License-Identifier: Apache-2.0
#include "server/embedding_routes.h"

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/api_error.h"
#include "base/echo.h"
#include "base/json_body.h"
#include "encoder/embedder.h"
#include "server/http_reply.h"
#include "server/inference_routes.h"

namespace synapse::server {
namespace {

using Json = nlohmann::ordered_json;
using namespace std::chrono_literals;

// How often a waiting handler looks at its connection (as the generation routes do).
constexpr auto kPollInterval = 50ms;
constexpr int kClientClosedRequest = 499;

Status field_error(ErrorCode code, const std::string& field, const std::string& message) {
  return Status(code, message, ErrorWhere{.field = field});
}

// The Embedder names bad input invalid_argument; the API's code for it is invalid_value.
Status api_status(const Status& s) {
  if (s.code() != ErrorCode::kInvalidArgument) return s;
  return Status(ErrorCode::kInvalidValue, s.message(), s.where());
}

// Every body goes through the one JSON entry point (size, depth, duplicate keys, overflowing
// numbers); the HTTP server bounds the body's size before this.
Result<Json> parse_object(std::string_view body) { return parse_json_body(body, JsonLimits{}); }

Status check_model(const Json& body, const std::string& model_id) {
  const auto it = body.find("model");
  if (it == body.end() || it->is_null()) return ok_status();
  if (!it->is_string()) return field_error(ErrorCode::kInvalidType, "model", "must be a string");
  const std::string model = it->get<std::string>();
  if (model.empty() || model == model_id) return ok_status();
  return field_error(ErrorCode::kModelNotFound, "model",
                     "the model '" + clip_for_echo(model) +
                         "' does not exist; this server serves '" + model_id + "'");
}

Result<bool> optional_bool(const Json& body, const char* field, bool fallback) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return field_error(ErrorCode::kInvalidType, field, "must be a boolean");
  return it->get<bool>();
}

bool is_token_id(const Json& v) { return v.is_number_integer(); }

Result<std::vector<int32_t>> token_list(const Json& v, const std::string& field) {
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!is_token_id(v[i])) {
      return field_error(ErrorCode::kInvalidType, field + "[" + std::to_string(i) + "]",
                         "token ids must be integers");
    }
    // Quoted as written: a uint64 above INT64_MAX read as int64_t would wrap negative.
    const bool in_range = v[i].is_number_unsigned()
                              ? v[i].get<uint64_t>() <= uint64_t{INT32_MAX}
                              : v[i].get<int64_t>() >= 0 && v[i].get<int64_t>() <= INT32_MAX;
    if (!in_range) {
      return field_error(ErrorCode::kInvalidValue, field + "[" + std::to_string(i) + "]",
                         "token id " + v[i].dump() + " outside the vocabulary");
    }
    const int64_t id = v[i].get<int64_t>();
    ids.push_back(static_cast<int32_t>(id));
  }
  if (ids.empty()) return field_error(ErrorCode::kInvalidValue, field, "empty token list");
  return ids;
}

// The inputs and options of an embedding request.
struct EmbeddingJob {
  enum class Kind { kEmbedText, kEmbedTokens };
  Kind kind = Kind::kEmbedText;
  std::vector<std::string> texts;            // kEmbedText
  std::vector<std::vector<int32_t>> tokens;  // kEmbedTokens
  EmbedOptions options;
  serve::RequestClass request_class = serve::RequestClass::kInteractive;
};

// OpenAI's `input`: a string, an array of strings, an array of token ids, or an array of
// token-id arrays.
Status parse_input(const Json& body, EmbeddingJob& job) {
  const auto it = body.find("input");
  if (it == body.end() || it->is_null()) {
    return field_error(ErrorCode::kMissingParameter, "input", "'input' is required");
  }
  const Json& input = *it;
  if (input.is_string()) {
    job.kind = EmbeddingJob::Kind::kEmbedText;
    job.texts.push_back(input.get<std::string>());
    if (job.texts.back().empty()) {
      return field_error(ErrorCode::kInvalidValue, "input", "the input is an empty string");
    }
    return ok_status();
  }
  if (!input.is_array()) {
    return field_error(ErrorCode::kInvalidType, "input",
                       "must be a string, an array of strings, an array of token ids or an array "
                       "of token-id arrays");
  }
  if (input.empty()) return field_error(ErrorCode::kInvalidValue, "input", "the list is empty");
  if (is_token_id(input[0])) {
    job.kind = EmbeddingJob::Kind::kEmbedTokens;
    SYN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, token_list(input, "input"));
    job.tokens.push_back(std::move(ids));
    return ok_status();
  }
  job.kind =
      input[0].is_array() ? EmbeddingJob::Kind::kEmbedTokens : EmbeddingJob::Kind::kEmbedText;
  for (size_t i = 0; i < input.size(); ++i) {
    const std::string field = "input[" + std::to_string(i) + "]";
    if (job.kind == EmbeddingJob::Kind::kEmbedTokens) {
      if (!input[i].is_array()) {
        return field_error(ErrorCode::kInvalidType, field,
                           "must be an array of token ids, like the other items");
      }
      SYN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, token_list(input[i], field));
      job.tokens.push_back(std::move(ids));
      continue;
    }
    if (!input[i].is_string()) {
      return field_error(ErrorCode::kInvalidType, field, "must be a string, like the other items");
    }
    job.texts.push_back(input[i].get<std::string>());
    if (job.texts.back().empty()) {
      return field_error(ErrorCode::kInvalidValue, field, "the input is an empty string");
    }
  }
  return ok_status();
}

std::string base64(const void* data, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
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

// Little-endian float32 bytes, as OpenAI's base64 encoding (and its SDKs' decoders) define it.
std::string base64_floats(const float* v, size_t n) {
  std::string bytes(n * sizeof(float), '\0');
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, v + i, sizeof bits);
    for (size_t b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  return base64(bytes.data(), bytes.size());
}

Json float_array(const float* v, size_t n) {
  Json out = Json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(v[i]);
  return out;
}

// One item: a vector, or for pooling none one vector per token (base64: all rows in order).
Json embedding_json(const EmbedResult& r, const EmbeddingItem& item, bool b64) {
  if (b64) return base64_floats(item.values.data(), item.values.size());
  if (r.pooling != PoolingType::kNone) return float_array(item.values.data(), r.n_embd);
  Json rows = Json::array();
  for (size_t t = 0; t < item.n_tokens; ++t) {
    rows.push_back(float_array(item.values.data() + t * r.n_embd, r.n_embd));
  }
  return rows;
}

// What /v1/embeddings reads besides the model: the inputs and options, the encoding and the
// scheduling class.
struct EmbeddingsBody {
  EmbeddingJob job;
  bool base64 = false;
  std::optional<serve::RequestClass> priority;
};

Result<EmbeddingsBody> parse_embeddings_body(const Json& body, size_t n_embd) {
  EmbeddingsBody out;
  SYN_RETURN_IF_ERROR(parse_input(body, out.job));
  if (const auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) {
      return field_error(ErrorCode::kInvalidType, "encoding_format",
                         "must be \"float\" or \"base64\"");
    }
    const std::string format = it->get<std::string>();
    if (format != "float" && format != "base64") {
      return field_error(ErrorCode::kInvalidValue, "encoding_format",
                         "must be \"float\" or \"base64\", not '" + clip_for_echo(format) + "'");
    }
    out.base64 = format == "base64";
  }
  if (const auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer()) {
      return field_error(ErrorCode::kInvalidType, "dimensions", "must be an integer");
    }
    if (it->get<int64_t>() != static_cast<int64_t>(n_embd)) {
      return field_error(ErrorCode::kUnsupportedParameter, "dimensions",
                         "this model's embeddings have " + std::to_string(n_embd) +
                             " dimensions; shortening them is not supported");
    }
  }
  if (const auto it = body.find("pooling"); it != body.end() && !it->is_null()) {
    const std::optional<PoolingType> pooling =
        it->is_string() ? pooling_type_from_name(it->get<std::string>()) : std::nullopt;
    if (!pooling || *pooling == PoolingType::kRank) {
      return field_error(it->is_string() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                         "pooling", "must be \"mean\", \"cls\", \"last\" or \"none\"");
    }
    out.job.options.pooling = pooling;
  }
  if (const auto it = body.find("priority"); it != body.end() && !it->is_null()) {
    out.priority =
        it->is_string() ? serve::request_class_from_name(it->get<std::string>()) : std::nullopt;
    if (!out.priority) {
      return field_error(it->is_string() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                         "priority", "must be 'interactive', 'batch' or 'background'");
    }
  }
  SYN_ASSIGN_OR_RETURN(out.job.options.normalize, optional_bool(body, "normalize", true));
  SYN_ASSIGN_OR_RETURN(out.job.options.truncate, optional_bool(body, "truncate", false));
  return out;
}

std::string embeddings_response(const EmbedResult& r, bool b64, const std::string& model_id) {
  Json data = Json::array();
  for (size_t i = 0; i < r.items.size(); ++i) {
    data.push_back(
        {{"object", "embedding"}, {"index", i}, {"embedding", embedding_json(r, r.items[i], b64)}});
  }
  const Json out = {
      {"object", "list"},
      {"data", std::move(data)},
      {"model", model_id},
      {"usage", {{"prompt_tokens", r.prompt_tokens}, {"total_tokens", r.prompt_tokens}}}};
  return out.dump();
}

// The body's "priority" when it names a class, else "" (the header or the default decides;
// run_embeddings_request reports a bad value).
std::string body_priority(const Json& j) {
  const auto it = j.find("priority");
  if (it == j.end() || !it->is_string()) return "";
  const std::string name = it->get<std::string>();
  return serve::request_class_from_name(name) ? name : "";
}

Status cancelled_by_caller() {
  return Status(ErrorCode::kCancelled, "the embedding request was cancelled by its caller");
}

// Inputs of one request submitted to the Service at a time: enough to fill the engine's slots,
// few enough that one long input list does not take its class's whole admission queue (the
// others are submitted as these finish).
constexpr size_t kMaxInputsInFlight = 16;

// Runs prefill-only requests (embeddings, rerank scores) on the Service, at most
// kMaxInputsInFlight at a time, and returns each one's final vector in request order. On an
// error or a cancellation the requests still running are cancelled.
Result<std::vector<std::vector<float>>> run_prefill_requests(
    serve::Service& service, std::vector<serve::GenerationRequest> requests,
    const std::function<bool()>& cancelled) {
  const size_t n = requests.size();
  std::vector<std::vector<float>> vectors(n);
  std::deque<std::pair<size_t, std::shared_ptr<serve::RequestHandle>>> in_flight;
  const auto give_up = [&](Status status) {
    for (auto& [index, handle] : in_flight) handle->cancel();
    return status;
  };
  size_t next = 0;
  while (next < n || !in_flight.empty()) {
    while (next < n && in_flight.size() < kMaxInputsInFlight) {
      Result<std::shared_ptr<serve::RequestHandle>> handle = service.submit(requests[next]);
      // A full queue while some of ours run is back-pressure: wait for them, then submit the
      // rest. Only a request that cannot get a single input in is refused (429).
      if (!handle.ok() && handle.status().code() == ErrorCode::kQueueFull && !in_flight.empty()) {
        break;
      }
      if (!handle.ok()) return give_up(api_status(handle.status()));
      requests[next].prompt = {};  // submitted: its copy is the service's
      in_flight.emplace_back(next++, std::move(*handle));
    }
    // The oldest request first: its vector goes to its own index whatever the order of finishing.
    serve::GenerationEvent event;
    const auto wait = in_flight.front().second->next_for(event, kPollInterval);
    if (wait == serve::RequestHandle::Wait::kTimeout) {
      if (cancelled && cancelled()) return give_up(cancelled_by_caller());
      continue;
    }
    if (wait == serve::RequestHandle::Wait::kFinished) {
      // Unreachable: a handle leaves in_flight with its final event.
      return give_up(Status(ErrorCode::kInternal, "an embedding request ended without a result"));
    }
    if (!event.final) continue;
    if (event.finish_reason != serve::FinishReason::kStop) {
      return give_up(event.error.ok() ? cancelled_by_caller() : api_status(event.error));
    }
    vectors[in_flight.front().first] = std::move(event.embedding);
    in_flight.pop_front();
  }
  return vectors;
}

// Each input is one prefill-only GenerationRequest of the job's class; their vectors come back
// in the final events.
Result<EmbedResult> run_embeddings(const Inference& inference, const EmbeddingJob& job,
                                   const std::function<bool()>& cancelled) {
  serve::Service& service = *inference.service;
  Result<PoolingType> pooling =
      embedding_pooling(inference.embedding_pooling, service.bidirectional(), job.options.pooling,
                        /*allow_none=*/true);
  if (!pooling.ok()) {
    return field_error(ErrorCode::kUnsupportedParameter, "pooling",
                       std::string(pooling.status().message()));
  }
  const bool text = job.kind == EmbeddingJob::Kind::kEmbedText;
  const size_t n = text ? job.texts.size() : job.tokens.size();
  std::vector<serve::GenerationRequest> requests(n);
  EmbedResult result;
  result.n_embd = service.n_embd();
  result.pooling = *pooling;
  result.items.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> prompt =
        text ? embedding_tokens(*inference.tokenizer, job.texts[i]) : job.tokens[i];
    Result<bool> truncated = fit_embedding_input(prompt, i, service.n_vocab(), service.n_ctx(),
                                                 job.options.truncate, inference.appended_eos);
    if (!truncated.ok()) return api_status(truncated.status());
    result.items[i].truncated = *truncated;
    result.items[i].n_tokens = prompt.size();
    result.prompt_tokens += prompt.size();
    serve::GenerationRequest& request = requests[i];
    request.id = "embedding-" + std::to_string(i);
    request.prompt = std::move(prompt);
    request.embedding =
        serve::EmbeddingSpec{.pooling = *pooling, .normalize = job.options.normalize};
    request.request_class = job.request_class;
  }
  SYN_ASSIGN_OR_RETURN(std::vector<std::vector<float>> vectors,
                       run_prefill_requests(service, std::move(requests), cancelled));
  for (size_t i = 0; i < n; ++i) result.items[i].values = std::move(vectors[i]);
  return result;
}

// run_embeddings_request on a body already parsed (the route parses once, for its priority too).
Result<std::string> run_parsed(const Inference& inference, const Json& parsed,
                               serve::RequestClass request_class,
                               const std::function<bool()>& cancelled) {
  SYN_RETURN_IF_ERROR(check_model(parsed, inference.model_id));
  SYN_ASSIGN_OR_RETURN(EmbeddingsBody request,
                       parse_embeddings_body(parsed, inference.service->n_embd()));
  request.job.request_class = request_class;
  SYN_ASSIGN_OR_RETURN(EmbedResult result, run_embeddings(inference, request.job, cancelled));
  return embeddings_response(result, request.base64, inference.model_id);
}

}  // namespace

Result<std::string> run_embeddings_request(const Inference& inference, std::string_view body,
                                           serve::RequestClass request_class,
                                           const std::function<bool()>& cancelled) {
  SYN_ASSIGN_OR_RETURN(const Json parsed, parse_object(body));
  return run_parsed(inference, parsed, request_class, cancelled);
}

namespace {

// The message of a rerank request to a model that cannot rerank.
std::string cannot_rerank(const Inference& inference) {
  if (inference.service->generates()) {
    return "the model '" + inference.model_id +
           "' generates text; rerank needs an encoder (BERT-family) cross-encoder model";
  }
  return "the model '" + inference.model_id +
         "' has no classification head; it cannot rerank (use /v1/embeddings)";
}

class Routes {
 public:
  Routes(const Inference& inference, const api::RequestLimits& limits)
      : inference_(inference), limits_(limits) {}

  void embeddings(const http::Request& req, http::Response& res) const {
    Result<Json> parsed = parse_object(req.body);
    if (!parsed.ok()) return send_error(res, parsed.status());
    Result<serve::RequestClass> c = request_class(body_priority(*parsed), req);
    if (!c.ok()) return send_error(res, c.status());
    Result<std::string> body =
        run_parsed(inference_, *parsed, *c, [&req] { return req.client_gone(); });
    if (body.ok()) return res.set_content(*body, std::string(kJson));
    send_failure(res, body.status(), *c);
  }

  void rerank(const http::Request& req, http::Response& res) const {
    Result<Json> parsed = parse_object(req.body);
    if (!parsed.ok()) return send_error(res, parsed.status());
    const Json& body = *parsed;
    if (Status s = check_model(body, inference_.model_id); !s.ok()) return send_error(res, s);
    if (!inference_.service->can_rerank()) {
      return send_error(
          res, field_error(ErrorCode::kUnsupportedParameter, "model", cannot_rerank(inference_)));
    }
    Result<serve::RequestClass> c = request_class(body_priority(body), req);
    if (!c.ok()) return send_error(res, c.status());
    const auto query = body.find("query");
    if (query == body.end() || query->is_null()) {
      return send_error(res,
                        field_error(ErrorCode::kMissingParameter, "query", "'query' is required"));
    }
    if (!query->is_string()) {
      return send_error(res, field_error(ErrorCode::kInvalidType, "query", "must be a string"));
    }
    const std::string query_text = query->get<std::string>();
    if (query_text.empty()) {
      return send_error(
          res, field_error(ErrorCode::kInvalidValue, "query", "the query is an empty string"));
    }
    const auto docs = body.find("documents");
    if (docs == body.end() || docs->is_null()) {
      return send_error(
          res, field_error(ErrorCode::kMissingParameter, "documents", "'documents' is required"));
    }
    if (!docs->is_array()) {
      return send_error(
          res, field_error(ErrorCode::kInvalidType, "documents", "must be an array of strings"));
    }
    if (docs->empty()) {
      return send_error(res,
                        field_error(ErrorCode::kInvalidValue, "documents", "the list is empty"));
    }
    std::vector<std::string> texts;
    for (size_t i = 0; i < docs->size(); ++i) {
      const Json& d = (*docs)[i];
      const std::string field = "documents[" + std::to_string(i) + "]";
      // Cohere also accepts {"text": ...}.
      const Json* text = &d;
      if (d.is_object() && d.contains("text")) text = &d["text"];
      if (!text->is_string()) {
        return send_error(res, field_error(ErrorCode::kInvalidType, field, "must be a string"));
      }
      texts.push_back(text->get<std::string>());
      if (texts.back().empty()) {
        return send_error(
            res, field_error(ErrorCode::kInvalidValue, field, "the document is an empty string"));
      }
    }
    size_t top_n = 0;
    if (const auto it = body.find("top_n"); it != body.end() && !it->is_null()) {
      if (!it->is_number_integer()) {
        return send_error(res, field_error(ErrorCode::kInvalidType, "top_n", "must be an integer"));
      }
      if (it->get<int64_t>() < 1) {
        return send_error(res, field_error(ErrorCode::kInvalidValue, "top_n", "must be >= 1"));
      }
      top_n = static_cast<size_t>(it->get<int64_t>());
    }
    Result<bool> return_documents = optional_bool(body, "return_documents", true);
    if (!return_documents.ok()) return send_error(res, return_documents.status());
    Result<bool> truncate = optional_bool(body, "truncate", false);
    if (!truncate.ok()) return send_error(res, truncate.status());

    Result<RerankResult> ranked =
        run_rerank(query_text, texts, top_n, *truncate, *c, [&req] { return req.client_gone(); });
    if (!ranked.ok()) return send_failure(res, ranked.status(), *c);
    Json results = Json::array();
    for (const RerankItem& item : ranked->items) {
      Json one = {{"index", item.index}, {"relevance_score", item.score}};
      if (*return_documents) one["document"] = {{"text", texts[item.index]}};
      results.push_back(std::move(one));
    }
    const Json out = {
        {"object", "list"},
        {"model", inference_.model_id},
        {"results", std::move(results)},
        {"usage",
         {{"prompt_tokens", ranked->prompt_tokens}, {"total_tokens", ranked->prompt_tokens}}}};
    res.set_content(out.dump(), std::string(kJson));
  }

 private:
  // One request per (query, document) pair, scored on the Service like an embedding: the
  // cross-encoder's classifier on the pair's first token.
  Result<RerankResult> run_rerank(const std::string& query, std::span<const std::string> documents,
                                  size_t top_n, bool truncate, serve::RequestClass c,
                                  const std::function<bool()>& cancelled) const {
    serve::Service& service = *inference_.service;
    Result<std::vector<RerankPair>> pairs =
        rerank_pairs(*inference_.tokenizer, query, documents, service.n_ctx(), truncate);
    if (!pairs.ok()) return api_status(pairs.status());
    RerankResult result;
    std::vector<serve::GenerationRequest> requests(pairs->size());
    for (size_t i = 0; i < pairs->size(); ++i) {
      RerankPair& pair = (*pairs)[i];
      result.items.push_back({.index = i, .score = 0.0f, .n_tokens = pair.tokens.size()});
      result.prompt_tokens += pair.tokens.size();
      serve::GenerationRequest& request = requests[i];
      request.id = "rerank-" + std::to_string(i);
      request.prompt = std::move(pair.tokens);
      request.embedding = serve::EmbeddingSpec{
          .pooling = PoolingType::kRank, .normalize = false, .token_types = std::move(pair.types)};
      request.request_class = c;
    }
    SYN_ASSIGN_OR_RETURN(std::vector<std::vector<float>> scores,
                         run_prefill_requests(service, std::move(requests), cancelled));
    for (size_t i = 0; i < scores.size(); ++i) {
      if (scores[i].empty()) return Status(ErrorCode::kInternal, "a rerank score is missing");
      result.items[i].score = scores[i][0];
    }
    SYN_RETURN_IF_ERROR(rank_documents(result, top_n));
    return result;
  }

  // An error of a request that ran: 499 when the client went away, else the status (with
  // Retry-After when it is transient).
  void send_failure(http::Response& res, const Status& s, serve::RequestClass c) const {
    if (s.code() == ErrorCode::kCancelled) {
      res.status = kClientClosedRequest;
      return;
    }
    std::optional<uint32_t> retry_s;
    if (s.code() == ErrorCode::kQueueFull || s.code() == ErrorCode::kUnavailable) {
      retry_s = inference_.service->retry_after_s(c);
    }
    send_error(res, s, retry_s);
  }

  const Inference& inference_;
  const api::RequestLimits limits_;
};

}  // namespace

void add_embedding_routes(http::Router& router, const Inference& inference,
                          const api::RequestLimits& limits) {
  auto routes = std::make_shared<const Routes>(inference, limits);
  router.add("POST", "/v1/embeddings", [routes](const http::Request& req, http::Response& res) {
    routes->embeddings(req, res);
  });
  // Every model answers rerank: a cross-encoder with scores, any other with what it cannot do.
  for (const char* path : {"/v1/rerank", "/rerank"}) {
    router.add("POST", path, [routes](const http::Request& req, http::Response& res) {
      routes->rerank(req, res);
    });
  }
}

void add_wrong_model_routes(http::Router& router, const std::string& model_id) {
  const std::string message = "the model '" + model_id +
                              "' is an embedding model; this server answers /v1/embeddings and "
                              "/v1/rerank, not text generation";
  auto handler = [message](const http::Request&, http::Response& res) {
    send_error(res, field_error(ErrorCode::kUnsupportedParameter, "model", message));
  };
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    router.add("POST", path, handler);
  }
}

}  // namespace synapse::server
