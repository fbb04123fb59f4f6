// SPDX-License-Identifier: Apache-2.0
// Request bodies of the OpenAI-compatible API (and llama-server's /tokenize, /detokenize) parsed
// and validated into typed structs. Every error names the field path ("messages[2].content") in
// its Status (where.field), so the service answers OpenAI's error shape with `param` set.
// Bounded: body bytes, JSON nesting depth, array lengths.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"

namespace synapse::api {

struct RequestLimits {
  size_t max_body_bytes = 8u << 20;
  int max_json_depth = 64;
  size_t max_messages = 4096;
  size_t max_content_parts = 256;
  size_t max_prompt_tokens = 1u << 20;
  size_t max_stop_sequences = 16;
  size_t max_logit_bias = 1024;
  size_t max_tools = 256;
  int max_top_logprobs = 20;
};

// What both endpoints share. Defaults are OpenAI's; the engine resolves nullopt.
struct SamplingParams {
  std::optional<int64_t> max_tokens;  // nullopt: until end of sequence or the context fills
  double temperature = 1.0;           // 0 is greedy
  double top_p = 1.0;
  int64_t top_k = 0;            // extension; 0 disables
  double min_p = 0.0;           // extension
  double repeat_penalty = 1.0;  // extension
  double frequency_penalty = 0.0;
  double presence_penalty = 0.0;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  std::vector<std::pair<int32_t, double>> logit_bias;  // token id, bias in [-100, 100]
  // Extension "speculative": false opts the request out of the server's speculative decoding
  // (`synapse serve --lookup`); the output is the same either way.
  bool speculative = true;
};

struct StreamParams {
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Synapse's extension field "priority": the scheduling class, "interactive", "batch" or
// "background" (empty when the body has none; the server then looks at X-Synapse-Class).
inline constexpr const char* kPriorityNames[] = {"interactive", "batch", "background"};

// What the output must look like: OpenAI's response_format, or llama-server's extension fields
// `json_schema` and `grammar` (GBNF).
struct OutputFormat {
  enum class Kind : uint8_t { kText, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  nlohmann::ordered_json schema;  // kJsonSchema: the schema, key order kept
  std::string name;               // response_format.json_schema.name
  bool strict = false;            // response_format.json_schema.strict
  std::string grammar;            // kGrammar: GBNF text
  std::string field;              // the request field it came from, for errors
};

// OpenAI's tool_choice: "none", "auto" (the default with tools), "required", or one function.
struct ToolChoice {
  enum class Kind : uint8_t { kNone, kAuto, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string function;  // kFunction: its name, one of the request's tools
};

struct CompletionRequest {
  std::string model;  // empty: the served model
  // Exactly one prompt: text, or token ids (prompt as [ids] or [[ids]]).
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_tokens;
  SamplingParams sampling;
  StreamParams stream;
  bool echo = false;
  std::optional<int> logprobs;  // number of top alternatives per token (0: only the chosen)
  std::string user;
  std::string priority;
  OutputFormat format;
};

struct ChatCompletionRequest {
  std::string model;
  std::vector<chat::ChatMessage> messages;
  nlohmann::ordered_json tools;  // null or the array, passed to the chat template
  ToolChoice tool_choice;        // kNone when there are no tools
  bool parallel_tool_calls = true;
  SamplingParams sampling;
  StreamParams stream;
  bool logprobs = false;
  int top_logprobs = 0;
  std::string user;
  std::string priority;
  OutputFormat format;
};

// llama-server's bodies; "model" (Synapse's extension) picks one of several served models.
struct TokenizeRequest {
  std::string model;
  std::string content;
  bool add_special = false;
  bool with_pieces = false;
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

// Errors: request_too_large (413), invalid_json, missing_parameter, invalid_type, invalid_value,
// unsupported_parameter (all 400), each naming the field.
Result<CompletionRequest> parse_completion_request(std::string_view body,
                                                   const RequestLimits& limits = {});
Result<ChatCompletionRequest> parse_chat_completion_request(std::string_view body,
                                                            const RequestLimits& limits = {});
Result<TokenizeRequest> parse_tokenize_request(std::string_view body,
                                               const RequestLimits& limits = {});
Result<DetokenizeRequest> parse_detokenize_request(std::string_view body,
                                                   const RequestLimits& limits = {});

}  // namespace synapse::api
