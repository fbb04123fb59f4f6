// SPDX-License-Identifier: Apache-2.0
// Chat templates: a model's `tokenizer.chat_template` (or a built-in one named by
// `--chat-template NAME`) compiled once, then rendered per request from typed messages into the
// prompt text, with the variables Hugging Face's apply_chat_template passes.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/interpreter.h"
#include "chat/value.h"

namespace synapse::chat {

struct ToolCall {
  std::string id;
  std::string name;
  // JSON text as the client sent it. Templates see it parsed (an object) when it parses as a
  // JSON object, else as the string, as llama.cpp's server does.
  std::string arguments;
};

struct ChatMessage {
  std::string role;
  std::optional<std::string> content;  // nullopt: None (an assistant turn with only tool calls)
  std::vector<ToolCall> tool_calls;    // the key is absent from the message when empty
  std::string tool_call_id;            // for role "tool"; absent when empty
  std::string name;                    // absent when empty
};

struct ChatRenderInput {
  std::vector<ChatMessage> messages;
  nlohmann::ordered_json tools;  // null (the variable is None) or an array of tool schemas
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more variables
};

// The family a template belongs to, recognized from its control tokens.
enum class TemplateFamily : uint8_t {
  kUnknown,
  kChatml,  // <|im_start|> (Qwen, Qwen2/2.5/3, Yi, many fine-tunes)
  kLlama3,
  kLlama2,
  kMistral,
  kPhi3,
  kGemma,
  kDeepseek,
  kZephyr,
  kLfm2,  // ChatML turns with <|tool_list_start|> / <|tool_call_start|> (Liquid AI's LFM2)
};
std::string_view family_name(TemplateFamily family);
TemplateFamily detect_family(std::string_view source);

class ChatTemplate {
 public:
  // Fails with template_syntax (line and column) when the source does not parse.
  static Result<ChatTemplate> compile(std::string source);

  Result<std::string> render(const ChatRenderInput& input, const RenderLimits& limits = {},
                             std::optional<std::time_t> now = std::nullopt) const;

  const std::string& source() const { return *source_; }
  TemplateFamily family() const { return family_; }

 private:
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const Program> program_;  // immutable: renders may run concurrently
  TemplateFamily family_ = TemplateFamily::kUnknown;
};

// Built-in templates for `--chat-template NAME`: chatml, qwen2.5, llama3, llama3.1, llama2,
// mistral, mixtral, phi3, gemma, deepseek, zephyr.
std::span<const std::string_view> builtin_template_names();
std::optional<std::string_view> builtin_template(std::string_view name);

// Renders a short sample conversation (system, user, assistant, user; without the system turn
// when the template rejects it with raise_exception), so that a template that cannot render is
// a clear error at start-up rather than on the first request.
Status validate_template(const ChatTemplate& chat_template, std::string_view bos_token,
                         std::string_view eos_token);

// The model's own template (may be empty: none) unless `override_name` names a built-in one or
// is template text itself (it contains "{%" or "{{"). Compiles and validates; no_chat_template
// when there is none at all.
Result<ChatTemplate> select_chat_template(std::string_view model_template,
                                          std::string_view override_name,
                                          std::string_view bos_token, std::string_view eos_token);

// JSON (insertion order kept) as template values: objects become dicts, arrays lists.
Value value_from_json(const nlohmann::ordered_json& json);
// A message as templates see it (HF's dict shape).
Value message_value(const ChatMessage& message);

}  // namespace synapse::chat
