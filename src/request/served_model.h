// SPDX-License-Identifier: Apache-2.0
// A model as requests see it (`ServedModel`: its Service, tokenizer, chat template, output
// constraints and embedding defaults). Everything a request does goes through a `ModelHandle`
// from the ModelDirectory (model_directory.h), which keeps the model loaded while it lives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/responses.h"
#include "base/status.h"
#include "chat/chat_template.h"
#include "model/hparams.h"
#include "serve/model_service.h"
#include "tokenizer/tokenizer.h"

namespace synapse {
class GgufMetadata;
}

namespace synapse::request {

class OutputConstraints;

struct ServedModel {
  std::string id;       // what clients write in "model"
  int64_t created = 0;  // unix seconds, listed by /v1/models; 0: when it joined the directory
  serve::ModelService* service = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  // The chat template; when absent, chat requests answer `no_chat_template` (400) with this
  // status's message (never OK, so a model built with neither still answers 400).
  std::optional<chat::ChatTemplate> chat_template;
  Status no_chat_template = Status(ErrorCode::kNoChatTemplate, "this model has no chat template");
  std::string bos_token;  // the template's bos_token / eos_token variables
  std::string eos_token;
  int32_t default_completion_max_tokens = 16;  // OpenAI's default for /v1/completions
  // Embeddings: the model's default pooling (<arch>.pooling_type, else last) and the closing
  // token its tokenizer appends ([SEP], a decoder's EOS; kept when an input is truncated).
  PoolingType embedding_pooling = PoolingType::kLast;
  std::optional<int32_t> appended_eos;
  // Compiled output constraints (response formats, tools), shared by every request on the
  // model; made on first use when null.
  std::shared_ptr<OutputConstraints> constraints;
};

using ModelHandle = std::shared_ptr<const ServedModel>;

struct ServedModelOptions {
  std::string chat_template;   // a built-in template's name instead of the model's
  bool flexible_json = false;  // structured outputs: whitespace between JSON tokens
};

// Fills what a served model offers requests from the model file's metadata (no weights are
// needed: a front whose model runs in a worker process describes it too), its pooling and its
// tokenizer: the chat template (a template that cannot render is an error now, not on the first
// request; none is not an error: chat answers no_chat_template naming the built-in ones), the
// special tokens' text, the embedding defaults and the output-constraint cache. `service` is the
// caller's to set.
Result<ServedModel> describe_served_model(std::string id, const GgufMetadata& metadata,
                                          PoolingType pooling,
                                          const tokenizer::Tokenizer& tokenizer,
                                          const ServedModelOptions& options);

// Gives `model` its output-constraint cache (describe_served_model does; models built by hand in
// tests and tools call this).
void add_constraints(ServedModel& model, bool flexible_json = false);

// A handle that does not own `model` (tests, single-model programs that own it on the stack).
inline ModelHandle unowned(const ServedModel& model) {
  return ModelHandle(std::shared_ptr<void>(), &model);
}

}  // namespace synapse::request
