// SPDX-License-Identifier: Apache-2.0
#include "request/ollama.h"

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "request/embeddings.h"
#include "request/model_details.h"

namespace synapse::request {
namespace {

using Json = nlohmann::ordered_json;
using SteadyClock = std::chrono::steady_clock;

int64_t unix_ns_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t ns_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

Result<std::optional<KeepAlive>> keep_alive_of(const std::optional<std::string>& text) {
  if (!text) return std::optional<KeepAlive>();
  Result<KeepAlive> k = parse_keep_alive(*text);
  if (!k.ok()) return std::move(k).take_status().with_field("keep_alive");
  return std::optional<KeepAlive>(*k);
}

// The model found (loaded if needed) with the request's keep-alive, timing the load; or, for a
// request with nothing to run, the answer Ollama gives to a load or an unload.
Result<OllamaCall> start(const ModelDirectory& models, const api::OllamaCommon& common, bool chat,
                         bool nothing_to_run, ModelHandle& model) {
  OllamaCall c;
  c.chat = chat;
  c.stream = common.stream;
  c.model = common.model;
  c.created_ns = unix_ns_now();
  c.start = SteadyClock::now();
  SYN_ASSIGN_OR_RETURN(const std::optional<KeepAlive> keep_alive, keep_alive_of(common.keep_alive));
  api::OllamaStats stats;
  if (nothing_to_run && keep_alive && keep_alive->count() == 0) {
    SYN_RETURN_IF_ERROR(models.unload(common.model));
    stats.done_reason = "unload";
  } else {
    SYN_ASSIGN_OR_RETURN(model, models.find(common.model, keep_alive));
    c.load_ns = ns_between(c.start, SteadyClock::now());
    if (!nothing_to_run) return c;
    model.reset();  // loaded, and kept for its keep-alive; nothing runs
    stats.done_reason = "load";
  }
  c.answer = api::ollama_reply(
      {.model = c.model, .created_ns = c.created_ns, .chat = chat, .stats = &stats});
  return c;
}

// Ollama's num_predict defaults to "until the end": as many tokens as the context has room for
// (the service ends a request when its context is full).
void default_budget(const ServedModel& m, api::SamplingParams& s) {
  if (!s.max_tokens) s.max_tokens = std::max<int64_t>(1, m.service->n_ctx());
}

// Ollama's bodies have no "priority": the class is the one the route chose.
ClassChoice fixed_class(serve::RequestClass request_class) {
  return
      [request_class](const std::string&) -> Result<serve::RequestClass> { return request_class; };
}

}  // namespace

Result<OllamaCall> prepare_ollama_generate(const ModelDirectory& models,
                                           api::OllamaGenerateRequest r,
                                           serve::RequestClass request_class) {
  ModelHandle model;
  SYN_ASSIGN_OR_RETURN(OllamaCall c, start(models, r.common, false, r.prompt.empty(), model));
  if (!model) return c;
  default_budget(*model, r.common.sampling);
  // Raw, or a model without a chat template (Ollama's default template is the prompt alone):
  // the prompt as written.
  if (r.raw || !model->chat_template) {
    api::CompletionRequest body;
    body.model = r.common.model;
    body.prompt_text = std::move(r.prompt);
    body.sampling = std::move(r.common.sampling);
    body.format = std::move(r.common.format);
    SYN_ASSIGN_OR_RETURN(
        c.call, prepare_completion_call(model, std::move(body), fixed_class(request_class)));
    return c;
  }
  api::ChatCompletionRequest body;
  body.model = r.common.model;
  if (!r.system.empty()) body.messages.push_back({.role = "system", .content = r.system});
  body.messages.push_back({.role = "user", .content = std::move(r.prompt)});
  body.sampling = std::move(r.common.sampling);
  body.format = std::move(r.common.format);
  body.tool_choice.kind = api::ToolChoice::Kind::kNone;
  SYN_ASSIGN_OR_RETURN(c.call,
                       prepare_chat_call(model, std::move(body), fixed_class(request_class)));
  return c;
}

Result<OllamaCall> prepare_ollama_chat(const ModelDirectory& models, api::OllamaChatRequest r,
                                       serve::RequestClass request_class) {
  ModelHandle model;
  SYN_ASSIGN_OR_RETURN(OllamaCall c, start(models, r.common, true, r.messages.empty(), model));
  if (!model) return c;
  default_budget(*model, r.common.sampling);
  api::ChatCompletionRequest body;
  body.model = r.common.model;
  body.messages = std::move(r.messages);
  const bool has_tools = r.tools.is_array() && !r.tools.empty();
  body.tools = std::move(r.tools);
  body.tool_choice.kind = has_tools ? api::ToolChoice::Kind::kAuto : api::ToolChoice::Kind::kNone;
  body.sampling = std::move(r.common.sampling);
  body.format = std::move(r.common.format);
  SYN_ASSIGN_OR_RETURN(c.call,
                       prepare_chat_call(model, std::move(body), fixed_class(request_class)));
  return c;
}

OllamaStream::OllamaStream(OllamaCall call, std::shared_ptr<serve::RequestHandle> handle)
    : call_(std::move(call)), handle_(std::move(handle)) {
  if (call_.call && call_.call->tool_syntax) tool_stream_.emplace(*call_.call->tool_syntax);
}

std::string OllamaStream::line(std::string text, std::vector<api::OllamaToolCall> calls,
                               const api::OllamaStats* stats) const {
  return api::ollama_reply({.model = call_.model,
                            .created_ns = unix_ns_now(),
                            .chat = call_.chat,
                            .text = std::move(text),
                            .tool_calls = std::move(calls),
                            .stats = stats});
}

// The final object (and, streaming, the tool calls' line before it).
std::string OllamaStream::finish(const serve::GenerationEvent& e) {
  const auto now = SteadyClock::now();
  const auto first = first_event_.value_or(now);
  api::OllamaStats stats;
  stats.done_reason = e.finish_reason == serve::FinishReason::kLength ? "length" : "stop";
  stats.total_ns = ns_between(call_.start, now);
  stats.load_ns = call_.load_ns;
  stats.prompt_eval_count = static_cast<int64_t>(call_.call->prompt_tokens);
  stats.prompt_eval_ns = ns_between(call_.start, first) - call_.load_ns;
  stats.eval_count = static_cast<int64_t>(e.usage.completion_tokens);
  stats.eval_ns = ns_between(first, now);
  std::vector<api::OllamaToolCall> calls;
  std::string content;
  if (tool_stream_) {
    const chat::ParsedReply reply = chat::parse_tool_calls(text_, *call_.call->tool_syntax);
    content = reply.content;
    for (const chat::ParsedToolCall& p : reply.calls) calls.push_back({p.name, p.arguments});
    if (call_.stream) content = tool_stream_->finish().content;
  } else if (!call_.stream) {
    content = text_;
  }
  if (!call_.stream) return line(std::move(content), std::move(calls), &stats);
  std::string out;
  if (!content.empty() || !calls.empty())
    out += line(std::move(content), std::move(calls), nullptr) + "\n";
  return out + line("", {}, &stats) + "\n";
}

bool OllamaStream::next(std::string& out) {
  if (ended_) return false;
  serve::GenerationEvent e;
  const auto wait = handle_->next_for(e, kPollInterval);
  if (wait == serve::RequestHandle::Wait::kTimeout) return true;
  if (wait == serve::RequestHandle::Wait::kFinished) {
    ended_ = true;
    return false;
  }
  if (!first_event_ && (!e.tokens.empty() || e.final)) first_event_ = SteadyClock::now();
  text_ += e.text;
  if (call_.stream && !e.text.empty()) {
    const std::string piece = tool_stream_ ? tool_stream_->push(e.text).content : e.text;
    if (!piece.empty()) out += line(piece, {}, nullptr) + "\n";
  }
  if (!e.final) return true;
  ended_ = true;
  if (e.finish_reason == serve::FinishReason::kCancelled ||
      e.finish_reason == serve::FinishReason::kError) {
    failure_ = e.error.ok() ? Status(ErrorCode::kCancelled, "the request was cancelled") : e.error;
    if (call_.stream) out += ollama_error_body(failure_, call_.model) + "\n";
    return false;
  }
  out += finish(e);
  return false;
}

void OllamaStream::abandon() {
  if (!ended_) handle_->cancel();
  ended_ = true;
}

Result<std::string> run_ollama_embed(const ModelDirectory& models, const api::OllamaEmbedRequest& r,
                                     serve::RequestClass request_class,
                                     const std::function<bool()>& cancelled) {
  const auto start = SteadyClock::now();
  SYN_ASSIGN_OR_RETURN(const std::optional<KeepAlive> keep_alive, keep_alive_of(r.keep_alive));
  SYN_ASSIGN_OR_RETURN(const ModelHandle model, models.find(r.model, keep_alive));
  const int64_t load_ns = ns_between(start, SteadyClock::now());
  Json embeddings = Json::array();
  int64_t prompt_tokens = 0;
  if (!r.inputs.empty()) {
    api::EmbeddingsRequest body;
    body.model = r.model;
    body.texts = r.inputs;
    body.truncate = r.truncate;
    SYN_ASSIGN_OR_RETURN(const std::string openai,
                         run_embeddings(models, body, request_class, cancelled));
    // Our own output, in OpenAI's shape: data[i].embedding, usage.prompt_tokens.
    const Json parsed = Json::parse(openai);
    for (const Json& item : parsed.at("data")) embeddings.push_back(item.at("embedding"));
    prompt_tokens = parsed.at("usage").value("prompt_tokens", int64_t{0});
  }
  if (r.legacy) {
    Json one = embeddings.empty() ? Json::array() : embeddings[0];
    return Json{{"embedding", std::move(one)}}.dump();
  }
  Json out = {{"model", r.model},
              {"embeddings", std::move(embeddings)},
              {"total_duration", ns_between(start, SteadyClock::now())},
              {"load_duration", load_ns},
              {"prompt_eval_count", prompt_tokens}};
  return out.dump();
}

namespace {

// The details of a listed model's file (none for a model given loaded, or a file that cannot
// be read: the listing still answers, with the details empty).
std::shared_ptr<const ModelDetails> details_of(const ModelListing& m) {
  if (m.path.empty()) return nullptr;
  Result<std::shared_ptr<const ModelDetails>> d = read_model_details(m.path);
  return d.ok() ? *d : nullptr;
}

api::OllamaDetails ollama_details(const ModelDetails* d) {
  api::OllamaDetails out;
  if (d == nullptr) return out;
  out.format = d->format;
  out.family = d->family;
  out.parameter_size = d->parameter_size;
  out.quantization_level = d->quantization_level;
  return out;
}

// /api/tags gives a model's file size, /api/ps the memory it holds (with its KV cache).
api::OllamaModelEntry entry_of(const ModelListing& m, bool memory) {
  api::OllamaModelEntry e;
  e.name = m.name;
  e.modified_unix_s = m.created;
  e.size_bytes = memory || m.file_bytes == 0 ? m.bytes : m.file_bytes;
  e.digest = m.digest;
  e.details = ollama_details(details_of(m).get());
  e.expires_unix_s = m.expires_at;
  return e;
}

// A template "handles tools" when it reads the `tools` variable it is rendered with.
bool template_takes_tools(const chat::ChatTemplate& t) {
  return t.source().find("tools") != std::string::npos;
}

}  // namespace

std::string ollama_tags(const ModelDirectory& models) {
  std::vector<api::OllamaModelEntry> entries;
  // Every name is a model to Ollama's clients: a copy (a second name of one blob) is listed too.
  for (const ModelListing& m : models.list()) {
    entries.push_back(entry_of(m, false));
    for (const std::string& alias : m.aliases) {
      api::OllamaModelEntry copy = entries.back();
      copy.name = alias;
      entries.push_back(std::move(copy));
    }
  }
  return api::ollama_tags(entries);
}

std::string ollama_ps(const ModelDirectory& models) {
  std::vector<api::OllamaModelEntry> entries;
  for (const ModelListing& m : models.list()) {
    if (m.loaded) entries.push_back(entry_of(m, true));
  }
  return api::ollama_ps(entries);
}

Result<std::string> ollama_show(const ModelDirectory& models, const std::string& name) {
  SYN_ASSIGN_OR_RETURN(const ModelHandle model, models.find(name));
  const ServedModel& m = *model;
  // The directory lists a model under its served id; its file and kind come from there.
  std::optional<ModelListing> listing;
  for (ModelListing& l : models.list()) {
    if (l.name == m.id) listing = std::move(l);
  }
  const std::shared_ptr<const ModelDetails> details =
      listing ? details_of(*listing) : std::shared_ptr<const ModelDetails>();
  const bool generates = listing ? listing->kind == ServedKind::kGeneration
                                 : m.service != nullptr && m.service->generates();

  api::OllamaShow show;
  show.details = ollama_details(details.get());
  if (details) show.model_info = details->model_info;
  // Synapse serves a model at the context it was loaded with, which may differ from the
  // file's <arch>.context_length: reported under its own key.
  if (m.service != nullptr) show.model_info["synapse.context_length"] = m.service->n_ctx();
  if (m.chat_template) show.template_text = m.chat_template->source();
  std::vector<std::pair<std::string, std::string>> parameters;
  if (generates) {
    show.capabilities.push_back("completion");
    if (m.chat_template && template_takes_tools(*m.chat_template)) {
      show.capabilities.push_back("tools");
    }
    if (details) {
      for (const std::string& stop : details->stop) parameters.emplace_back("stop", stop);
    }
  } else {
    show.capabilities.push_back("embedding");  // a reranker too: Ollama has no word for it
  }
  show.parameters = api::ollama_parameters(parameters);
  // Not a Modelfile Ollama could build from: our template is Jinja, so it is not repeated here.
  show.modelfile = "# Modelfile generated by Synapse\nFROM " +
                   (listing && !listing->path.empty() ? listing->path : m.id) + "\n";
  for (const auto& [key, value] : parameters)
    show.modelfile += "PARAMETER " + key + " " + value + "\n";
  show.modified_unix_s = listing && listing->created != 0 ? listing->created : m.created;
  return api::ollama_show(show);
}

int ollama_http_status(const Status& s) {
  if (s.code() == ErrorCode::kModelNotFound || s.code() == ErrorCode::kNotFound) return 404;
  const int http = api::api_error_from_status(s).http_status;
  if (http == 429 || http == 503 || http == 413) return http;
  return http >= 400 && http < 500 ? 400 : 500;
}

std::string ollama_error_body(const Status& s, std::string_view model) {
  std::string message = s.message();
  if (s.code() == ErrorCode::kModelNotFound && !model.empty()) {
    // Ollama's words first: clients look for "not found".
    message = "model '" + std::string(model) + "' not found; " + message;
  } else if (!s.where().field.empty()) {
    message = s.where().field + ": " + message;
  }
  return api::ollama_error(message);
}

}  // namespace synapse::request
