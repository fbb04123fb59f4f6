// SPDX-License-Identifier: Apache-2.0
// The server backend of `synapse run`: a streamed /v1/chat/completions read event by event.
#include <string>

#include "cli/chat_backend.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::json;

ErrorCode code_for_status(int status) {
  switch (status) {
    case 400:
      return ErrorCode::kInvalidArgument;
    case 401:
      return ErrorCode::kInvalidApiKey;
    case 404:
      return ErrorCode::kModelNotFound;
    case 429:
    case 503:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

// Reads server-sent events as they arrive: text deltas, the finish reason, usage, an error.
class SseReader {
 public:
  explicit SseReader(const TextSink& on_text) : on_text_(on_text) {}

  void feed(std::string_view bytes) {
    buffer_.append(bytes);
    size_t end;
    while ((end = buffer_.find("\n\n")) != std::string::npos) {
      event(std::string_view(buffer_).substr(0, end));
      buffer_.erase(0, end + 2);
    }
  }
  ChatReply& reply() { return reply_; }
  const Status& error() const { return error_; }
  bool done() const { return done_; }

 private:
  void event(std::string_view text) {
    if (!text.starts_with("data: ")) return;  // comments, other fields
    text.remove_prefix(6);
    if (text == "[DONE]") {
      done_ = true;
      return;
    }
    const Json chunk = Json::parse(text, nullptr, false);
    if (!chunk.is_object()) return;
    if (chunk.contains("error")) {
      const Json& e = chunk["error"];
      const std::string message = e.is_object() && e.value("message", Json()).is_string()
                                      ? e["message"].get<std::string>()
                                      : e.dump();
      error_ = Status(ErrorCode::kInternal, message);
      return;
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) {
      const Json& u = chunk["usage"];
      if (u.value("prompt_tokens", Json()).is_number_integer()) {
        reply_.prompt_tokens = u["prompt_tokens"].get<int64_t>();
      }
      if (u.value("completion_tokens", Json()).is_number_integer()) {
        reply_.completion_tokens = u["completion_tokens"].get<int64_t>();
      }
    }
    if (!chunk.contains("choices") || !chunk["choices"].is_array()) return;
    for (const Json& choice : chunk["choices"]) {
      const Json delta = choice.value("delta", Json::object());
      if (delta.is_object() && delta.value("content", Json()).is_string()) {
        const std::string piece = delta["content"].get<std::string>();
        reply_.text += piece;
        if (!piece.empty()) on_text_(piece);
      }
      if (choice.value("finish_reason", Json()).is_string()) {
        reply_.finish_reason = choice["finish_reason"].get<std::string>();
      }
    }
  }

  const TextSink& on_text_;
  std::string buffer_;
  ChatReply reply_;
  Status error_;
  bool done_ = false;
};

class HttpChatBackend : public ChatBackend {
 public:
  explicit HttpChatBackend(ServerClient client) : client_(std::move(client)) {}

  std::string where() const override { return client_.url(); }

  Result<ModelFacts> describe(const std::string& model) override {
    ModelFacts facts;
    facts.name = model;
    SYN_ASSIGN_OR_RETURN(const ServerReply listed,
                         client_.get("/v1/models", std::chrono::seconds(10)));
    if (listed.status != 200) {
      return Status(code_for_status(listed.status), ServerClient::error_message(listed));
    }
    const Json list = Json::parse(listed.body, nullptr, false);
    if (list.is_object() && list.value("data", Json()).is_array()) {
      for (const Json& m : list["data"]) {
        if (!m.is_object() || !m.value("id", Json()).is_string()) continue;
        const std::string id = m["id"].get<std::string>();
        if (id != model && id != model + ":latest" && model != id + ":latest") continue;
        facts.name = id;
        if (m.value("kind", Json()).is_string()) facts.kind = m["kind"].get<std::string>();
        if (m.value("loaded", Json()).is_boolean()) facts.loaded = m["loaded"].get<bool>();
        break;
      }
    }
    // /api/show knows the context and the template; a server without it leaves them unknown.
    std::string shown;
    const Result<int> status = client_.post_stream(
        "/api/show", Json{{"model", facts.name}}.dump(),
        [&](int, std::string_view bytes) {
          if (shown.size() < (8u << 20)) shown.append(bytes);
        },
        [] { return false; });
    const Json show = status.ok() && *status == 200 ? Json::parse(shown, nullptr, false) : Json();
    if (show.is_object()) {
      const Json info = show.value("model_info", Json::object());
      if (info.is_object() && info.value("synapse.context_length", Json()).is_number_integer()) {
        facts.context_tokens = info["synapse.context_length"].get<int64_t>();
      }
      if (show.value("template", Json()).is_string()) {
        facts.chat_template = !show["template"].get<std::string>().empty();
      }
    }
    return facts;
  }

  Result<ChatReply> complete(Json body, const TextSink& on_text,
                             const std::function<bool()>& stop) override {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    SseReader reader(on_text);
    std::string error_body;
    SYN_ASSIGN_OR_RETURN(const int status, client_.post_stream(
                                               "/v1/chat/completions", body.dump(),
                                               [&](int code, std::string_view bytes) {
                                                 if (code == 200) {
                                                   reader.feed(bytes);
                                                 } else if (error_body.size() < (64u << 10)) {
                                                   error_body.append(bytes);
                                                 }
                                               },
                                               stop));
    if (status != 200) {
      return Status(code_for_status(status),
                    ServerClient::error_message(ServerReply{status, error_body}));
    }
    SYN_RETURN_IF_ERROR(reader.error());
    if (!reader.done()) {
      return Status(ErrorCode::kUnavailable, "the server closed the stream before its end");
    }
    return std::move(reader.reply());
  }

 private:
  ServerClient client_;
};

}  // namespace

std::unique_ptr<ChatBackend> make_http_chat_backend(ServerClient client) {
  return std::make_unique<HttpChatBackend>(std::move(client));
}

}  // namespace synapse::cli
