// SPDX-License-Identifier: Apache-2.0
// Where `synapse run` sends a conversation: a running server (OpenAI's streamed
// /v1/chat/completions) or a model loaded in this process (the request layer, as the server runs
// it). Both take the same chat body, so a conversation reads the same either way.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "cli/serve_models.h"
#include "cli/server_client.h"

namespace synapse::cli {

struct ChatReply {
  std::string text;
  std::string finish_reason;  // "stop", "length", ...
  std::optional<int64_t> prompt_tokens;
  std::optional<int64_t> completion_tokens;
};

using TextSink = std::function<void(std::string_view text)>;

// What a backend knows of its model, for /show info; a fact it could not learn stays empty.
struct ModelFacts {
  std::string name;
  std::string kind;  // "generation", "embedding", "rerank"
  std::optional<bool> loaded;
  std::optional<int64_t> context_tokens;  // the context it is served with
  std::optional<bool> chat_template;
};

class ChatBackend {
 public:
  virtual ~ChatBackend() = default;
  // Where the model runs, for /show: the server's URL, or "in-process".
  virtual std::string where() const = 0;
  // The served model `model` (as the chat body names it): from the server, /v1/models (kind,
  // loaded) and /api/show (context length, template); in-process, the model directory.
  virtual Result<ModelFacts> describe(const std::string& model) = 0;
  // Runs one /v1/chat/completions body (the backend asks for a stream); the answer's text goes
  // to `on_text` as it is generated. `stop` is polled while it runs: when it says true the
  // request is cancelled and kCancelled returned. Errors are the server's (its message).
  virtual Result<ChatReply> complete(nlohmann::json body, const TextSink& on_text,
                                     const std::function<bool()>& stop) = 0;
};

std::unique_ptr<ChatBackend> make_http_chat_backend(ServerClient client);

// Loads `options.models.front()` into a ModelDirectory of its own (named as written, so a chat
// body's "model" finds it).
Result<std::unique_ptr<ChatBackend>> make_local_chat_backend(const ServeModelsOptions& options);

}  // namespace synapse::cli
