// SPDX-License-Identifier: Apache-2.0
#include "request/generation.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

#include "api/api_error.h"
#include "base/echo.h"
#include "request/output_constraints.h"

namespace synapse::request {
namespace {

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "cmpl-" / "chatcmpl-" / "call_" and 24 hex digits: random per process, then counted.
std::string new_id(std::string_view prefix) {
  static const uint64_t base = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx%08llx", static_cast<unsigned long long>(base),
                static_cast<unsigned long long>(++counter & 0xffffffffu));
  return std::string(prefix) + buf;
}

// OpenAI's sampling fields onto the sampler's. OpenAI's penalties count every generated token,
// so the penalty window is unbounded when one is set.
SamplingParams sampler_params(const api::SamplingParams& s) {
  SamplingParams p;
  p.temperature = static_cast<float>(s.temperature);
  p.top_p = static_cast<float>(s.top_p);
  p.top_k = static_cast<int32_t>(s.top_k);
  p.min_p = static_cast<float>(s.min_p);
  p.repeat_penalty = static_cast<float>(s.repeat_penalty);
  p.frequency_penalty = static_cast<float>(s.frequency_penalty);
  p.presence_penalty = static_cast<float>(s.presence_penalty);
  if (s.frequency_penalty != 0.0 || s.presence_penalty != 0.0) p.penalty_last_n = -1;
  for (const auto& [token, bias] : s.logit_bias) {
    p.logit_bias.push_back({token, static_cast<float>(bias)});
  }
  p.seed = s.seed ? static_cast<uint64_t>(*s.seed) : SamplingParams::kRandomSeed;
  return p;
}

std::string token_bytes(const tokenizer::Tokenizer& tok, int32_t id) {
  std::string out;
  tok.append_token_bytes(id, {.render_special = false, .strip_leading_space = false}, out);
  return out;
}

void append_logprobs(const tokenizer::Tokenizer& tok, const serve::GenerationEvent& e,
                     std::vector<api::TokenLogprob>& out) {
  for (const serve::GeneratedToken& t : e.tokens) {
    if (!t.logprobs) continue;
    api::TokenLogprob lp;
    lp.token = token_bytes(tok, t.token);
    lp.logprob = static_cast<double>(t.logprobs->chosen.logprob);
    for (const TokenLogprob& alt : t.logprobs->top()) {
      lp.top.emplace_back(token_bytes(tok, alt.token), static_cast<double>(alt.logprob));
    }
    out.push_back(std::move(lp));
  }
}

api::FinishReason api_finish(serve::FinishReason r) {
  return r == serve::FinishReason::kLength ? api::FinishReason::kLength : api::FinishReason::kStop;
}

// Why a final event carries no completion: the service's error, or the caller's cancellation.
Status final_error(const serve::GenerationEvent& e) {
  if (!e.error.ok()) return e.error;
  return Status(ErrorCode::kCancelled, "the request was cancelled");
}

bool failed(const serve::GenerationEvent& e) {
  return e.finish_reason == serve::FinishReason::kCancelled ||
         e.finish_reason == serve::FinishReason::kError;
}

// The reply of a chat request with tools, read into content and calls with fresh ids.
api::ChatCompletionResult read_tool_reply(std::string text, const chat::ToolCallSyntax& syntax,
                                          api::FinishReason finish) {
  api::ChatCompletionResult result;
  const chat::ParsedReply reply = chat::parse_tool_calls(text, syntax);
  result.content = reply.content;
  for (const chat::ParsedToolCall& call : reply.calls) {
    result.tool_calls.push_back({new_id("call_"), call.name, call.arguments});
  }
  result.finish_reason = !result.tool_calls.empty() && finish == api::FinishReason::kStop
                             ? api::FinishReason::kToolCalls
                             : finish;
  return result;
}

std::vector<int32_t> encode(const ServedModel& m, const std::string& text, bool add_special) {
  return m.tokenizer->encode(text, {.add_special = add_special, .parse_special = true});
}

// Every served model carries its constraint cache (describe_served_model, add_constraints).
Result<OutputConstraints*> constraints_of(const ServedModel& m) {
  if (m.constraints) return m.constraints.get();
  return Status(ErrorCode::kInternal,
                "the model '" + m.id + "' is served without a constraint cache");
}

// What both endpoints share after parsing: the prompt, the sampler, the budget and the class.
Status fill(GenerationCall& c, std::vector<int32_t> prompt, const api::SamplingParams& sampling,
            int64_t max_tokens, const char* prompt_field, const std::string& priority,
            const ClassChoice& choose) {
  const size_t n_ctx = c.model->service->n_ctx();
  if (prompt.size() > n_ctx) {
    return Status(ErrorCode::kContextLengthExceeded,
                  "the prompt has " + std::to_string(prompt.size()) +
                      " tokens; this model's context holds " + std::to_string(n_ctx),
                  ErrorWhere{.field = prompt_field});
  }
  SYN_ASSIGN_OR_RETURN(c.request.request_class, choose(priority));
  c.request.id = c.meta.id;
  c.prompt_tokens = prompt.size();
  c.request.prompt = std::move(prompt);
  c.request.max_tokens = static_cast<int32_t>(std::min<int64_t>(max_tokens, 1 << 24));
  c.request.sampling = sampler_params(sampling);
  c.request.stop = sampling.stop;
  c.request.speculative = sampling.speculative;
  return ok_status();
}

Status refuse_non_generating(const ServedModel& m) {
  if (m.service->generates()) return ok_status();
  return Status(ErrorCode::kUnsupportedParameter,
                "the model '" + m.id +
                    "' is an embedding model; it answers /v1/embeddings and /v1/rerank, not text "
                    "generation",
                ErrorWhere{.field = "model"});
}

}  // namespace

Result<GenerationCall> prepare_completion_call(ModelHandle model, api::CompletionRequest body,
                                               const ClassChoice& choose) {
  GenerationCall c;
  c.model = std::move(model);
  const ServedModel& m = *c.model;
  SYN_RETURN_IF_ERROR(refuse_non_generating(m));
  c.meta = {new_id("cmpl-"), unix_seconds(), m.id};
  std::vector<int32_t> prompt = body.prompt_tokens;
  if (body.prompt_text) prompt = encode(m, *body.prompt_text, true);
  if (prompt.empty()) {
    const int32_t bos = m.tokenizer->vocab().special().bos;
    if (bos == tokenizer::kNoToken) {
      return Status(ErrorCode::kInvalidValue, "the prompt is empty and the model has no BOS token",
                    ErrorWhere{.field = "prompt"});
    }
    prompt.push_back(bos);
  }
  if (body.echo) {
    if (body.logprobs) {
      return Status(ErrorCode::kUnsupportedParameter,
                    "'echo' together with 'logprobs' is not supported",
                    ErrorWhere{.field = "echo"});
    }
    if (body.prompt_text) {
      c.echo = *body.prompt_text;
    } else {
      Result<std::string> decoded = m.tokenizer->decode(prompt);
      if (!decoded.ok()) return std::move(decoded).take_status().with_field("prompt");
      c.echo = *decoded;
    }
  }
  c.stream = body.stream;
  c.logprobs = body.logprobs.has_value();
  c.request.logprobs = c.logprobs;
  c.request.top_logprobs = body.logprobs.value_or(0);
  const int64_t max_tokens = body.sampling.max_tokens.value_or(m.default_completion_max_tokens);
  SYN_RETURN_IF_ERROR(
      fill(c, std::move(prompt), body.sampling, max_tokens, "prompt", body.priority, choose));
  SYN_ASSIGN_OR_RETURN(OutputConstraints * constraints, constraints_of(m));
  SYN_ASSIGN_OR_RETURN(CompiledConstraint constraint, constraints->for_format(body.format));
  c.request.constraint = std::move(constraint.masker);
  c.request.constraint_recipe = std::move(constraint.recipe);
  return c;
}

Result<GenerationCall> prepare_chat_call(ModelHandle model, api::ChatCompletionRequest body,
                                         const ClassChoice& choose) {
  GenerationCall c;
  c.model = std::move(model);
  const ServedModel& m = *c.model;
  SYN_RETURN_IF_ERROR(refuse_non_generating(m));
  if (!m.chat_template) return m.no_chat_template;
  SYN_ASSIGN_OR_RETURN(OutputConstraints * constraints, constraints_of(m));
  SYN_ASSIGN_OR_RETURN(
      ToolPlan plan,
      constraints->for_tools(body.tools, body.tool_choice, body.parallel_tool_calls, body.format));
  chat::ChatRenderInput input;
  input.messages = std::move(body.messages);
  input.tools = std::move(body.tools);
  input.bos_token = m.bos_token;
  input.eos_token = m.eos_token;
  Result<std::string> rendered = m.chat_template->render(input);
  if (!rendered.ok()) return std::move(rendered).take_status().with_field("messages");
  // Templates usually write the BOS token themselves; add it only when this one did not.
  const bool add_bos = m.bos_token.empty() || !rendered->starts_with(m.bos_token);
  std::vector<int32_t> prompt = encode(m, *rendered, add_bos);
  c.chat = true;
  c.meta = {new_id("chatcmpl-"), unix_seconds(), m.id};
  c.stream = body.stream;
  c.logprobs = body.logprobs;
  c.request.logprobs = body.logprobs;
  c.request.top_logprobs = body.top_logprobs;
  // No max_tokens: until the end of generation or a full context.
  const int64_t room =
      static_cast<int64_t>(m.service->n_ctx()) - static_cast<int64_t>(prompt.size());
  const int64_t max_tokens = body.sampling.max_tokens.value_or(std::max<int64_t>(room, 1));
  SYN_RETURN_IF_ERROR(
      fill(c, std::move(prompt), body.sampling, max_tokens, "messages", body.priority, choose));
  c.request.constraint = std::move(plan.constraint.masker);
  c.request.constraint_recipe = std::move(plan.constraint.recipe);
  c.tool_syntax = std::move(plan.syntax);
  return c;
}

namespace {

Result<GenerationCall> prepare_completion(const ModelDirectory& models, std::string_view text,
                                          const ClassChoice& choose,
                                          const api::RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(api::CompletionRequest body, api::parse_completion_request(text, limits));
  SYN_ASSIGN_OR_RETURN(ModelHandle model, models.find(body.model));
  return prepare_completion_call(std::move(model), std::move(body), choose);
}

Result<GenerationCall> prepare_chat(const ModelDirectory& models, std::string_view text,
                                    const ClassChoice& choose, const api::RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(api::ChatCompletionRequest body,
                       api::parse_chat_completion_request(text, limits));
  SYN_ASSIGN_OR_RETURN(ModelHandle model, models.find(body.model));
  return prepare_chat_call(std::move(model), std::move(body), choose);
}

api::CompletionResult empty_result(const GenerationCall& c) {
  api::CompletionResult result;
  result.text = c.echo;
  result.finish_reason = api::FinishReason::kLength;
  result.usage.prompt_tokens = static_cast<int64_t>(c.prompt_tokens);
  return result;
}

}  // namespace

Result<serve::RequestClass> choose_request_class(std::string_view priority,
                                                 const std::optional<std::string>& header) {
  if (!priority.empty()) {
    if (auto c = serve::request_class_from_name(std::string(priority))) return *c;
  }
  if (!header) return serve::RequestClass::kInteractive;
  if (auto c = serve::request_class_from_name(*header)) return *c;
  return Status(ErrorCode::kInvalidValue,
                std::string(kClassHeader) + " must be 'interactive', 'batch' or 'background'",
                ErrorWhere{.field = std::string(kClassHeader)});
}

Result<GenerationCall> prepare_generation(EndpointKind kind, const ModelDirectory& models,
                                          std::string_view body, const ClassChoice& choose,
                                          const api::RequestLimits& limits) {
  if (kind == EndpointKind::kChatCompletions) return prepare_chat(models, body, choose, limits);
  if (kind == EndpointKind::kCompletions) return prepare_completion(models, body, choose, limits);
  return Status(ErrorCode::kUnsupportedParameter, "not a text generation endpoint",
                ErrorWhere{.field = "url"});
}

std::optional<std::string> answer_without_running(const GenerationCall& c) {
  if (c.chat || c.request.max_tokens != 0) return std::nullopt;
  const api::CompletionResult result = empty_result(c);
  if (!c.stream.stream) return api::completion_response(c.meta, result);
  std::string body = api::completion_chunk(c.meta, result.text, result.finish_reason);
  if (c.stream.include_usage) body += api::usage_chunk(c.meta, false, result.usage);
  body += api::sse_done();
  return body;
}

Result<std::shared_ptr<serve::RequestHandle>> submit_generation(GenerationCall& c) {
  Result<std::shared_ptr<serve::RequestHandle>> submitted =
      c.model->service->submit(std::move(c.request));
  if (submitted.ok()) return submitted;
  Status s = submitted.status();
  if (s.code() == ErrorCode::kLimitExceeded && s.where().field == "prompt") {
    s = Status(ErrorCode::kContextLengthExceeded, s.message(),
               ErrorWhere{.field = c.chat ? "messages" : "prompt"});
  }
  return s;
}

uint32_t retry_after_s(const GenerationCall& c) {
  return c.model->service->retry_after_s(c.request.request_class);
}

Result<std::string> collect_generation(const GenerationCall& c, serve::RequestHandle& handle,
                                       const std::function<bool()>& abandoned) {
  std::string text = c.echo;
  std::vector<api::TokenLogprob> logprobs;
  serve::GenerationEvent e;
  for (;;) {
    const auto wait = handle.next_for(e, kPollInterval);
    if (wait == serve::RequestHandle::Wait::kFinished) break;
    if (abandoned && abandoned()) {
      handle.cancel();  // the slot and its KV pages are freed within one engine step
      return Status(ErrorCode::kCancelled, "the request was cancelled");
    }
    if (wait == serve::RequestHandle::Wait::kTimeout) continue;
    text += e.text;
    if (c.logprobs) append_logprobs(*c.model->tokenizer, e, logprobs);
    if (e.final) break;
  }
  if (failed(e)) return final_error(e);
  const api::Usage usage{static_cast<int64_t>(c.prompt_tokens),
                         static_cast<int64_t>(e.usage.completion_tokens)};
  std::optional<std::vector<api::TokenLogprob>> lp;
  if (c.logprobs) lp = std::move(logprobs);
  if (c.chat && c.tool_syntax) {
    api::ChatCompletionResult result =
        read_tool_reply(std::move(text), *c.tool_syntax, api_finish(e.finish_reason));
    result.logprobs = std::move(lp);
    result.usage = usage;
    return api::chat_completion_response(c.meta, result);
  }
  if (c.chat) {
    return api::chat_completion_response(
        c.meta, {std::move(text), {}, api_finish(e.finish_reason), std::move(lp), usage});
  }
  return api::completion_response(
      c.meta, {std::move(text), api_finish(e.finish_reason), std::move(lp), usage});
}

GenerationStream::GenerationStream(GenerationCall call,
                                   std::shared_ptr<serve::RequestHandle> handle)
    : call_(std::move(call)), handle_(std::move(handle)) {
  if (call_.tool_syntax) tool_stream_.emplace(*call_.tool_syntax);
}

std::string GenerationStream::chat_text_chunk(const std::string& text, bool at_end,
                                              const std::vector<api::TokenLogprob>* lp) {
  if (!tool_stream_) {
    if (text.empty() && lp == nullptr) return "";
    return api::chat_chunk(call_.meta, {.content = text}, std::nullopt, lp);
  }
  chat::ToolCallStream::Delta d = tool_stream_->push(text);
  if (at_end) {
    chat::ToolCallStream::Delta rest = tool_stream_->finish();
    d.content += rest.content;
    d.calls.insert(d.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  api::ChatDelta delta;
  if (!d.content.empty()) delta.content = std::move(d.content);
  for (auto& call : d.calls) {
    api::ToolCallDelta out;
    out.index = call.index;
    if (call.first) {
      out.id = new_id("call_");
      out.name = std::move(call.name);
    }
    out.arguments = std::move(call.arguments);
    delta.tool_calls.push_back(std::move(out));
  }
  if (!delta.content && delta.tool_calls.empty() && lp == nullptr) return "";
  return api::chat_chunk(call_.meta, delta, std::nullopt, lp);
}

bool GenerationStream::next(std::string& out) {
  if (ended_) return false;
  if (!started_) {
    started_ = true;
    if (call_.chat) {
      out += api::chat_chunk(call_.meta, {.role = true, .content = ""}, std::nullopt);
    } else if (!call_.echo.empty()) {
      out += api::completion_chunk(call_.meta, call_.echo, std::nullopt);
      text_offset_ += static_cast<int64_t>(call_.echo.size());
    }
  }
  serve::GenerationEvent e;
  const auto wait = handle_->next_for(e, kPollInterval);
  if (wait == serve::RequestHandle::Wait::kTimeout) return true;
  if (wait == serve::RequestHandle::Wait::kFinished) {
    ended_ = true;
    return false;
  }
  std::vector<api::TokenLogprob> logprobs;
  if (call_.logprobs) append_logprobs(*call_.model->tokenizer, e, logprobs);
  const auto* lp = call_.logprobs && !logprobs.empty() ? &logprobs : nullptr;
  if (call_.chat) {
    out += chat_text_chunk(e.text, e.final, lp);
  } else if (!e.text.empty() || lp != nullptr) {
    out += api::completion_chunk(call_.meta, e.text, std::nullopt, lp, text_offset_);
    text_offset_ += static_cast<int64_t>(e.text.size());
  }
  if (!e.final) return true;
  if (failed(e)) {
    // Headers are gone; OpenAI streams an error as an event of its own.
    out += api::sse_event(api::error_body(api::api_error_from_status(final_error(e))));
  } else {
    api::FinishReason finish = api_finish(e.finish_reason);
    if (tool_stream_ && tool_stream_->calls_started() > 0 && finish == api::FinishReason::kStop) {
      finish = api::FinishReason::kToolCalls;
    }
    out += call_.chat ? api::chat_chunk(call_.meta, {}, finish)
                      : api::completion_chunk(call_.meta, "", finish);
    if (call_.stream.include_usage) {
      out += api::usage_chunk(call_.meta, call_.chat,
                              {static_cast<int64_t>(call_.prompt_tokens),
                               static_cast<int64_t>(e.usage.completion_tokens)});
    }
  }
  out += api::sse_done();
  ended_ = true;
  return false;
}

void GenerationStream::abandon() {
  if (!ended_) handle_->cancel();
  ended_ = true;
}

Result<std::string> run_generation(const ModelDirectory& models, EndpointKind kind,
                                   std::string_view body, serve::RequestClass request_class,
                                   const std::function<bool()>& cancelled,
                                   const api::RequestLimits& limits) {
  const ClassChoice fixed = [request_class](const std::string&) -> Result<serve::RequestClass> {
    return request_class;
  };
  SYN_ASSIGN_OR_RETURN(GenerationCall c, prepare_generation(kind, models, body, fixed, limits));
  if (c.stream.stream) {
    return Status(ErrorCode::kUnsupportedParameter, "a job's request cannot stream",
                  ErrorWhere{.field = "stream"});
  }
  if (std::optional<std::string> answer = answer_without_running(c)) return *answer;
  SYN_ASSIGN_OR_RETURN(std::shared_ptr<serve::RequestHandle> handle, submit_generation(c));
  return collect_generation(c, *handle, cancelled);
}

}  // namespace synapse::request
