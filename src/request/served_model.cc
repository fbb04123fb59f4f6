// SPDX-License-Identifier: Apache-2.0
#include "request/served_model.h"

#include "base/echo.h"
#include "encoder/embedder.h"
#include "format/gguf/gguf_metadata.h"
#include "request/output_constraints.h"

namespace synapse::request {
namespace {

std::string token_text(const tokenizer::Tokenizer& tok, int32_t id) {
  if (id == tokenizer::kNoToken || id < 0) return "";
  return std::string(tok.token_text(id));
}

std::string metadata_string(const GgufMetadata& metadata, std::string_view key) {
  const Result<std::string_view> v = metadata.get_string(key);
  return v.ok() ? std::string(*v) : std::string();
}

}  // namespace

Result<ServedModel> describe_served_model(std::string id, const GgufMetadata& metadata,
                                          PoolingType pooling,
                                          const tokenizer::Tokenizer& tokenizer,
                                          const ServedModelOptions& options) {
  ServedModel served;
  served.id = std::move(id);
  served.tokenizer = &tokenizer;
  served.bos_token = token_text(tokenizer, tokenizer.vocab().special().bos);
  served.eos_token = token_text(tokenizer, tokenizer.vocab().special().eos);
  served.embedding_pooling = pooling;
  served.appended_eos = appended_closing_token(tokenizer);
  Result<chat::ChatTemplate> chat_template =
      chat::select_chat_template(metadata_string(metadata, "tokenizer.chat_template"),
                                 options.chat_template, served.bos_token, served.eos_token);
  if (chat_template.ok()) {
    served.chat_template = std::move(*chat_template);
  } else if (chat_template.status().code() == ErrorCode::kNoChatTemplate) {
    std::string names;
    for (std::string_view name : chat::builtin_template_names()) {
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    served.no_chat_template =
        Status(ErrorCode::kNoChatTemplate,
               "the model '" + served.id +
                   "' has no chat template; use /v1/completions, or start the server with "
                   "--chat-template NAME (" +
                   names + ")");
  } else {
    return chat_template.status();
  }
  add_constraints(served, options.flexible_json);
  return served;
}

void add_constraints(ServedModel& model, bool flexible_json) {
  model.constraints = std::make_shared<OutputConstraints>(
      *model.tokenizer,
      model.chat_template ? model.chat_template->family() : chat::TemplateFamily::kUnknown,
      flexible_json);
}

}  // namespace synapse::request
