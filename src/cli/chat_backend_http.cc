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
