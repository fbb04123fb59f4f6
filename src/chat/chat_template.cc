// SPDX-License-Identifier: Apache-2.0
#include "chat/chat_template.h"

#include <algorithm>
#include <utility>

#include "base/json_body.h"
#include "chat/ast.h"
#include "chat/builtin_templates.h"
#include "chat/lexer.h"
#include "chat/parser.h"

namespace synapse::chat {

std::string_view family_name(TemplateFamily family) {
  switch (family) {
    case TemplateFamily::kUnknown:
      return "unknown";
    case TemplateFamily::kChatml:
      return "chatml";
    case TemplateFamily::kLlama3:
      return "llama3";
    case TemplateFamily::kLlama2:
      return "llama2";
    case TemplateFamily::kMistral:
      return "mistral";
    case TemplateFamily::kPhi3:
      return "phi3";
    case TemplateFamily::kGemma:
      return "gemma";
    case TemplateFamily::kDeepseek:
      return "deepseek";
    case TemplateFamily::kZephyr:
      return "zephyr";
    case TemplateFamily::kLfm2:
      return "lfm2";
  }
  return "unknown";
}

TemplateFamily detect_family(std::string_view source) {
  auto has = [&](std::string_view marker) { return source.find(marker) != std::string_view::npos; };
  if (has("<|tool_list_start|>") || has("<|tool_call_start|>")) return TemplateFamily::kLfm2;
  if (has("<|im_start|>")) return TemplateFamily::kChatml;
  if (has("<|start_header_id|>")) return TemplateFamily::kLlama3;
  if (has("<start_of_turn>")) return TemplateFamily::kGemma;
  if (has("<|user|>") && has("<|end|>")) return TemplateFamily::kPhi3;
  if (has("<|user|>")) return TemplateFamily::kZephyr;
  if (has("[INST]") && has("<<SYS>>")) return TemplateFamily::kLlama2;
  if (has("[INST]")) return TemplateFamily::kMistral;
  if (has("<\xef\xbd\x9cUser\xef\xbd\x9c>") || has("'User: '") || has("### Instruction")) {
    return TemplateFamily::kDeepseek;
  }
  return TemplateFamily::kUnknown;
}

Result<ChatTemplate> ChatTemplate::compile(std::string source) {
  SYN_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize_template(source));
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, parse_template(std::move(tokens)));
  ChatTemplate t;
  t.family_ = detect_family(source);
  t.source_ = std::make_shared<const std::string>(std::move(source));
  t.program_ = std::shared_ptr<const Program>(std::move(program));
  return t;
}

Value value_from_json(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(value_from_json(item));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict dict;
      for (const auto& [key, item] : json.items()) dict.set(key, value_from_json(item));
      return Value::dict(std::move(dict));
    }
    default:
      return Value::none();
  }
}

Value message_value(const ChatMessage& message) {
  ValueDict dict;
  dict.set("role", Value(message.role));
  dict.set("content", message.content ? Value(*message.content) : Value::none());
  if (!message.tool_calls.empty()) {
    std::vector<Value> calls;
    for (const ToolCall& call : message.tool_calls) {
      ValueDict function;
      function.set("name", Value(call.name));
      // The client's text: through the one JSON entry point, whose depth bound keeps the
      // recursive value_from_json off deep input; anything it refuses stays a string.
      Result<nlohmann::ordered_json> parsed = parse_json_text<nlohmann::ordered_json>(
          call.arguments, JsonLimits{.max_bytes = call.arguments.size()}, JsonShape::kObject,
          "the arguments");
      function.set("arguments", parsed.ok() ? value_from_json(*parsed) : Value(call.arguments));
      ValueDict entry;
      if (!call.id.empty()) entry.set("id", Value(call.id));
      entry.set("type", Value("function"));
      entry.set("function", Value::dict(std::move(function)));
      calls.push_back(Value::dict(std::move(entry)));
    }
    dict.set("tool_calls", Value::list(std::move(calls)));
  }
  if (!message.tool_call_id.empty()) dict.set("tool_call_id", Value(message.tool_call_id));
  if (!message.name.empty()) dict.set("name", Value(message.name));
  return Value::dict(std::move(dict));
}

Result<std::string> ChatTemplate::render(const ChatRenderInput& input, const RenderLimits& limits,
                                         std::optional<std::time_t> now) const {
  RenderContext context;
  context.limits = limits;
  context.now = now;
  std::vector<Value> messages;
  messages.reserve(input.messages.size());
  for (const ChatMessage& m : input.messages) messages.push_back(message_value(m));
  ValueDict& vars = context.variables;
  vars.set("messages", Value::list(std::move(messages)));
  vars.set("tools", input.tools.is_null() ? Value::none() : value_from_json(input.tools));
  vars.set("documents", Value::none());
  vars.set("add_generation_prompt", Value(input.add_generation_prompt));
  vars.set("bos_token", Value(input.bos_token));
  vars.set("eos_token", Value(input.eos_token));
  if (input.extra.is_object()) {
    for (const auto& [key, item] : input.extra.items()) vars.set(key, value_from_json(item));
  }
  return render_program(*program_, context);
}

std::span<const std::string_view> builtin_template_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const auto& entry : builtin_template_table()) out.push_back(entry.name);
    return out;
  }();
  return names;
}

std::optional<std::string_view> builtin_template(std::string_view name) {
  for (const auto& entry : builtin_template_table()) {
    if (entry.name == name) return entry.source;
  }
  return std::nullopt;
}

Status validate_template(const ChatTemplate& chat_template, std::string_view bos_token,
                         std::string_view eos_token) {
  ChatRenderInput input;
  input.bos_token = std::string(bos_token);
  input.eos_token = std::string(eos_token);
  input.messages = {
      {"system", "You are a helpful assistant.", {}, "", ""},
      {"user", "Hello!", {}, "", ""},
      {"assistant", "Hi, how can I help?", {}, "", ""},
      {"user", "Tell me a story.", {}, "", ""},
  };
  auto rendered = chat_template.render(input);
  if (!rendered.ok() && rendered.status().code() == ErrorCode::kTemplateRaised) {
    input.messages.erase(input.messages.begin());  // templates that refuse a system turn
    rendered = chat_template.render(input);
  }
  if (!rendered.ok()) {
    const Status& s = rendered.status();
    return Status(s.code(),
                  "the chat template cannot render a sample conversation: " + s.message());
  }
  if (rendered->find("Tell me a story.") == std::string::npos) {
    return Status(ErrorCode::kTemplateError,
                  "the chat template's output leaves out the conversation's last message");
  }
  return ok_status();
}

Result<ChatTemplate> select_chat_template(std::string_view model_template,
                                          std::string_view override_name,
                                          std::string_view bos_token, std::string_view eos_token) {
  std::string source;
  std::string origin;
  if (!override_name.empty()) {
    if (const auto builtin = builtin_template(override_name)) {
      source = std::string(*builtin);
      origin = "built-in template '" + std::string(override_name) + "'";
    } else if (override_name.find("{%") != std::string_view::npos ||
               override_name.find("{{") != std::string_view::npos) {
      source = std::string(override_name);
      origin = "the given template";
    } else {
      std::string names;
      for (std::string_view n : builtin_template_names())
        names += (names.empty() ? "" : ", ") + std::string(n);
      return Status(
          ErrorCode::kInvalidArgument,
          "unknown chat template '" + std::string(override_name) + "'; built-in ones: " + names);
    }
  } else if (!model_template.empty()) {
    source = std::string(model_template);
    origin = "the model's chat template";
  } else {
    return Status(ErrorCode::kNoChatTemplate,
                  "the model has no chat template; name one with --chat-template");
  }
  auto compiled = ChatTemplate::compile(std::move(source));
  if (!compiled.ok()) {
    const Status& s = compiled.status();
    return Status(s.code(), origin + ": " + s.message());
  }
  const Status valid = validate_template(*compiled, bos_token, eos_token);
  if (!valid.ok()) return Status(valid.code(), origin + ": " + valid.message());
  return compiled;
}

}  // namespace synapse::chat
