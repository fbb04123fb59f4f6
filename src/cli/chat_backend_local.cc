// SPDX-License-Identifier: Apache-2.0
// The in-process backend of `synapse run`: the model in a ModelDirectory of its own, each turn
// prepared by the request layer exactly as the server prepares it (parsing, template,
// tokenizing) and its engine events read straight from the RequestHandle.
#include <algorithm>
#include <string>

#include "cli/chat_backend.h"
#include "request/generation.h"

namespace synapse::cli {
namespace {

class LocalChatBackend : public ChatBackend {
 public:
  LocalChatBackend() = default;
  ~LocalChatBackend() override { directory_.shutdown(std::chrono::milliseconds(0)); }

  Status load(const ServeModelsOptions& options) {
    return setup_served_models(options, directory_);
  }

  std::string where() const override { return "in-process"; }

  Result<ModelFacts> describe(const std::string& model) override {
    for (const request::ModelListing& m : directory_.list()) {
      if (m.name != model &&
          std::find(m.aliases.begin(), m.aliases.end(), model) == m.aliases.end()) {
        continue;
      }
      ModelFacts facts{.name = m.name,
                       .kind = std::string(request::served_kind_name(m.kind)),
                       .loaded = m.loaded};
      if (m.n_ctx > 0) {
        facts.context_tokens = m.n_ctx;
        facts.chat_template = m.chat_template;
      }
      return facts;
    }
    return Status(ErrorCode::kModelNotFound, "no model '" + model + "' here");
  }

  Result<ChatReply> complete(nlohmann::json body, const TextSink& on_text,
                             const std::function<bool()>& stop) override {
    body["stream"] = true;
    const auto interactive = [](const std::string&) -> Result<serve::RequestClass> {
      return serve::RequestClass::kInteractive;
    };
    SYN_ASSIGN_OR_RETURN(
        request::GenerationCall call,
        request::prepare_generation(request::EndpointKind::kChatCompletions, directory_,
                                    body.dump(), interactive, api::RequestLimits{}));
    SYN_ASSIGN_OR_RETURN(std::shared_ptr<serve::RequestHandle> handle,
                         request::submit_generation(call));
    ChatReply reply;
    serve::GenerationEvent event;
    for (;;) {
      const auto wait = handle->next_for(event, request::kPollInterval);
      if (wait == serve::RequestHandle::Wait::kFinished) break;
      if (stop() && !handle->cancel_requested()) handle->cancel();
      if (wait == serve::RequestHandle::Wait::kTimeout) continue;
      if (!event.text.empty() && !handle->cancel_requested()) {
        reply.text += event.text;
        on_text(event.text);
      }
      if (event.final) break;
    }
    if (handle->cancel_requested()) return Status(ErrorCode::kCancelled, "stopped");
    if (event.finish_reason == serve::FinishReason::kError) return event.error;
    reply.finish_reason = std::string(serve::finish_reason_name(event.finish_reason));
    reply.prompt_tokens = static_cast<int64_t>(call.prompt_tokens);
    reply.completion_tokens = static_cast<int64_t>(event.usage.completion_tokens);
    return reply;
  }

 private:
  request::ModelDirectory directory_;
};

}  // namespace

Result<std::unique_ptr<ChatBackend>> make_local_chat_backend(const ServeModelsOptions& options) {
  auto backend = std::make_unique<LocalChatBackend>();
  SYN_RETURN_IF_ERROR(backend->load(options));
  return std::unique_ptr<ChatBackend>(std::move(backend));
}

}  // namespace synapse::cli
