// SPDX-License-Identifier: Apache-2.0
#include "api/requests.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/echo.h"
#include "base/json_body.h"
#include "base/utf8.h"

namespace synapse::api {
namespace {

using Json = nlohmann::ordered_json;

std::string json_type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unknown value";
  }
}

Status field_error(ErrorCode code, const std::string& path, const std::string& message) {
  return Status(code, message).with_field(path);
}

Status wrong_type(const std::string& path, std::string_view expected, const Json& v) {
  return field_error(
      ErrorCode::kInvalidType, path,
      "'" + path + "' must be " + std::string(expected) + ", got " + json_type_name(v));
}

Status bad_value(const std::string& path, const std::string& why) {
  return field_error(ErrorCode::kInvalidValue, path, "'" + path + "' " + why);
}

Status missing(const std::string& path) {
  return field_error(ErrorCode::kMissingParameter, path, "'" + path + "' is required");
}

Status unsupported(const std::string& path, const std::string& why) {
  return field_error(ErrorCode::kUnsupportedParameter, path, "'" + path + "' " + why);
}

Result<Json> parse_body(std::string_view body, const RequestLimits& limits) {
  return parse_json_text<Json>(
      body, JsonLimits{.max_bytes = limits.max_body_bytes, .max_depth = limits.max_json_depth});
}

// A field of an object: nullptr when absent or null (OpenAI treats null as "not given").
const Json* field(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string join_path(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

Result<std::optional<std::string>> get_string(const Json& object, std::string_view key,
                                              const std::string& prefix = "") {
  const Json* v = field(object, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return wrong_type(join_path(prefix, key), "a string", *v);
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::optional<bool>> get_bool(const Json& object, std::string_view key,
                                     const std::string& prefix = "") {
  const Json* v = field(object, key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return wrong_type(join_path(prefix, key), "a boolean", *v);
  return std::optional<bool>(v->get<bool>());
}

Result<std::optional<int64_t>> get_int(const Json& object, std::string_view key, int64_t lo,
                                       int64_t hi, const std::string& prefix = "") {
  const Json* v = field(object, key);
  if (v == nullptr) return std::optional<int64_t>();
  const std::string path = join_path(prefix, key);
  const std::string range = "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
  int64_t value = 0;
  // is_number_integer() is also true for unsigned values: one above INT64_MAX read as int64_t
  // would wrap negative, so it is refused first, quoted as written.
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX}) {
    return bad_value(path, range + ", got " + v->dump());
  } else if (v->is_number_integer()) {
    value = v->get<int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
             std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9.0e15) {
    value = static_cast<int64_t>(v->get<double>());  // 5.0 is an integer, as in Python
  } else {
    return wrong_type(path, "an integer", *v);
  }
  if (value < lo || value > hi) {
    return bad_value(path, range + ", got " + std::to_string(value));
  }
  return std::optional<int64_t>(value);
}

std::string format_number(double d) {
  std::string s = std::to_string(d);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

Result<std::optional<double>> get_number(const Json& object, std::string_view key, double lo,
                                         double hi, const std::string& prefix = "") {
  const Json* v = field(object, key);
  if (v == nullptr) return std::optional<double>();
  const std::string path = join_path(prefix, key);
  if (!v->is_number()) return wrong_type(path, "a number", *v);
  const double value = v->get<double>();
  if (!(value >= lo && value <= hi)) {
    return bad_value(path, "must be between " + format_number(lo) + " and " + format_number(hi));
  }
  return std::optional<double>(value);
}

Status check_text(const std::string& path, const std::string& text) {
  if (!is_valid_utf8(text)) return bad_value(path, "is not valid UTF-8");
  return ok_status();
}

Result<std::vector<int32_t>> token_array(const Json& array, const std::string& path,
                                         size_t max_tokens) {
  if (array.size() > max_tokens) {
    return bad_value(path, "has more than " + std::to_string(max_tokens) + " tokens");
  }
  std::vector<int32_t> tokens;
  tokens.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    const Json& t = array[i];
    const std::string item = path + "[" + std::to_string(i) + "]";
    if (!t.is_number_integer()) return wrong_type(item, "a token id (an integer)", t);
    if (t.is_number_unsigned() && t.get<uint64_t>() > uint64_t{INT32_MAX}) {
      return bad_value(item, "is not a valid token id");  // before get<int64_t> could wrap it
    }
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return bad_value(item, "is not a valid token id");
    }
    tokens.push_back(static_cast<int32_t>(id));
  }
  return tokens;
}

Status parse_stop(const Json& body, const RequestLimits& limits, std::vector<std::string>& stop) {
  const Json* v = field(body, "stop");
  if (v == nullptr) return ok_status();
  if (v->is_string()) {
    if (!v->get<std::string>().empty()) stop.push_back(v->get<std::string>());
    return check_text("stop", v->get<std::string>());
  }
  if (!v->is_array()) return wrong_type("stop", "a string or an array of strings", *v);
  if (v->size() > limits.max_stop_sequences) {
    return bad_value("stop",
                     "has more than " + std::to_string(limits.max_stop_sequences) + " sequences");
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string path = "stop[" + std::to_string(i) + "]";
    if (!(*v)[i].is_string()) return wrong_type(path, "a string", (*v)[i]);
    const std::string s = (*v)[i].get<std::string>();
    SYN_RETURN_IF_ERROR(check_text(path, s));
    if (s.empty()) return bad_value(path, "is empty");
    stop.push_back(s);
  }
  return ok_status();
}

Status parse_logit_bias(const Json& body, const RequestLimits& limits,
                        std::vector<std::pair<int32_t, double>>& out) {
  const Json* v = field(body, "logit_bias");
  if (v == nullptr) return ok_status();
  if (!v->is_object()) return wrong_type("logit_bias", "an object of token ids to numbers", *v);
  if (v->size() > limits.max_logit_bias) {
    return bad_value("logit_bias",
                     "has more than " + std::to_string(limits.max_logit_bias) + " entries");
  }
  for (const auto& [key, bias] : v->items()) {
    const std::string path = "logit_bias." + clip_for_echo(key);
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0 || id < 0 ||
        id > std::numeric_limits<int32_t>::max()) {
      return bad_value(path, "is not a token id");
    }
    if (!bias.is_number()) return wrong_type(path, "a number", bias);
    const double b = bias.get<double>();
    if (!(b >= -100.0 && b <= 100.0)) return bad_value(path, "must be between -100 and 100");
    out.emplace_back(static_cast<int32_t>(id), b);
  }
  return ok_status();
}

// A JSON Schema as a request carries it: an object, or true/false.
Status check_schema_value(const Json& schema, const std::string& path) {
  if (!schema.is_object() && !schema.is_boolean()) {
    return wrong_type(path, "a JSON Schema (an object)", schema);
  }
  return ok_status();
}

// response_format (OpenAI), and llama-server's json_schema and grammar; at most one of them.
Status parse_output_format(const Json& body, OutputFormat& out) {
  int given = 0;
  if (const Json* format = field(body, "response_format")) {
    if (!format->is_object()) return wrong_type("response_format", "an object", *format);
    SYN_ASSIGN_OR_RETURN(const auto type, get_string(*format, "type", "response_format"));
    if (!type) return missing("response_format.type");
    if (*type == "json_object") {
      out.kind = OutputFormat::Kind::kJsonObject;
      out.field = "response_format";
      // llama-server lets json_object carry a schema too; honour it when present.
      if (const Json* schema = field(*format, "schema")) {
        SYN_RETURN_IF_ERROR(check_schema_value(*schema, "response_format.schema"));
        out.kind = OutputFormat::Kind::kJsonSchema;
        out.schema = *schema;
        out.field = "response_format.schema";
      }
    } else if (*type == "json_schema") {
      const Json* spec = field(*format, "json_schema");
      if (spec == nullptr) return missing("response_format.json_schema");
      if (!spec->is_object()) {
        return wrong_type("response_format.json_schema", "an object", *spec);
      }
      SYN_ASSIGN_OR_RETURN(const auto name,
                           get_string(*spec, "name", "response_format.json_schema"));
      if (name) {
        SYN_RETURN_IF_ERROR(check_text("response_format.json_schema.name", *name));
        out.name = *name;
      }
      SYN_ASSIGN_OR_RETURN(const auto strict,
                           get_bool(*spec, "strict", "response_format.json_schema"));
      out.strict = strict.value_or(false);
      const Json* schema = field(*spec, "schema");
      out.kind = OutputFormat::Kind::kJsonSchema;
      out.field = "response_format.json_schema.schema";
      if (schema == nullptr) {
        out.kind = OutputFormat::Kind::kJsonObject;  // OpenAI: no schema means any JSON object
        out.field = "response_format.json_schema";
      } else {
        SYN_RETURN_IF_ERROR(check_schema_value(*schema, out.field));
        out.schema = *schema;
      }
    } else if (*type != "text") {
      return bad_value(
          "response_format.type",
          "'" + clip_for_echo(*type) +
              "' is not a response format; use 'text', 'json_object' or 'json_schema'");
    }
    ++given;
  }
  if (const Json* schema = field(body, "json_schema")) {
    SYN_RETURN_IF_ERROR(check_schema_value(*schema, "json_schema"));
    out.kind = OutputFormat::Kind::kJsonSchema;
    out.schema = *schema;
    out.field = "json_schema";
    ++given;
  }
  SYN_ASSIGN_OR_RETURN(const auto grammar, get_string(body, "grammar"));
  if (grammar && !grammar->empty()) {
    out.kind = OutputFormat::Kind::kGrammar;
    out.grammar = *grammar;
    out.field = "grammar";
    ++given;
  }
  if (given > 1) {
    return bad_value(out.field,
                     "only one of 'response_format', 'json_schema' and 'grammar' may "
                     "constrain the output");
  }
  return ok_status();
}

// tool_choice and parallel_tool_calls, after tools.
Status parse_tool_choice(const Json& body, ChatCompletionRequest& r) {
  const bool has_tools = r.tools.is_array() && !r.tools.empty();
  r.tool_choice.kind = has_tools ? ToolChoice::Kind::kAuto : ToolChoice::Kind::kNone;
  SYN_ASSIGN_OR_RETURN(const auto parallel, get_bool(body, "parallel_tool_calls"));
  r.parallel_tool_calls = parallel.value_or(true);
  const Json* choice = field(body, "tool_choice");
  if (choice == nullptr) return ok_status();
  if (choice->is_string()) {
    const std::string& name = choice->get_ref<const std::string&>();
    if (name == "none") {
      r.tool_choice.kind = ToolChoice::Kind::kNone;
    } else if (name == "auto") {
      r.tool_choice.kind = has_tools ? ToolChoice::Kind::kAuto : ToolChoice::Kind::kNone;
    } else if (name == "required") {
      if (!has_tools) return bad_value("tool_choice", "'required' needs at least one tool");
      r.tool_choice.kind = ToolChoice::Kind::kRequired;
    } else {
      return bad_value("tool_choice", "must be 'none', 'auto', 'required' or a function");
    }
    return ok_status();
  }
  if (!choice->is_object()) return wrong_type("tool_choice", "a string or an object", *choice);
  SYN_ASSIGN_OR_RETURN(const auto type, get_string(*choice, "type", "tool_choice"));
  if (!type || *type != "function") return bad_value("tool_choice.type", "must be 'function'");
  const Json* function = field(*choice, "function");
  if (function == nullptr || !function->is_object()) {
    return missing("tool_choice.function");
  }
  SYN_ASSIGN_OR_RETURN(const auto name, get_string(*function, "name", "tool_choice.function"));
  if (!name) return missing("tool_choice.function.name");
  bool found = false;
  for (const Json& tool : r.tools.is_array() ? r.tools : Json::array()) {
    const Json* f = field(tool, "function");
    if (f != nullptr && f->is_object() && f->value("name", std::string()) == *name) found = true;
  }
  if (!found) {
    return bad_value("tool_choice.function.name",
                     "'" + clip_for_echo(*name) + "' is not one of the request's tools");
  }
  r.tool_choice.kind = ToolChoice::Kind::kFunction;
  r.tool_choice.function = *name;
  return ok_status();
}

// Each tool: {"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}.
Status check_tools(const Json& tools) {
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string path = "tools[" + std::to_string(i) + "]";
    const Json& tool = tools[i];
    SYN_ASSIGN_OR_RETURN(const auto type, get_string(tool, "type", path));
    if (type && *type != "function") {
      return unsupported(path + ".type", "only 'function' tools are supported");
    }
    const Json* function = field(tool, "function");
    if (function == nullptr) return missing(path + ".function");
    if (!function->is_object()) return wrong_type(path + ".function", "an object", *function);
    SYN_ASSIGN_OR_RETURN(const auto name, get_string(*function, "name", path + ".function"));
    if (!name || name->empty()) return missing(path + ".function.name");
    SYN_RETURN_IF_ERROR(check_text(path + ".function.name", *name));
    if (const Json* parameters = field(*function, "parameters")) {
      SYN_RETURN_IF_ERROR(check_schema_value(*parameters, path + ".function.parameters"));
    }
  }
  return ok_status();
}

// Fields shared by both endpoints.
Status parse_common(const Json& body, const RequestLimits& limits, std::string& model,
                    SamplingParams& s, StreamParams& stream, std::string& user,
                    std::string& priority) {
  SYN_ASSIGN_OR_RETURN(const auto model_name, get_string(body, "model"));
  if (model_name) {
    SYN_RETURN_IF_ERROR(check_text("model", *model_name));
    model = *model_name;
  }
  SYN_ASSIGN_OR_RETURN(const auto temperature, get_number(body, "temperature", 0.0, 2.0));
  if (temperature) s.temperature = *temperature;
  SYN_ASSIGN_OR_RETURN(const auto top_p, get_number(body, "top_p", 0.0, 1.0));
  if (top_p) s.top_p = *top_p;
  SYN_ASSIGN_OR_RETURN(const auto top_k, get_int(body, "top_k", 0, 1 << 20));
  if (top_k) s.top_k = *top_k;
  SYN_ASSIGN_OR_RETURN(const auto min_p, get_number(body, "min_p", 0.0, 1.0));
  if (min_p) s.min_p = *min_p;
  SYN_ASSIGN_OR_RETURN(const auto repeat_penalty, get_number(body, "repeat_penalty", 0.0, 10.0));
  if (repeat_penalty) s.repeat_penalty = *repeat_penalty;
  SYN_ASSIGN_OR_RETURN(const auto frequency, get_number(body, "frequency_penalty", -2.0, 2.0));
  if (frequency) s.frequency_penalty = *frequency;
  SYN_ASSIGN_OR_RETURN(const auto presence, get_number(body, "presence_penalty", -2.0, 2.0));
  if (presence) s.presence_penalty = *presence;
  SYN_ASSIGN_OR_RETURN(s.seed, get_int(body, "seed", std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max()));
  SYN_RETURN_IF_ERROR(parse_stop(body, limits, s.stop));
  SYN_RETURN_IF_ERROR(parse_logit_bias(body, limits, s.logit_bias));
  SYN_ASSIGN_OR_RETURN(const auto speculative, get_bool(body, "speculative"));
  s.speculative = speculative.value_or(true);
  SYN_ASSIGN_OR_RETURN(const auto n, get_int(body, "n", 1, 128));
  if (n && *n != 1) return unsupported("n", "must be 1: one choice per request is supported");
  SYN_ASSIGN_OR_RETURN(const auto stream_flag, get_bool(body, "stream"));
  stream.stream = stream_flag.value_or(false);
  if (const Json* options = field(body, "stream_options")) {
    if (!options->is_object()) return wrong_type("stream_options", "an object", *options);
    if (!stream.stream) {
      return bad_value("stream_options", "is only allowed when 'stream' is true");
    }
    SYN_ASSIGN_OR_RETURN(const auto usage, get_bool(*options, "include_usage", "stream_options"));
    stream.include_usage = usage.value_or(false);
  }
  SYN_ASSIGN_OR_RETURN(const auto user_name, get_string(body, "user"));
  if (user_name) user = *user_name;
  SYN_ASSIGN_OR_RETURN(const auto priority_name, get_string(body, "priority"));
  if (priority_name) {
    if (std::find(std::begin(kPriorityNames), std::end(kPriorityNames), *priority_name) ==
        std::end(kPriorityNames)) {
      return bad_value("priority", "must be 'interactive', 'batch' or 'background'");
    }
    priority = *priority_name;
  }
  return ok_status();
}

// `content`: a string, or an array of parts of which only {"type": "text", "text": ...} are
// supported (joined with no separator).
Result<std::optional<std::string>> parse_content(const Json& message, const std::string& prefix,
                                                 const RequestLimits& limits) {
  const Json* v = field(message, "content");
  const std::string path = prefix + ".content";
  if (v == nullptr) return std::optional<std::string>();
  if (v->is_string()) {
    SYN_RETURN_IF_ERROR(check_text(path, v->get<std::string>()));
    return std::optional<std::string>(v->get<std::string>());
  }
  if (!v->is_array()) return wrong_type(path, "a string or an array of content parts", *v);
  if (v->size() > limits.max_content_parts) {
    return bad_value(path, "has more than " + std::to_string(limits.max_content_parts) + " parts");
  }
  std::string text;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string part_path = path + "[" + std::to_string(i) + "]";
    const Json& part = (*v)[i];
    if (!part.is_object()) return wrong_type(part_path, "an object", part);
    SYN_ASSIGN_OR_RETURN(const auto type, get_string(part, "type", part_path));
    if (!type) return missing(part_path + ".type");
    if (*type != "text") {
      return unsupported(part_path + ".type",
                         "'" + clip_for_echo(*type) + "' content is not supported; only 'text' is");
    }
    SYN_ASSIGN_OR_RETURN(const auto part_text, get_string(part, "text", part_path));
    if (!part_text) return missing(part_path + ".text");
    SYN_RETURN_IF_ERROR(check_text(part_path + ".text", *part_text));
    text += *part_text;
  }
  return std::optional<std::string>(std::move(text));
}

Result<std::vector<chat::ToolCall>> parse_tool_calls(const Json& message,
                                                     const std::string& prefix) {
  std::vector<chat::ToolCall> calls;
  const Json* v = field(message, "tool_calls");
  if (v == nullptr) return calls;
  const std::string path = prefix + ".tool_calls";
  if (!v->is_array()) return wrong_type(path, "an array", *v);
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string call_path = path + "[" + std::to_string(i) + "]";
    const Json& c = (*v)[i];
    if (!c.is_object()) return wrong_type(call_path, "an object", c);
    chat::ToolCall call;
    SYN_ASSIGN_OR_RETURN(const auto id, get_string(c, "id", call_path));
    call.id = id.value_or("");
    SYN_ASSIGN_OR_RETURN(const auto type, get_string(c, "type", call_path));
    if (type && *type != "function") {
      return unsupported(call_path + ".type", "must be 'function'");
    }
    const Json* function = field(c, "function");
    if (function == nullptr) {
      return missing(call_path + ".function");
    }
    if (!function->is_object()) return wrong_type(call_path + ".function", "an object", *function);
    SYN_ASSIGN_OR_RETURN(const auto name, get_string(*function, "name", call_path + ".function"));
    if (!name) {
      return missing(call_path + ".function.name");
    }
    call.name = *name;
    const Json* arguments = field(*function, "arguments");
    if (arguments != nullptr) {
      // OpenAI sends a JSON string; an object is accepted too and kept as its JSON text.
      call.arguments = arguments->is_string()
                           ? arguments->get<std::string>()
                           : arguments->dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    SYN_RETURN_IF_ERROR(check_text(call_path + ".function", call.name + call.arguments));
    calls.push_back(std::move(call));
  }
  return calls;
}

Result<chat::ChatMessage> parse_message(const Json& m, const std::string& path,
                                        const RequestLimits& limits) {
  if (!m.is_object()) return wrong_type(path, "an object", m);
  chat::ChatMessage message;
  SYN_ASSIGN_OR_RETURN(const auto role, get_string(m, "role", path));
  if (!role) {
    return missing(path + ".role");
  }
  // "developer" is OpenAI's newer name for the system role.
  message.role = *role == "developer" ? "system" : *role;
  if (message.role != "system" && message.role != "user" && message.role != "assistant" &&
      message.role != "tool") {
    return bad_value(path + ".role", "must be one of system, developer, user, assistant, tool");
  }
  SYN_ASSIGN_OR_RETURN(message.content, parse_content(m, path, limits));
  SYN_ASSIGN_OR_RETURN(message.tool_calls, parse_tool_calls(m, path));
  if (!message.tool_calls.empty() && message.role != "assistant") {
    return bad_value(path + ".tool_calls", "is only allowed in assistant messages");
  }
  if (!message.content && !(message.role == "assistant" && !message.tool_calls.empty())) {
    return missing(path + ".content");
  }
  SYN_ASSIGN_OR_RETURN(const auto tool_call_id, get_string(m, "tool_call_id", path));
  message.tool_call_id = tool_call_id.value_or("");
  SYN_ASSIGN_OR_RETURN(const auto name, get_string(m, "name", path));
  message.name = name.value_or("");
  SYN_RETURN_IF_ERROR(check_text(path, message.tool_call_id + message.name));
  return message;
}

}  // namespace

Result<CompletionRequest> parse_completion_request(std::string_view body,
                                                   const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json json, parse_body(body, limits));
  CompletionRequest r;
  SYN_RETURN_IF_ERROR(
      parse_common(json, limits, r.model, r.sampling, r.stream, r.user, r.priority));
  SYN_RETURN_IF_ERROR(parse_output_format(json, r.format));
  SYN_ASSIGN_OR_RETURN(r.sampling.max_tokens, get_int(json, "max_tokens", 0, 1 << 24));
  const Json* prompt = field(json, "prompt");
  if (prompt == nullptr) {
    return missing("prompt");
  }
  if (prompt->is_string()) {
    SYN_RETURN_IF_ERROR(check_text("prompt", prompt->get<std::string>()));
    r.prompt_text = prompt->get<std::string>();
  } else if (prompt->is_array()) {
    if (prompt->empty()) return bad_value("prompt", "is empty");
    const Json& first = (*prompt)[0];
    if (first.is_number_integer()) {
      SYN_ASSIGN_OR_RETURN(r.prompt_tokens,
                           token_array(*prompt, "prompt", limits.max_prompt_tokens));
    } else {
      if (prompt->size() > 1) {
        return unsupported("prompt", "holds several prompts; one prompt per request is supported");
      }
      if (first.is_string()) {
        SYN_RETURN_IF_ERROR(check_text("prompt[0]", first.get<std::string>()));
        r.prompt_text = first.get<std::string>();
      } else if (first.is_array()) {
        SYN_ASSIGN_OR_RETURN(r.prompt_tokens,
                             token_array(first, "prompt[0]", limits.max_prompt_tokens));
        if (r.prompt_tokens.empty()) return bad_value("prompt[0]", "is empty");
      } else {
        return wrong_type("prompt[0]", "a string or an array of token ids", first);
      }
    }
  } else {
    return wrong_type("prompt", "a string, an array of strings or an array of token ids", *prompt);
  }
  SYN_ASSIGN_OR_RETURN(const auto echo, get_bool(json, "echo"));
  r.echo = echo.value_or(false);
  SYN_ASSIGN_OR_RETURN(const auto logprobs, get_int(json, "logprobs", 0, limits.max_top_logprobs));
  if (logprobs) r.logprobs = static_cast<int>(*logprobs);
  if (const Json* suffix = field(json, "suffix")) {
    (void)suffix;
    return unsupported("suffix", "is not supported");
  }
  SYN_ASSIGN_OR_RETURN(const auto best_of, get_int(json, "best_of", 1, 128));
  if (best_of && *best_of != 1) return unsupported("best_of", "must be 1");
  return r;
}

Result<ChatCompletionRequest> parse_chat_completion_request(std::string_view body,
                                                            const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json json, parse_body(body, limits));
  ChatCompletionRequest r;
  SYN_RETURN_IF_ERROR(
      parse_common(json, limits, r.model, r.sampling, r.stream, r.user, r.priority));
  SYN_ASSIGN_OR_RETURN(r.sampling.max_tokens, get_int(json, "max_tokens", 1, 1 << 24));
  SYN_ASSIGN_OR_RETURN(const auto max_completion,
                       get_int(json, "max_completion_tokens", 1, 1 << 24));
  if (max_completion) r.sampling.max_tokens = max_completion;  // the newer name wins
  const Json* messages = field(json, "messages");
  if (messages == nullptr) {
    return missing("messages");
  }
  if (!messages->is_array()) return wrong_type("messages", "an array", *messages);
  if (messages->empty()) return bad_value("messages", "must hold at least one message");
  if (messages->size() > limits.max_messages) {
    return bad_value("messages",
                     "has more than " + std::to_string(limits.max_messages) + " messages");
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    SYN_ASSIGN_OR_RETURN(
        chat::ChatMessage m,
        parse_message((*messages)[i], "messages[" + std::to_string(i) + "]", limits));
    r.messages.push_back(std::move(m));
  }
  if (const Json* tools = field(json, "tools")) {
    if (!tools->is_array()) return wrong_type("tools", "an array", *tools);
    if (tools->size() > limits.max_tools) {
      return bad_value("tools", "has more than " + std::to_string(limits.max_tools) + " tools");
    }
    for (size_t i = 0; i < tools->size(); ++i) {
      if (!(*tools)[i].is_object()) {
        return wrong_type("tools[" + std::to_string(i) + "]", "an object", (*tools)[i]);
      }
    }
    SYN_RETURN_IF_ERROR(check_tools(*tools));
    if (!tools->empty()) r.tools = *tools;
  }
  SYN_RETURN_IF_ERROR(parse_tool_choice(json, r));
  SYN_RETURN_IF_ERROR(parse_output_format(json, r.format));
  SYN_ASSIGN_OR_RETURN(const auto logprobs, get_bool(json, "logprobs"));
  r.logprobs = logprobs.value_or(false);
  SYN_ASSIGN_OR_RETURN(const auto top, get_int(json, "top_logprobs", 0, limits.max_top_logprobs));
  if (top) {
    if (!r.logprobs) return bad_value("top_logprobs", "requires 'logprobs' to be true");
    r.top_logprobs = static_cast<int>(*top);
  }
  return r;
}

Result<TokenizeRequest> parse_tokenize_request(std::string_view body, const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json json, parse_body(body, limits));
  TokenizeRequest r;
  SYN_ASSIGN_OR_RETURN(const auto content, get_string(json, "content"));
  if (!content) return missing("content");
  SYN_RETURN_IF_ERROR(check_text("content", *content));
  r.content = *content;
  SYN_ASSIGN_OR_RETURN(const auto add_special, get_bool(json, "add_special"));
  r.add_special = add_special.value_or(false);
  SYN_ASSIGN_OR_RETURN(const auto with_pieces, get_bool(json, "with_pieces"));
  r.with_pieces = with_pieces.value_or(false);
  SYN_ASSIGN_OR_RETURN(const auto model, get_string(json, "model"));
  r.model = model.value_or("");
  return r;
}

Result<DetokenizeRequest> parse_detokenize_request(std::string_view body,
                                                   const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json json, parse_body(body, limits));
  const Json* tokens = field(json, "tokens");
  if (tokens == nullptr) return missing("tokens");
  if (!tokens->is_array()) return wrong_type("tokens", "an array of token ids", *tokens);
  DetokenizeRequest r;
  SYN_ASSIGN_OR_RETURN(r.tokens, token_array(*tokens, "tokens", limits.max_prompt_tokens));
  SYN_ASSIGN_OR_RETURN(const auto model, get_string(json, "model"));
  r.model = model.value_or("");
  return r;
}

}  // namespace synapse::api
