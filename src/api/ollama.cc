// SPDX-License-Identifier: Apache-2.0
#include "api/ollama.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "base/echo.h"
#include "base/json_body.h"

namespace synapse::api {
namespace {

using Json = nlohmann::ordered_json;

Status field_error(ErrorCode code, const std::string& field, const std::string& message) {
  return Status(code, message, ErrorWhere{.field = field});
}
Status wrong_type(const std::string& field, const std::string& expected) {
  return field_error(ErrorCode::kInvalidType, field, "must be " + expected);
}
Status refused(const std::string& field, const std::string& why) {
  return field_error(ErrorCode::kUnsupportedParameter, field, why);
}

// The value of `key`, or nullptr when absent or null (Ollama's Go structs read null as unset).
const Json* find(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string path_of(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

Result<Json> parse_object(std::string_view body, const RequestLimits& limits) {
  return parse_json_text<Json>(
      body, JsonLimits{.max_bytes = limits.max_body_bytes, .max_depth = limits.max_json_depth});
}

Status read_string(const Json& o, std::string_view key, const std::string& prefix,
                   std::string& out) {
  const Json* v = find(o, key);
  if (v == nullptr) return ok_status();
  if (!v->is_string()) return wrong_type(path_of(prefix, key), "a string");
  out = v->get<std::string>();
  return ok_status();
}

Status read_bool(const Json& o, std::string_view key, bool& out) {
  const Json* v = find(o, key);
  if (v == nullptr) return ok_status();
  if (!v->is_boolean()) return wrong_type(std::string(key), "a boolean");
  out = v->get<bool>();
  return ok_status();
}

// "model", or the older "name" that Ollama still accepts.
Status read_model(const Json& o, std::string& out, bool required) {
  SYN_RETURN_IF_ERROR(read_string(o, "model", "", out));
  if (out.empty()) SYN_RETURN_IF_ERROR(read_string(o, "name", "", out));
  if (required && out.empty()) {
    return field_error(ErrorCode::kMissingParameter, "model", "model is required");
  }
  return ok_status();
}

// A number of seconds or a duration string, as text parse_keep_alive reads.
Status read_keep_alive(const Json& o, std::optional<std::string>& out) {
  const Json* v = find(o, "keep_alive");
  if (v == nullptr) return ok_status();
  if (v->is_string()) {
    out = v->get<std::string>();
  } else if (v->is_number_integer()) {
    out = std::to_string(v->get<int64_t>());
  } else if (v->is_number()) {
    const double s = v->get<double>();
    if (!std::isfinite(s) || std::fabs(s) > 1e12) {
      return field_error(ErrorCode::kInvalidValue, "keep_alive", "is out of range");
    }
    out = s < 0 ? std::string("-1") : std::to_string(std::llround(s * 1000.0)) + "ms";
  } else {
    return wrong_type("keep_alive", "a duration string or a number of seconds");
  }
  return ok_status();
}

Status read_number(const Json& o, std::string_view key, double lo, double hi, double& out) {
  const Json* v = find(o, key);
  if (v == nullptr) return ok_status();
  const std::string field = path_of("options", key);
  if (!v->is_number()) return wrong_type(field, "a number");
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi)) return field_error(ErrorCode::kInvalidValue, field, "is out of range");
  out = d;
  return ok_status();
}

Result<std::optional<int64_t>> read_int(const Json& o, std::string_view key) {
  const Json* v = find(o, key);
  if (v == nullptr) return std::optional<int64_t>();
  // Go clients send whole floats (2048.0) for ints; accept those.
  if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>() &&
      std::fabs(v->get<double>()) < 9e15) {
    return std::optional<int64_t>(static_cast<int64_t>(v->get<double>()));
  }
  if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX)) {
    return wrong_type(path_of("options", key), "an integer");
  }
  return std::optional<int64_t>(v->get<int64_t>());
}

// Ollama's defaults (its api.DefaultOptions), then `options` over them. Runner options that only
// tune Ollama's own process (num_gpu, num_thread, use_mmap, ...) and unknown keys are ignored, as
// Ollama ignores unknown ones.
Status read_options(const Json& body, const RequestLimits& limits, OllamaCommon& out) {
  SamplingParams& s = out.sampling;
  s.temperature = 0.8;
  s.top_p = 0.9;
  s.top_k = 40;
  s.repeat_penalty = 1.1;
  const Json* o = find(body, "options");
  if (o == nullptr) return ok_status();
  if (!o->is_object()) return wrong_type("options", "an object");
  SYN_RETURN_IF_ERROR(read_number(*o, "temperature", 0.0, 100.0, s.temperature));
  SYN_RETURN_IF_ERROR(read_number(*o, "top_p", 0.0, 1.0, s.top_p));
  SYN_RETURN_IF_ERROR(read_number(*o, "min_p", 0.0, 1.0, s.min_p));
  SYN_RETURN_IF_ERROR(read_number(*o, "repeat_penalty", 0.0, 100.0, s.repeat_penalty));
  SYN_RETURN_IF_ERROR(read_number(*o, "presence_penalty", -2.0, 2.0, s.presence_penalty));
  SYN_RETURN_IF_ERROR(read_number(*o, "frequency_penalty", -2.0, 2.0, s.frequency_penalty));
  SYN_ASSIGN_OR_RETURN(const std::optional<int64_t> top_k, read_int(*o, "top_k"));
  if (top_k) s.top_k = std::max<int64_t>(*top_k, 0);
  SYN_ASSIGN_OR_RETURN(s.seed, read_int(*o, "seed"));
  if (s.seed && *s.seed < 0) s.seed.reset();  // Ollama: -1 means random
  SYN_ASSIGN_OR_RETURN(const std::optional<int64_t> num_predict, read_int(*o, "num_predict"));
  // Negative (-1 infinite, -2 fill the context): until the end or a full context.
  if (num_predict && *num_predict >= 0) s.max_tokens = *num_predict;
  SYN_ASSIGN_OR_RETURN(out.num_ctx, read_int(*o, "num_ctx"));
  if (const Json* stop = find(*o, "stop")) {
    const Json list = stop->is_string() ? Json::array({*stop}) : *stop;
    if (!list.is_array()) return wrong_type("options.stop", "an array of strings");
    for (const Json& item : list) {
      if (!item.is_string()) return wrong_type("options.stop", "an array of strings");
      if (!item.get_ref<const std::string&>().empty()) s.stop.push_back(item.get<std::string>());
    }
    if (s.stop.size() > limits.max_stop_sequences) {
      return field_error(ErrorCode::kInvalidValue, "options.stop",
                         "has more than " + std::to_string(limits.max_stop_sequences) + " items");
    }
  }
  return ok_status();
}

// "json" (any JSON value, Ollama's JSON mode: here a JSON object) or a JSON schema object.
Status read_format(const Json& body, OutputFormat& out) {
  const Json* v = find(body, "format");
  if (v == nullptr) return ok_status();
  out.field = "format";
  if (v->is_string()) {
    const std::string& name = v->get_ref<const std::string&>();
    if (name.empty()) return ok_status();
    if (name != "json") {
      return field_error(ErrorCode::kInvalidValue, "format",
                         "must be \"json\" or a JSON schema, not '" + clip_for_echo(name) + "'");
    }
    out.kind = OutputFormat::Kind::kJsonObject;
    return ok_status();
  }
  if (!v->is_object()) return wrong_type("format", "\"json\" or a JSON schema object");
  out.kind = OutputFormat::Kind::kJsonSchema;
  out.schema = *v;
  return ok_status();
}

Status read_common(const Json& body, const RequestLimits& limits, OllamaCommon& out) {
  SYN_RETURN_IF_ERROR(read_model(body, out.model, true));
  SYN_RETURN_IF_ERROR(read_options(body, limits, out));
  SYN_RETURN_IF_ERROR(read_format(body, out.format));
  SYN_RETURN_IF_ERROR(read_bool(body, "stream", out.stream));
  SYN_RETURN_IF_ERROR(read_keep_alive(body, out.keep_alive));
  bool think = false;
  SYN_RETURN_IF_ERROR(read_bool(body, "think", think));
  if (think) return refused("think", "thinking mode is not supported");
  return ok_status();
}

// Fields Synapse cannot honour: refused when given a non-empty value.
Status refuse_if_set(const Json& o, std::string_view key, const std::string& prefix,
                     const std::string& why) {
  const Json* v = find(o, key);
  if (v == nullptr) return ok_status();
  const bool empty =
      v->is_string() ? v->get_ref<const std::string&>().empty() : v->is_array() && v->empty();
  return empty ? ok_status() : refused(path_of(prefix, key), why);
}

Result<chat::ChatMessage> read_message(const Json& m, const std::string& path) {
  if (!m.is_object()) return wrong_type(path, "an object");
  chat::ChatMessage msg;
  SYN_RETURN_IF_ERROR(read_string(m, "role", path, msg.role));
  if (msg.role.empty()) {
    return field_error(ErrorCode::kMissingParameter, path + ".role", "role is required");
  }
  if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool") {
    return field_error(ErrorCode::kInvalidValue, path + ".role",
                       "must be system, user, assistant or tool");
  }
  std::string content;
  SYN_RETURN_IF_ERROR(read_string(m, "content", path, content));
  msg.content = std::move(content);
  SYN_RETURN_IF_ERROR(read_string(m, "tool_name", path, msg.name));
  SYN_RETURN_IF_ERROR(
      refuse_if_set(m, "images", path, "images are not supported: no model here has vision"));
  const Json* calls = find(m, "tool_calls");
  if (calls == nullptr) return msg;
  if (!calls->is_array()) return wrong_type(path + ".tool_calls", "an array");
  for (size_t i = 0; i < calls->size(); ++i) {
    const std::string cp = path + ".tool_calls[" + std::to_string(i) + "]";
    const Json* fn = (*calls)[i].is_object() ? find((*calls)[i], "function") : nullptr;
    if (fn == nullptr || !fn->is_object()) return wrong_type(cp + ".function", "an object");
    chat::ToolCall call;
    SYN_RETURN_IF_ERROR(read_string(*fn, "name", cp + ".function", call.name));
    const Json* args = find(*fn, "arguments");
    call.arguments = args == nullptr     ? "{}"
                     : args->is_string() ? args->get<std::string>()
                                         : args->dump();
    msg.tool_calls.push_back(std::move(call));
  }
  return msg;
}

}  // namespace

Result<OllamaGenerateRequest> parse_ollama_generate(std::string_view text,
                                                    const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json body, parse_object(text, limits));
  OllamaGenerateRequest r;
  SYN_RETURN_IF_ERROR(read_common(body, limits, r.common));
  SYN_RETURN_IF_ERROR(read_string(body, "prompt", "", r.prompt));
  SYN_RETURN_IF_ERROR(read_string(body, "system", "", r.system));
  SYN_RETURN_IF_ERROR(read_bool(body, "raw", r.raw));
  SYN_RETURN_IF_ERROR(
      refuse_if_set(body, "suffix", "", "fill-in-the-middle (suffix) is not supported"));
  SYN_RETURN_IF_ERROR(refuse_if_set(
      body, "template", "", "a per-request template is not supported; the model's own is used"));
  SYN_RETURN_IF_ERROR(
      refuse_if_set(body, "images", "", "images are not supported: no model here has vision"));
  SYN_RETURN_IF_ERROR(refuse_if_set(body, "context", "",
                                    "'context' (deprecated by Ollama) is not supported; send "
                                    "the conversation to /api/chat instead"));
  return r;
}

Result<OllamaChatRequest> parse_ollama_chat(std::string_view text, const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json body, parse_object(text, limits));
  OllamaChatRequest r;
  SYN_RETURN_IF_ERROR(read_common(body, limits, r.common));
  if (const Json* messages = find(body, "messages")) {
    if (!messages->is_array()) return wrong_type("messages", "an array");
    if (messages->size() > limits.max_messages) {
      return field_error(ErrorCode::kInvalidValue, "messages", "has too many messages");
    }
    for (size_t i = 0; i < messages->size(); ++i) {
      SYN_ASSIGN_OR_RETURN(chat::ChatMessage m,
                           read_message((*messages)[i], "messages[" + std::to_string(i) + "]"));
      r.messages.push_back(std::move(m));
    }
  }
  if (const Json* tools = find(body, "tools")) {
    if (!tools->is_array()) return wrong_type("tools", "an array");
    if (tools->size() > limits.max_tools) {
      return field_error(ErrorCode::kInvalidValue, "tools", "has too many tools");
    }
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json* fn = (*tools)[i].is_object() ? find((*tools)[i], "function") : nullptr;
      const Json* name = fn != nullptr && fn->is_object() ? find(*fn, "name") : nullptr;
      if (name == nullptr || !name->is_string()) {
        return wrong_type("tools[" + std::to_string(i) + "].function.name", "a string");
      }
    }
    if (!tools->empty()) r.tools = *tools;
  }
  return r;
}

Result<OllamaEmbedRequest> parse_ollama_embed(std::string_view text, bool legacy,
                                              const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json body, parse_object(text, limits));
  OllamaEmbedRequest r;
  r.legacy = legacy;
  SYN_RETURN_IF_ERROR(read_model(body, r.model, true));
  SYN_RETURN_IF_ERROR(read_keep_alive(body, r.keep_alive));
  SYN_RETURN_IF_ERROR(read_bool(body, "truncate", r.truncate));
  if (legacy) {
    std::string prompt;
    SYN_RETURN_IF_ERROR(read_string(body, "prompt", "", prompt));
    if (!prompt.empty()) r.inputs.push_back(std::move(prompt));
    return r;
  }
  const Json* input = find(body, "input");
  if (input == nullptr) return r;
  if (input->is_string()) {
    r.inputs.push_back(input->get<std::string>());
    return r;
  }
  if (!input->is_array()) return wrong_type("input", "a string or an array of strings");
  for (size_t i = 0; i < input->size(); ++i) {
    if (!(*input)[i].is_string()) {
      return wrong_type("input[" + std::to_string(i) + "]", "a string");
    }
    r.inputs.push_back((*input)[i].get<std::string>());
  }
  return r;
}

Result<OllamaModelRequest> parse_ollama_model_request(std::string_view text,
                                                      const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json body, parse_object(text, limits));
  OllamaModelRequest r;
  SYN_RETURN_IF_ERROR(read_model(body, r.model, true));
  SYN_RETURN_IF_ERROR(read_bool(body, "stream", r.stream));
  return r;
}

Result<OllamaCopyRequest> parse_ollama_copy(std::string_view text, const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json body, parse_object(text, limits));
  OllamaCopyRequest r;
  SYN_RETURN_IF_ERROR(read_string(body, "source", "", r.source));
  SYN_RETURN_IF_ERROR(read_string(body, "destination", "", r.destination));
  if (r.source.empty()) {
    return field_error(ErrorCode::kMissingParameter, "source", "source is required");
  }
  if (r.destination.empty()) {
    return field_error(ErrorCode::kMissingParameter, "destination", "destination is required");
  }
  return r;
}

namespace {

std::string format_time(int64_t unix_s, int64_t nanos) {
  const auto s = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(nanos));
  return buf;
}

}  // namespace

std::string ollama_time(int64_t unix_ns) {
  constexpr int64_t kNsPerS = 1'000'000'000;
  return format_time(unix_ns / kNsPerS, unix_ns % kNsPerS);
}

std::string ollama_reply(const OllamaReply& r) {
  Json j = Json::object();
  j["model"] = r.model;
  j["created_at"] = ollama_time(r.created_ns);
  if (r.chat) {
    Json message = {{"role", "assistant"}, {"content", r.text}};
    if (!r.tool_calls.empty()) {
      Json calls = Json::array();
      for (const OllamaToolCall& c : r.tool_calls) {
        Json args = Json::parse(c.arguments, nullptr, false);
        if (args.is_discarded() || !args.is_object()) args = Json::object();
        calls.push_back({{"function", {{"name", c.name}, {"arguments", std::move(args)}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    j["message"] = std::move(message);
  } else {
    j["response"] = r.text;
  }
  j["done"] = r.stats != nullptr;
  if (r.stats != nullptr) {
    const OllamaStats& s = *r.stats;
    j["done_reason"] = s.done_reason;
    j["total_duration"] = s.total_ns;
    j["load_duration"] = s.load_ns;
    j["prompt_eval_count"] = s.prompt_eval_count;
    j["prompt_eval_duration"] = s.prompt_eval_ns;
    j["eval_count"] = s.eval_count;
    j["eval_duration"] = s.eval_ns;
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string ollama_error(std::string_view message) {
  return Json{{"error", std::string(message)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

Json details_json(const OllamaDetails& d) {
  return {{"parent_model", ""},
          {"format", d.format},
          {"family", d.family},
          {"families", d.family.empty() ? Json(nullptr) : Json::array({d.family})},
          {"parameter_size", d.parameter_size},
          {"quantization_level", d.quantization_level}};
}

Json entry_json(const OllamaModelEntry& m, bool ps) {
  Json j = {{"name", m.name}, {"model", m.name}};
  if (!ps) j["modified_at"] = format_time(m.modified_unix_s, 0);
  j["size"] = m.size_bytes;
  j["digest"] = m.digest;
  j["details"] = details_json(m.details);
  if (ps) {
    // Kept forever: Ollama writes a date far in the future.
    const int64_t expires = m.expires_unix_s.value_or(int64_t{253402300799});  // 9999-12-31
    j["expires_at"] = format_time(expires, 0);
    j["size_vram"] = 0;
  }
  return j;
}

std::string list_json(const std::vector<OllamaModelEntry>& models, bool ps) {
  Json list = Json::array();
  for (const OllamaModelEntry& m : models) list.push_back(entry_json(m, ps));
  return Json{{"models", std::move(list)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::string ollama_tags(const std::vector<OllamaModelEntry>& models) {
  return list_json(models, false);
}

std::string ollama_ps(const std::vector<OllamaModelEntry>& models) {
  return list_json(models, true);
}

std::string ollama_show(const OllamaShow& show) {
  Json out = {{"modelfile", show.modelfile},
              {"parameters", show.parameters},
              {"template", show.template_text},
              {"details", details_json(show.details)},
              {"model_info", show.model_info},
              {"capabilities", show.capabilities},
              {"modified_at", format_time(show.modified_unix_s, 0)}};
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string ollama_parameters(const std::vector<std::pair<std::string, std::string>>& values) {
  constexpr size_t kNameWidth = 30;  // Ollama pads the names to this width
  std::string out;
  for (const auto& [name, value] : values) {
    if (!out.empty()) out += '\n';
    const std::string padded =
        name + std::string(name.size() < kNameWidth ? kNameWidth - name.size() : 0, ' ') + ' ';
    // A JSON string is the Go literal for the text a stop string holds (quotes, backslashes,
    // control characters escaped; other characters as they are).
    out += padded + Json(value).dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return out;
}

}  // namespace synapse::api
