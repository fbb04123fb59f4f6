// SPDX-License-Identifier: Apache-2.0
// Ollama's wire formats (its /api/* routes, docs/ollama.md): request bodies parsed through the
// one bounded JSON entry point into typed structs, and the response objects and NDJSON lines.
// Sampling `options` land in the OpenAI path's SamplingParams with Ollama's defaults, so one
// generation pipeline serves both dialects. What Synapse cannot honour (images, a per-request
// template, suffix/fill-in-the-middle) is refused by name, never silently dropped.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/requests.h"
#include "base/status.h"
#include "chat/chat_template.h"

namespace synapse::api {

// The Ollama release whose API this server answers like (/api/version); clients compare it.
inline constexpr std::string_view kOllamaApiVersion = "0.6.0";

// What generate and chat share: `options`, `format`, `stream`, `keep_alive`.
struct OllamaCommon {
  std::string model;
  SamplingParams sampling;         // Ollama's defaults unless `options` says otherwise
  std::optional<int64_t> num_ctx;  // options.num_ctx; checked against the model later
  OutputFormat format;             // "json" (kJsonObject) or a schema (kJsonSchema)
  bool stream = true;              // Ollama streams unless told not to
  // keep_alive as parse_keep_alive (request/model_directory.h) reads it: a duration, or seconds.
  std::optional<std::string> keep_alive;
};

struct OllamaGenerateRequest {
  OllamaCommon common;
  std::string prompt;  // may be empty: with keep_alive 0 it unloads, else it only loads
  std::string system;
  bool raw = false;  // the prompt as written, no chat template
};

struct OllamaChatRequest {
  OllamaCommon common;
  std::vector<chat::ChatMessage> messages;  // may be empty: only loads (or unloads)
  nlohmann::ordered_json tools;             // null or a non-empty array of tool schemas
};

struct OllamaEmbedRequest {
  std::string model;
  std::vector<std::string> inputs;  // /api/embeddings: the one `prompt`
  bool truncate = true;             // Ollama's default, unlike OpenAI's
  std::optional<std::string> keep_alive;
  bool legacy = false;  // /api/embeddings: answers {"embedding": [...]}
};

// /api/show, /api/delete, /api/pull: the model, as "model" or the older "name".
struct OllamaModelRequest {
  std::string model;
  bool stream = true;  // /api/pull only
};

struct OllamaCopyRequest {
  std::string source;
  std::string destination;
};

// Errors: request_too_large (413), invalid_json, missing_parameter, invalid_type, invalid_value,
// unsupported_parameter (400), each naming the field ("options.top_k", "messages[1].images").
Result<OllamaGenerateRequest> parse_ollama_generate(std::string_view body,
                                                    const RequestLimits& limits = {});
Result<OllamaChatRequest> parse_ollama_chat(std::string_view body,
                                            const RequestLimits& limits = {});
// `legacy`: /api/embeddings ({"prompt": "..."}), else /api/embed ({"input": "..." | [...]}).
Result<OllamaEmbedRequest> parse_ollama_embed(std::string_view body, bool legacy,
                                              const RequestLimits& limits = {});
// /api/show, /api/delete; /api/pull reads `stream` too.
Result<OllamaModelRequest> parse_ollama_model_request(std::string_view body,
                                                      const RequestLimits& limits = {});
Result<OllamaCopyRequest> parse_ollama_copy(std::string_view body,
                                            const RequestLimits& limits = {});

// Ollama's timestamps: RFC 3339 in UTC with nanoseconds ("2024-05-01T12:00:00.123456789Z").
std::string ollama_time(int64_t unix_ns);

// The counts and durations (nanoseconds) of a finished generation.
struct OllamaStats {
  std::string done_reason;  // "stop", "length", "load", "unload"
  int64_t total_ns = 0;
  int64_t load_ns = 0;
  int64_t prompt_eval_count = 0;
  int64_t prompt_eval_ns = 0;
  int64_t eval_count = 0;
  int64_t eval_ns = 0;
};

struct OllamaToolCall {
  std::string name;
  std::string arguments;  // JSON text; written as the object it parses to
};

// One object of a generate (`chat` false: "response") or chat ("message") answer, without the
// newline; `stats` set makes it the final one ("done": true).
struct OllamaReply {
  std::string model;
  int64_t created_ns = 0;
  bool chat = false;
  std::string text;
  std::vector<OllamaToolCall> tool_calls;  // chat only
  const OllamaStats* stats = nullptr;
};
std::string ollama_reply(const OllamaReply& reply);

// {"error": "message"}: Ollama's error body, in a response or as a stream's last line.
std::string ollama_error(std::string_view message);

// Ollama's `details` of a model, the same object in /api/tags, /api/ps and /api/show;
// "families" is [family], or null without a family.
struct OllamaDetails {
  std::string format = "gguf";     // the container format
  std::string family;              // general.architecture
  std::string parameter_size;      // "494.03M", "7.2B"
  std::string quantization_level;  // "Q4_K_M", "Q8_0", "F16"
};

// A model as /api/tags and /api/ps list it.
struct OllamaModelEntry {
  std::string name;
  int64_t modified_unix_s = 0;
  uint64_t size_bytes = 0;
  std::string digest;  // hex, no "sha256:" prefix (as Ollama lists it)
  OllamaDetails details;
  std::optional<int64_t> expires_unix_s;  // /api/ps; none: kept loaded (far future)
};
std::string ollama_tags(const std::vector<OllamaModelEntry>& models);
std::string ollama_ps(const std::vector<OllamaModelEntry>& models);

// What /api/show answers.
struct OllamaShow {
  std::string modelfile;
  std::string parameters;     // "stop   \"<|im_end|>\"" lines, as ollama_parameters writes them
  std::string template_text;  // the chat template (Jinja, not Go's text/template)
  OllamaDetails details;
  nlohmann::ordered_json model_info = nlohmann::ordered_json::object();
  std::vector<std::string> capabilities;  // "completion", "tools", "embedding"
  int64_t modified_unix_s = 0;
};
std::string ollama_show(const OllamaShow& show);

// Ollama's `parameters` text: one "name<padding> value" line per value, the value quoted as a
// Go string literal, so each stop string is a line of its own.
std::string ollama_parameters(const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace synapse::api
