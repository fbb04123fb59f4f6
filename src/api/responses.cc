// SPDX-License-Identifier: Apache-2.0
#include "api/responses.h"

#include <nlohmann/json.hpp>

#include "base/utf8.h"

namespace synapse::api {
namespace {

using Json = nlohmann::ordered_json;

std::string dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json bytes_of(std::string_view text) {
  Json bytes = Json::array();
  for (const char c : text) bytes.push_back(static_cast<uint8_t>(c));
  return bytes;
}

Json usage_json(const Usage& usage) {
  Json u;
  u["prompt_tokens"] = usage.prompt_tokens;
  u["completion_tokens"] = usage.completion_tokens;
  u["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
  return u;
}

// Chat format: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
Json chat_logprobs(const std::vector<TokenLogprob>& tokens) {
  Json content = Json::array();
  for (const TokenLogprob& t : tokens) {
    Json entry;
    entry["token"] = t.token;
    entry["logprob"] = t.logprob;
    entry["bytes"] = bytes_of(t.token);
    entry["top_logprobs"] = Json::array();
    for (const auto& [text, logprob] : t.top) {
      Json alt;
      alt["token"] = text;
      alt["logprob"] = logprob;
      alt["bytes"] = bytes_of(text);
      entry["top_logprobs"].push_back(std::move(alt));
    }
    content.push_back(std::move(entry));
  }
  Json out;
  out["content"] = std::move(content);
  return out;
}

// Completions format: parallel arrays, top_logprobs as {token: logprob} objects, text_offset in
// bytes from the start of the choice's text.
Json completion_logprobs(const std::vector<TokenLogprob>& tokens, int64_t first_offset) {
  Json out;
  out["tokens"] = Json::array();
  out["token_logprobs"] = Json::array();
  out["top_logprobs"] = Json::array();
  out["text_offset"] = Json::array();
  int64_t offset = first_offset;
  for (const TokenLogprob& t : tokens) {
    out["tokens"].push_back(t.token);
    out["token_logprobs"].push_back(t.logprob);
    Json top = Json::object();
    for (const auto& [text, logprob] : t.top) {
      if (!top.contains(text)) top[text] = logprob;
    }
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(offset);
    offset += static_cast<int64_t>(t.token.size());
  }
  return out;
}

Json base_object(const ResponseMeta& meta, std::string_view object) {
  Json j;
  j["id"] = meta.id;
  j["object"] = object;
  j["created"] = meta.created;
  j["model"] = meta.model;
  return j;
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kToolCalls:
      return "tool_calls";
  }
  return "stop";
}

std::string completion_response(const ResponseMeta& meta, const CompletionResult& result) {
  Json j = base_object(meta, "text_completion");
  Json choice;
  choice["index"] = 0;
  choice["text"] = result.text;
  choice["logprobs"] = result.logprobs ? completion_logprobs(*result.logprobs, 0) : Json();
  choice["finish_reason"] = finish_reason_name(result.finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(result.usage);
  return dump(j);
}

std::string chat_completion_response(const ResponseMeta& meta, const ChatCompletionResult& result) {
  Json j = base_object(meta, "chat.completion");
  Json choice;
  choice["index"] = 0;
  choice["message"]["role"] = "assistant";
  choice["message"]["content"] =
      result.tool_calls.empty() || !result.content.empty() ? Json(result.content) : Json();
  if (!result.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCallResult& call : result.tool_calls) {
      Json c;
      c["id"] = call.id;
      c["type"] = "function";
      c["function"]["name"] = call.name;
      c["function"]["arguments"] = call.arguments;
      calls.push_back(std::move(c));
    }
    choice["message"]["tool_calls"] = std::move(calls);
  }
  choice["logprobs"] = result.logprobs ? chat_logprobs(*result.logprobs) : Json();
  choice["finish_reason"] = finish_reason_name(result.finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(result.usage);
  return dump(j);
}

std::string sse_event(std::string_view json) {
  std::string out = "data: ";
  out += json;
  out += "\n\n";
  return out;
}

std::string_view sse_done() { return "data: [DONE]\n\n"; }

std::string completion_chunk(const ResponseMeta& meta, std::string_view text,
                             std::optional<FinishReason> finish,
                             const std::vector<TokenLogprob>* logprobs, int64_t text_offset) {
  Json j = base_object(meta, "text_completion");
  Json choice;
  choice["index"] = 0;
  choice["text"] = text;
  choice["logprobs"] = logprobs != nullptr ? completion_logprobs(*logprobs, text_offset) : Json();
  choice["finish_reason"] = finish ? Json(finish_reason_name(*finish)) : Json();
  j["choices"] = Json::array({std::move(choice)});
  return sse_event(dump(j));
}

std::string chat_chunk(const ResponseMeta& meta, const ChatDelta& delta,
                       std::optional<FinishReason> finish,
                       const std::vector<TokenLogprob>* logprobs) {
  Json j = base_object(meta, "chat.completion.chunk");
  Json choice;
  choice["index"] = 0;
  choice["delta"] = Json::object();
  if (delta.role) choice["delta"]["role"] = "assistant";
  if (delta.content) choice["delta"]["content"] = *delta.content;
  if (!delta.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCallDelta& call : delta.tool_calls) {
      Json c;
      c["index"] = call.index;
      if (call.id) {
        c["id"] = *call.id;
        c["type"] = "function";
        c["function"]["name"] = call.name;
      }
      c["function"]["arguments"] = call.arguments;
      calls.push_back(std::move(c));
    }
    choice["delta"]["tool_calls"] = std::move(calls);
  }
  choice["logprobs"] = logprobs != nullptr ? chat_logprobs(*logprobs) : Json();
  choice["finish_reason"] = finish ? Json(finish_reason_name(*finish)) : Json();
  j["choices"] = Json::array({std::move(choice)});
  return sse_event(dump(j));
}

std::string usage_chunk(const ResponseMeta& meta, bool chat, const Usage& usage) {
  Json j = base_object(meta, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = usage_json(usage);
  return sse_event(dump(j));
}

std::string models_response(const std::vector<ModelInfo>& models) {
  Json j;
  j["object"] = "list";
  j["data"] = Json::array();
  for (const ModelInfo& m : models) {
    Json entry;
    entry["id"] = m.id;
    entry["object"] = "model";
    entry["created"] = m.created;
    entry["owned_by"] = m.owned_by;
    if (!m.kind.empty()) entry["kind"] = m.kind;
    if (m.loaded) {
      entry["loaded"] = *m.loaded;
      entry["bytes"] = m.bytes;
      entry["requests"] = m.requests;
      entry["idle_s"] = m.idle_s;
      entry["expires_at"] = m.expires_at ? Json(*m.expires_at) : Json(nullptr);
      if (m.worker) {
        entry["worker"] = {{"pid", m.worker->pid},
                           {"state", m.worker->state},
                           {"crashes", m.worker->crashes},
                           {"restarts", m.worker->restarts},
                           {"quarantined", m.worker->quarantined}};
      }
    }
    j["data"].push_back(std::move(entry));
  }
  return dump(j);
}

std::string tokenize_response(const std::vector<TokenPiece>& tokens, bool with_pieces) {
  Json j;
  j["tokens"] = Json::array();
  for (const TokenPiece& t : tokens) {
    if (!with_pieces) {
      j["tokens"].push_back(t.id);
      continue;
    }
    Json entry;
    entry["id"] = t.id;
    entry["piece"] = is_valid_utf8(t.piece) ? Json(t.piece) : bytes_of(t.piece);
    j["tokens"].push_back(std::move(entry));
  }
  return dump(j);
}

std::string detokenize_response(std::string_view content) {
  Json j;
  j["content"] = content;
  return dump(j);
}

}  // namespace synapse::api
