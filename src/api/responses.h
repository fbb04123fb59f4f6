// SPDX-License-Identifier: Apache-2.0
// Response bodies of the OpenAI-compatible API: completion and chat.completion objects, their
// streaming chunks as server-sent events, usage, logprobs in each endpoint's format, the model
// list, and llama-server's /tokenize and /detokenize answers. Text that is not valid UTF-8 (a
// token cut inside a character) is written with U+FFFD replacements, never as invalid JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace synapse::api {

enum class FinishReason : uint8_t { kStop, kLength, kToolCalls };
std::string_view finish_reason_name(FinishReason reason);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// One generated token's log-probability and its most likely alternatives.
struct TokenLogprob {
  std::string token;  // the token's text (bytes; may be part of a character)
  double logprob = 0.0;
  std::vector<std::pair<std::string, double>> top;  // most likely first
};

// Fields every response object and chunk carries.
struct ResponseMeta {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

struct CompletionResult {
  std::string text;
  FinishReason finish_reason = FinishReason::kStop;
  std::optional<std::vector<TokenLogprob>> logprobs;  // with text offsets computed from `text`
  Usage usage;
};

// One entry of message.tool_calls: {id, type: "function", function: {name, arguments}}.
struct ToolCallResult {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct ChatCompletionResult {
  std::string content;  // "" with tool calls becomes null, as OpenAI writes it
  std::vector<ToolCallResult> tool_calls;
  FinishReason finish_reason = FinishReason::kStop;
  std::optional<std::vector<TokenLogprob>> logprobs;
  Usage usage;
};

std::string completion_response(const ResponseMeta& meta, const CompletionResult& result);
std::string chat_completion_response(const ResponseMeta& meta, const ChatCompletionResult& result);

// Server-sent events: "data: <json>\n\n", and the stream's end "data: [DONE]\n\n".
std::string sse_event(std::string_view json);
std::string_view sse_done();

// A /v1/completions chunk: a piece of text, and on the last one the finish reason.
std::string completion_chunk(const ResponseMeta& meta, std::string_view text,
                             std::optional<FinishReason> finish,
                             const std::vector<TokenLogprob>* logprobs = nullptr,
                             int64_t text_offset = 0);
// A /v1/chat/completions chunk: the first carries delta.role = "assistant", later ones
// delta.content, the last an empty delta and the finish reason.
// OpenAI's tool-call delta: the first for a call carries index, id, type and name (and empty
// arguments); later ones carry index and a piece of the arguments.
struct ToolCallDelta {
  size_t index = 0;
  std::optional<std::string> id;  // set on the call's first delta (with the name)
  std::string name;
  std::string arguments;
};
struct ChatDelta {
  bool role = false;                   // include "role": "assistant"
  std::optional<std::string> content;  // include "content"
  std::vector<ToolCallDelta> tool_calls;
};
std::string chat_chunk(const ResponseMeta& meta, const ChatDelta& delta,
                       std::optional<FinishReason> finish,
                       const std::vector<TokenLogprob>* logprobs = nullptr);
// The final usage chunk of stream_options.include_usage: "choices": [] and "usage".
std::string usage_chunk(const ResponseMeta& meta, bool chat, const Usage& usage);

// The worker process serving a model (`synapse serve --isolate`).
struct WorkerInfo {
  int32_t pid = 0;    // 0 while none runs
  std::string state;  // "running", "restarting", "unavailable", "stopped"
  uint64_t crashes = 0;
  uint64_t restarts = 0;
  uint64_t quarantined = 0;  // prompts refused as quarantined
};

struct ModelInfo {
  std::string id;
  int64_t created = 0;
  std::string owned_by = "synapse";
  // Synapse's extensions: what the model answers ("generation", "embedding", "rerank") and
  // whether it is in memory now; not written when empty.
  std::string kind;
  std::optional<bool> loaded;
  // Also with `loaded` (for `synapse ps`): the memory it counts, requests in flight, seconds
  // idle, and when it unloads if still idle (unix seconds; none: never).
  uint64_t bytes = 0;
  size_t requests = 0;
  double idle_s = 0.0;
  std::optional<int64_t> expires_at;
  std::optional<WorkerInfo> worker;  // with --isolate: its worker process
};
std::string models_response(const std::vector<ModelInfo>& models);

// /tokenize: {"tokens": [ids]} or, with pieces, {"tokens": [{"id", "piece"}]} where a piece
// that is not valid UTF-8 is given as its byte values.
struct TokenPiece {
  int32_t id = 0;
  std::string piece;
};
std::string tokenize_response(const std::vector<TokenPiece>& tokens, bool with_pieces);
std::string detokenize_response(std::string_view content);

}  // namespace synapse::api
