// SPDX-License-Identifier: Apache-2.0
#include "request/embeddings.h"

#include <deque>
#include <memory>

#include "encoder/embedder.h"
#include "request/generation.h"

namespace synapse::request {
namespace {

Status field_error(ErrorCode code, const std::string& field, const std::string& message) {
  return Status(code, message, ErrorWhere{.field = field});
}

// The Embedder names bad input invalid_argument; the API's code for it is invalid_value.
Status api_status(const Status& s) {
  if (s.code() != ErrorCode::kInvalidArgument) return s;
  return Status(ErrorCode::kInvalidValue, s.message(), s.where());
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
    serve::ModelService& service, std::vector<serve::GenerationRequest> requests,
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

// The message of a rerank request to a model that cannot rerank.
std::string cannot_rerank(const ServedModel& m) {
  if (m.service->generates()) {
    return "the model '" + m.id +
           "' generates text; rerank needs an encoder (BERT-family) cross-encoder model";
  }
  return "the model '" + m.id +
         "' has no classification head; it cannot rerank (use /v1/embeddings)";
}

}  // namespace

Result<std::string> run_embeddings(const ModelDirectory& models,
                                   const api::EmbeddingsRequest& request,
                                   serve::RequestClass request_class,
                                   const std::function<bool()>& cancelled) {
  SYN_ASSIGN_OR_RETURN(const ModelHandle model, models.find(request.model));
  const ServedModel& m = *model;
  serve::ModelService& service = *m.service;
  if (request.dimensions && *request.dimensions != static_cast<int64_t>(service.n_embd())) {
    return field_error(ErrorCode::kUnsupportedParameter, "dimensions",
                       "this model's embeddings have " + std::to_string(service.n_embd()) +
                           " dimensions; shortening them is not supported");
  }
  std::optional<PoolingType> asked;
  if (request.pooling) asked = pooling_type_from_name(*request.pooling);
  Result<PoolingType> pooling =
      embedding_pooling(m.embedding_pooling, service.bidirectional(), asked, /*allow_none=*/true);
  if (!pooling.ok()) {
    return field_error(ErrorCode::kUnsupportedParameter, "pooling",
                       std::string(pooling.status().message()));
  }
  const bool text = !request.texts.empty();
  const size_t n = text ? request.texts.size() : request.tokens.size();
  std::vector<serve::GenerationRequest> requests(n);
  int64_t prompt_tokens = 0;
  std::vector<size_t> n_tokens(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> prompt =
        text ? embedding_tokens(*m.tokenizer, request.texts[i]) : request.tokens[i];
    Result<bool> truncated = fit_embedding_input(prompt, i, service.n_vocab(), service.n_ctx(),
                                                 request.truncate, m.appended_eos);
    if (!truncated.ok()) return api_status(truncated.status());
    n_tokens[i] = prompt.size();
    prompt_tokens += static_cast<int64_t>(prompt.size());
    serve::GenerationRequest& r = requests[i];
    r.id = "embedding-" + std::to_string(i);
    r.prompt = std::move(prompt);
    r.embedding = serve::EmbeddingSpec{.pooling = *pooling, .normalize = request.normalize};
    r.request_class = request_class;
  }
  SYN_ASSIGN_OR_RETURN(const std::vector<std::vector<float>> vectors,
                       run_prefill_requests(service, std::move(requests), cancelled));
  std::vector<api::EmbeddingVector> data(n);
  for (size_t i = 0; i < n; ++i) {
    data[i] = {.values = vectors[i].data(),
               .n_values = vectors[i].size(),
               .row_size = service.n_embd(),
               .per_token = *pooling == PoolingType::kNone};
  }
  return api::embeddings_response(data, request.base64, m.id, prompt_tokens);
}

Result<std::string> run_rerank(const ModelDirectory& models, const api::RerankRequest& request,
                               serve::RequestClass request_class,
                               const std::function<bool()>& cancelled) {
  SYN_ASSIGN_OR_RETURN(const ModelHandle model, models.find(request.model));
  const ServedModel& m = *model;
  serve::ModelService& service = *m.service;
  if (!service.can_rerank()) {
    return field_error(ErrorCode::kUnsupportedParameter, "model", cannot_rerank(m));
  }
  // One request per (query, document) pair, scored like an embedding: the cross-encoder's
  // classifier on the pair's first token.
  Result<std::vector<RerankPair>> pairs = rerank_pairs(
      *m.tokenizer, request.query, request.documents, service.n_ctx(), request.truncate);
  if (!pairs.ok()) return api_status(pairs.status());
  RerankResult ranked;
  std::vector<serve::GenerationRequest> requests(pairs->size());
  for (size_t i = 0; i < pairs->size(); ++i) {
    RerankPair& pair = (*pairs)[i];
    ranked.items.push_back({.index = i, .score = 0.0f, .n_tokens = pair.tokens.size()});
    ranked.prompt_tokens += pair.tokens.size();
    serve::GenerationRequest& r = requests[i];
    r.id = "rerank-" + std::to_string(i);
    r.prompt = std::move(pair.tokens);
    r.embedding = serve::EmbeddingSpec{
        .pooling = PoolingType::kRank, .normalize = false, .token_types = std::move(pair.types)};
    r.request_class = request_class;
  }
  SYN_ASSIGN_OR_RETURN(const std::vector<std::vector<float>> scores,
                       run_prefill_requests(service, std::move(requests), cancelled));
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i].empty()) return Status(ErrorCode::kInternal, "a rerank score is missing");
    ranked.items[i].score = scores[i][0];
  }
  SYN_RETURN_IF_ERROR(rank_documents(ranked, request.top_n));
  std::vector<api::RerankScore> results;
  for (const RerankItem& item : ranked.items) {
    results.push_back({item.index, static_cast<double>(item.score)});
  }
  return api::rerank_response(results, request.return_documents ? &request.documents : nullptr,
                              m.id, static_cast<int64_t>(ranked.prompt_tokens));
}

uint32_t retry_after_s(const ModelDirectory& models, const std::string& model_name,
                       serve::RequestClass request_class) {
  Result<ModelHandle> m = models.find(model_name);
  return m.ok() && (*m)->service != nullptr ? (*m)->service->retry_after_s(request_class) : 1;
}

}  // namespace synapse::request
