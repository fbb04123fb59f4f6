// SPDX-License-Identifier: Apache-2.0
// What the model routes of the HTTP server need (generation, embeddings, rerank): the service to
// submit to, the model's tokenizer (immutable, shared by the HTTP threads), its chat template and
// the served model's id. Built once by `synapse serve` (or a test) and handed to HttpServer by
// pointer; it must outlive the server.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "chat/chat_template.h"
#include "serve/service.h"
#include "tokenizer/tokenizer.h"

namespace synapse::server {
class OutputConstraints;
}

namespace synapse::server {

struct Inference {
  serve::Service* service = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::string model_id;  // requests naming another model get model_not_found
  // The chat template; when absent, /v1/chat/completions answers `no_chat_template` (400)
  // with this status's message (never OK, so an Inference built with neither still answers 400;
  // the fuzz target found the crash an OK status made).
  std::optional<chat::ChatTemplate> chat_template;
  Status no_chat_template = Status(ErrorCode::kNoChatTemplate, "this model has no chat template");
  std::string bos_token;  // the template's bos_token / eos_token variables
  std::string eos_token;
  int32_t default_completion_max_tokens = 16;  // OpenAI's default for /v1/completions
  // /v1/embeddings on this model: its default pooling (<arch>.pooling_type, else last) and
  // the closing token its tokenizer appends ([SEP], a decoder's EOS; kept when an input is
  // truncated).
  PoolingType embedding_pooling = PoolingType::kLast;
  std::optional<int32_t> appended_eos;
  // Compiled output constraints (response formats, tools), shared by the HTTP routes and the
  // job executor; when null each route table makes its own.
  std::shared_ptr<OutputConstraints> constraints;
};

}  // namespace synapse::server
