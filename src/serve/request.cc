// SPDX-License-Identifier: Apache-2.0
#include "serve/request.h"

#include <array>
#include <string>

#include "sample/logprobs.h"

namespace synapse::serve {
namespace {

constexpr std::array<std::string_view, kRequestClassCount> kClassNames = {"interactive", "batch",
                                                                          "background"};

}  // namespace

std::string_view request_class_name(RequestClass c) { return kClassNames[static_cast<size_t>(c)]; }

std::optional<RequestClass> request_class_from_name(std::string_view name) {
  for (size_t i = 0; i < kClassNames.size(); ++i) {
    if (kClassNames[i] == name) return static_cast<RequestClass>(i);
  }
  return std::nullopt;
}

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

Status check_request(const GenerationRequest& request, const ModelLimits& model) {
  if (request.prompt.empty()) {
    return Status(ErrorCode::kInvalidArgument, "the prompt has no tokens",
                  ErrorWhere{.field = "prompt"});
  }
  for (int32_t t : request.prompt) {
    if (t < 0 || static_cast<uint32_t>(t) >= model.n_vocab) {
      return Status(ErrorCode::kInvalidArgument,
                    "prompt token id " + std::to_string(t) + " is outside the vocabulary",
                    ErrorWhere{.field = "prompt"});
    }
  }
  if (request.prompt.size() > model.n_ctx) {
    return Status(ErrorCode::kLimitExceeded,
                  "the prompt has " + std::to_string(request.prompt.size()) +
                      " tokens, the context holds " + std::to_string(model.n_ctx),
                  ErrorWhere{.field = "prompt"});
  }
  if (model.bidirectional && !request.embedding) {
    return Status(ErrorCode::kUnsupported,
                  "this model is a bidirectional encoder: it embeds (and reranks, with a "
                  "classifier head) but does not generate text",
                  ErrorWhere{.field = "model"});
  }
  if (request.embedding) {
    const EmbeddingSpec& e = *request.embedding;
    const bool whole_prompt = e.pooling == PoolingType::kCls || e.pooling == PoolingType::kRank;
    const bool allowed = e.pooling == PoolingType::kLast || e.pooling == PoolingType::kMean ||
                         e.pooling == PoolingType::kNone ||
                         (e.pooling == PoolingType::kCls && model.bidirectional) ||
                         (e.pooling == PoolingType::kRank && model.can_rerank);
    if (!allowed || (whole_prompt && !model.bidirectional)) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string(pooling_type_name(e.pooling)) +
                        (e.pooling == PoolingType::kRank
                             ? " needs a cross-encoder (a bidirectional model with a "
                               "classifier head)"
                             : " pooling needs a bidirectional encoder"),
                    ErrorWhere{.field = "pooling"});
    }
    if (!e.token_types.empty()) {
      bool in_range = e.token_types.size() == request.prompt.size();
      for (const int32_t t : e.token_types) {
        in_range = in_range && t >= 0 && static_cast<uint32_t>(t) < model.n_token_types;
      }
      if (!in_range) {
        return Status(ErrorCode::kInvalidArgument,
                      "token types must be one per prompt token, each in 0.." +
                          std::to_string(model.n_token_types == 0 ? 0 : model.n_token_types - 1),
                      ErrorWhere{.field = "token_types"});
      }
    }
  }
  if (request.max_tokens <= 0 && !request.embedding) {
    return Status(ErrorCode::kInvalidArgument, "max_tokens must be positive",
                  ErrorWhere{.field = "max_tokens"});
  }
  if (request.top_logprobs < 0 || request.top_logprobs > kMaxTopLogprobs) {
    return Status(ErrorCode::kInvalidArgument,
                  "top_logprobs must be in 0.." + std::to_string(kMaxTopLogprobs),
                  ErrorWhere{.field = "top_logprobs"});
  }
  for (int32_t t : request.eog_tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= model.n_vocab) {
      return (Status(ErrorCode::kInvalidArgument,
                     "end-of-generation id " + std::to_string(t) + " is outside the vocabulary",
                     ErrorWhere{.field = "eog_tokens"}));
    }
  }
  return ok_status();
}

}  // namespace synapse::serve
