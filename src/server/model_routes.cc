// SPDX-License-Identifier: Apache-2.0
#include "server/inference_routes.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>

#include "api/api_error.h"
#include "api/responses.h"
#include "base/echo.h"
#include "server/generation_call.h"
#include "server/http_reply.h"
#include "server/output_constraints.h"

namespace synapse::server {
namespace {

using namespace std::chrono_literals;

// How often a waiting handler looks at its connection: a client that disconnects is cancelled
// within this time plus one engine step.
constexpr auto kPollInterval = 50ms;
constexpr const char* kClassHeader = "X-Synapse-Class";
// Status logged (and counted in /metrics) for a request whose client went away first; nginx's
// "client closed request".
constexpr int kClientClosedRequest = 499;

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "cmpl-" / "chatcmpl-" and 24 hex digits: random per process, then counted.
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

// Why a final event carries no completion: the service's error, or the client's cancellation.
Status final_error(const serve::GenerationEvent& e) {
  if (!e.error.ok()) return e.error;
  return Status(ErrorCode::kCancelled, "the request was cancelled");
}

// One request on its way to the service: everything both endpoints share after parsing.
struct Prepared {
  serve::GenerationRequest request;
  api::ResponseMeta meta;
  bool chat = false;
  api::StreamParams stream;
  bool logprobs = false;
  std::string echo;  // completions: the prompt text written before the completion
  // Chat with tools: the reply is read for tool calls in this syntax.
  std::optional<chat::ToolCallSyntax> tool_syntax;
};

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

class Routes {
 public:
  Routes(const Inference& inference, const api::RequestLimits& limits)
      : inf_(inference),
        limits_(limits),
        constraints_(inference.constraints
                         ? inference.constraints
                         : std::make_shared<OutputConstraints>(
                               *inference.tokenizer, inference.chat_template
                                                         ? inference.chat_template->family()
                                                         : chat::TemplateFamily::kUnknown)) {}

  // Chooses the scheduling class from the body's "priority": the HTTP routes also look at the
  // X-Synapse-Class header; a job item runs in its job's class.
  using ClassChoice = std::function<Result<serve::RequestClass>(const std::string& priority)>;

  void completions(const http::Request& req, http::Response& res) const {
    Result<Prepared> p = prepare_completion(req.body, http_class(req));
    if (!p.ok()) return send_error(res, p.status());
    if (p->request.max_tokens == 0) return answer_empty(*p, res);  // only the (echoed) prompt
    run(std::move(*p), req, res);
  }

  void chat_completions(const http::Request& req, http::Response& res) const {
    Result<Prepared> p = prepare_chat(req.body, http_class(req));
    if (!p.ok()) return send_error(res, p.status());
    run(std::move(*p), req, res);
  }

  // The body of one request, run to its end without HTTP (a job item): the JSON the route would
  // answer, or the error it would send.
  Result<std::string> call(std::string_view url, std::string_view body, serve::RequestClass c,
                           const std::function<bool()>& cancelled) const {
    const ClassChoice fixed = [c](const std::string&) -> Result<serve::RequestClass> { return c; };
    Result<Prepared> p = url == "/v1/chat/completions" ? prepare_chat(body, fixed)
                         : url == "/v1/completions"
                             ? prepare_completion(body, fixed)
                             : Result<Prepared>(Status(ErrorCode::kUnsupportedParameter,
                                                       "this server runs /v1/completions and "
                                                       "/v1/chat/completions, not " +
                                                           std::string(url),
                                                       ErrorWhere{.field = "url"}));
    if (!p.ok()) return std::move(p).take_status();
    if (p->stream.stream) {
      return Status(ErrorCode::kUnsupportedParameter, "a job's request cannot stream",
                    ErrorWhere{.field = "stream"});
    }
    if (!p->chat && p->request.max_tokens == 0) return empty_completion(*p);
    const size_t prompt_tokens = p->request.prompt.size();
    SYN_ASSIGN_OR_RETURN(std::shared_ptr<serve::RequestHandle> handle, submit(*p));
    return collect(*p, prompt_tokens, *handle, [&] { return cancelled(); });
  }

  void tokenize(const http::Request& req, http::Response& res) const {
    Result<api::TokenizeRequest> body = api::parse_tokenize_request(req.body, limits_);
    if (!body.ok()) return send_error(res, body.status());
    const std::vector<int32_t> ids = inf_.tokenizer->encode(
        body->content, {.add_special = body->add_special, .parse_special = true});
    std::vector<api::TokenPiece> pieces;
    pieces.reserve(ids.size());
    for (int32_t id : ids) {
      pieces.push_back({id, body->with_pieces ? token_bytes(*inf_.tokenizer, id) : std::string()});
    }
    res.set_content(api::tokenize_response(pieces, body->with_pieces), std::string(kJson));
  }

  void detokenize(const http::Request& req, http::Response& res) const {
    Result<api::DetokenizeRequest> body = api::parse_detokenize_request(req.body, limits_);
    if (!body.ok()) return send_error(res, body.status());
    Result<std::string> text = inf_.tokenizer->decode(body->tokens);
    if (!text.ok()) {
      return send_error(res, Status(ErrorCode::kInvalidValue, text.status().message(),
                                    ErrorWhere{.field = "tokens"}));
    }
    res.set_content(api::detokenize_response(*text), std::string(kJson));
  }

 private:
  ClassChoice http_class(const http::Request& req) const {
    return [&req](const std::string& priority) { return request_class(priority, req); };
  }

  Result<Prepared> prepare_completion(std::string_view text, const ClassChoice& choose) const {
    SYN_ASSIGN_OR_RETURN(api::CompletionRequest body, api::parse_completion_request(text, limits_));
    Prepared p;
    p.meta = {new_id("cmpl-"), unix_seconds(), inf_.model_id};
    SYN_RETURN_IF_ERROR(check_model(body.model));
    std::vector<int32_t> prompt = body.prompt_tokens;
    if (body.prompt_text) prompt = encode(*body.prompt_text, true);
    if (prompt.empty()) {
      const int32_t bos = inf_.tokenizer->vocab().special().bos;
      if (bos == tokenizer::kNoToken) {
        return Status(ErrorCode::kInvalidValue,
                      "the prompt is empty and the model has no BOS token",
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
        p.echo = *body.prompt_text;
      } else {
        Result<std::string> decoded = inf_.tokenizer->decode(prompt);
        if (!decoded.ok()) return std::move(decoded).take_status().with_field("prompt");
        p.echo = *decoded;
      }
    }
    p.stream = body.stream;
    p.logprobs = body.logprobs.has_value();
    p.request.logprobs = p.logprobs;
    p.request.top_logprobs = body.logprobs.value_or(0);
    const int64_t max_tokens =
        body.sampling.max_tokens.value_or(inf_.default_completion_max_tokens);
    SYN_RETURN_IF_ERROR(
        fill(p, std::move(prompt), body.sampling, max_tokens, "prompt", body.priority, choose));
    SYN_ASSIGN_OR_RETURN(p.request.constraint, constraints_->for_format(body.format));
    return p;
  }

  Result<Prepared> prepare_chat(std::string_view text, const ClassChoice& choose) const {
    SYN_ASSIGN_OR_RETURN(api::ChatCompletionRequest body,
                         api::parse_chat_completion_request(text, limits_));
    SYN_RETURN_IF_ERROR(check_model(body.model));
    if (!inf_.chat_template) return inf_.no_chat_template;
    SYN_ASSIGN_OR_RETURN(ToolPlan plan,
                         constraints_->for_tools(body.tools, body.tool_choice,
                                                 body.parallel_tool_calls, body.format));
    chat::ChatRenderInput input;
    input.messages = std::move(body.messages);
    input.tools = std::move(body.tools);
    input.bos_token = inf_.bos_token;
    input.eos_token = inf_.eos_token;
    Result<std::string> rendered = inf_.chat_template->render(input);
    if (!rendered.ok()) return std::move(rendered).take_status().with_field("messages");
    // Templates usually write the BOS token themselves; add it only when this one did not.
    const bool add_bos = inf_.bos_token.empty() || !rendered->starts_with(inf_.bos_token);
    std::vector<int32_t> prompt = encode(*rendered, add_bos);
    Prepared p;
    p.chat = true;
    p.meta = {new_id("chatcmpl-"), unix_seconds(), inf_.model_id};
    p.stream = body.stream;
    p.logprobs = body.logprobs;
    p.request.logprobs = body.logprobs;
    p.request.top_logprobs = body.top_logprobs;
    // No max_tokens: until the end of generation or a full context.
    const int64_t room =
        static_cast<int64_t>(inf_.service->n_ctx()) - static_cast<int64_t>(prompt.size());
    const int64_t max_tokens = body.sampling.max_tokens.value_or(std::max<int64_t>(room, 1));
    SYN_RETURN_IF_ERROR(
        fill(p, std::move(prompt), body.sampling, max_tokens, "messages", body.priority, choose));
    p.request.constraint = std::move(plan.constraint);
    p.tool_syntax = std::move(plan.syntax);
    return p;
  }

  Status check_model(const std::string& model) const {
    if (model.empty() || model == inf_.model_id) return ok_status();
    return Status(ErrorCode::kModelNotFound,
                  "the model '" + clip_for_echo(model) + "' does not exist; this server serves '" +
                      inf_.model_id + "'",
                  ErrorWhere{.field = "model"});
  }

  std::vector<int32_t> encode(const std::string& text, bool add_special) const {
    return inf_.tokenizer->encode(text, {.add_special = add_special, .parse_special = true});
  }

  Status fill(Prepared& p, std::vector<int32_t> prompt, const api::SamplingParams& sampling,
              int64_t max_tokens, const char* prompt_field, const std::string& priority,
              const ClassChoice& choose) const {
    const size_t n_ctx = inf_.service->n_ctx();
    if (prompt.size() > n_ctx) {
      return Status(ErrorCode::kContextLengthExceeded,
                    "the prompt has " + std::to_string(prompt.size()) +
                        " tokens; this model's context holds " + std::to_string(n_ctx),
                    ErrorWhere{.field = prompt_field});
    }
    SYN_ASSIGN_OR_RETURN(p.request.request_class, choose(priority));
    p.request.id = p.meta.id;
    p.request.prompt = std::move(prompt);
    p.request.max_tokens = static_cast<int32_t>(std::min<int64_t>(max_tokens, 1 << 24));
    p.request.sampling = sampler_params(sampling);
    p.request.stop = sampling.stop;
    return ok_status();
  }

  static api::CompletionResult empty_result(const Prepared& p) {
    api::CompletionResult result;
    result.text = p.echo;
    result.finish_reason = api::FinishReason::kLength;
    result.usage.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
    return result;
  }
  static std::string empty_completion(const Prepared& p) {
    return api::completion_response(p.meta, empty_result(p));
  }

  void answer_empty(const Prepared& p, http::Response& res) const {
    const api::CompletionResult result = empty_result(p);
    if (p.stream.stream) {
      std::string body = api::completion_chunk(p.meta, result.text, result.finish_reason);
      if (p.stream.include_usage) body += api::usage_chunk(p.meta, false, result.usage);
      body += api::sse_done();
      res.set_content(body, "text/event-stream");
      return;
    }
    res.set_content(empty_completion(p), std::string(kJson));
  }

  // Submits to the service; a prompt the service finds too long is reported on the field the
  // client wrote it in.
  Result<std::shared_ptr<serve::RequestHandle>> submit(Prepared& p) const {
    Result<std::shared_ptr<serve::RequestHandle>> submitted =
        inf_.service->submit(std::move(p.request));
    if (submitted.ok()) return submitted;
    Status s = submitted.status();
    if (s.code() == ErrorCode::kLimitExceeded && s.where().field == "prompt") {
      s = Status(ErrorCode::kContextLengthExceeded, s.message(),
                 ErrorWhere{.field = p.chat ? "messages" : "prompt"});
    }
    return s;
  }

  // Waits for the request's events and renders the one JSON response. `abandoned` is asked every
  // poll interval; when it says true the request is cancelled and kCancelled returned.
  Result<std::string> collect(const Prepared& p, size_t prompt_tokens, serve::RequestHandle& handle,
                              const std::function<bool()>& abandoned) const {
    std::string text = p.echo;
    std::vector<api::TokenLogprob> logprobs;
    serve::GenerationEvent e;
    for (;;) {
      const auto wait = handle.next_for(e, kPollInterval);
      if (wait == serve::RequestHandle::Wait::kFinished) break;
      if (abandoned()) {
        handle.cancel();  // the slot and its KV pages are freed within one engine step
        return Status(ErrorCode::kCancelled, "the request was cancelled");
      }
      if (wait == serve::RequestHandle::Wait::kTimeout) continue;
      text += e.text;
      if (p.logprobs) append_logprobs(*inf_.tokenizer, e, logprobs);
      if (e.final) break;
    }
    if (e.finish_reason == serve::FinishReason::kCancelled ||
        e.finish_reason == serve::FinishReason::kError) {
      return final_error(e);
    }
    const api::Usage usage{static_cast<int64_t>(prompt_tokens),
                           static_cast<int64_t>(e.usage.completion_tokens)};
    std::optional<std::vector<api::TokenLogprob>> lp;
    if (p.logprobs) lp = std::move(logprobs);
    if (p.chat && p.tool_syntax) {
      api::ChatCompletionResult result =
          read_tool_reply(std::move(text), *p.tool_syntax, api_finish(e.finish_reason));
      result.logprobs = std::move(lp);
      result.usage = usage;
      return api::chat_completion_response(p.meta, result);
    }
    if (p.chat) {
      return api::chat_completion_response(
          p.meta, {std::move(text), {}, api_finish(e.finish_reason), std::move(lp), usage});
    }
    return api::completion_response(
        p.meta, {std::move(text), api_finish(e.finish_reason), std::move(lp), usage});
  }

  // Submits and answers: one JSON object, or a stream of server-sent events.
  void run(Prepared p, const http::Request& req, http::Response& res) const {
    const serve::RequestClass c = p.request.request_class;
    const size_t prompt_tokens = p.request.prompt.size();
    Result<std::shared_ptr<serve::RequestHandle>> submitted = submit(p);
    if (!submitted.ok()) {
      const Status& s = submitted.status();
      const bool retry = s.code() == ErrorCode::kQueueFull || s.code() == ErrorCode::kUnavailable;
      return send_error(res, s,
                        retry ? std::optional(inf_.service->retry_after_s(c)) : std::nullopt);
    }
    std::shared_ptr<serve::RequestHandle> handle = std::move(*submitted);
    if (p.stream.stream) return stream(std::move(p), prompt_tokens, std::move(handle), res);
    bool client_gone = false;
    Result<std::string> body = collect(p, prompt_tokens, *handle, [&] {
      client_gone = req.client_gone();
      return client_gone;
    });
    if (client_gone) {
      res.status = kClientClosedRequest;
      return;
    }
    if (!body.ok()) return send_error(res, body.status());
    res.set_content(std::move(*body), std::string(kJson));
  }

  // The stream's state lives in the producer, which the server calls after the handler returns,
  // until it says the stream is over or a write fails.
  struct Stream {
    const tokenizer::Tokenizer* tokenizer = nullptr;
    Prepared p;
    size_t prompt_tokens = 0;
    std::shared_ptr<serve::RequestHandle> handle;
    bool started = false;
    bool done = false;
    int64_t text_offset = 0;
    std::optional<chat::ToolCallStream> tool_stream;  // chat with tools: the reply's reader

    // A chat chunk for what the tool-call reader lets out of `text` (all of it without tools).
    std::string chat_text_chunk(const std::string& text, bool at_end,
                                const std::vector<api::TokenLogprob>* lp) {
      if (!tool_stream) {
        if (text.empty() && lp == nullptr) return "";
        return api::chat_chunk(p.meta, {.content = text}, std::nullopt, lp);
      }
      chat::ToolCallStream::Delta d = tool_stream->push(text);
      if (at_end) {
        chat::ToolCallStream::Delta rest = tool_stream->finish();
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
      return api::chat_chunk(p.meta, delta, std::nullopt, lp);
    }

    bool write(http::StreamSink& sink, const std::string& data) {
      if (sink.write(data)) return true;
      handle->cancel();  // the client has gone
      return false;
    }

    // One call: waits for one event (or a poll interval) and writes what it brings; false once
    // the stream is over (ended, or the client gone).
    bool pump(http::StreamSink& sink) {
      if (!started) {
        started = true;
        std::string first = p.echo;
        if (p.chat) {
          if (!write(sink, api::chat_chunk(p.meta, {.role = true, .content = ""}, std::nullopt))) {
            return false;
          }
        } else if (!first.empty()) {
          if (!write(sink, api::completion_chunk(p.meta, first, std::nullopt))) return false;
          text_offset += static_cast<int64_t>(first.size());
        }
      }
      serve::GenerationEvent e;
      const auto wait = handle->next_for(e, kPollInterval);
      if (sink.client_gone()) {
        handle->cancel();
        return false;
      }
      if (wait == serve::RequestHandle::Wait::kTimeout) return true;
      if (wait == serve::RequestHandle::Wait::kFinished) {
        done = true;
        return false;
      }
      std::vector<api::TokenLogprob> logprobs;
      if (p.logprobs) append_logprobs(*tokenizer, e, logprobs);
      const auto* lp = p.logprobs && !logprobs.empty() ? &logprobs : nullptr;
      if (p.chat) {
        const std::string chunk = chat_text_chunk(e.text, e.final, lp);
        if (!chunk.empty() && !write(sink, chunk)) return false;
      } else if (!e.text.empty() || lp != nullptr) {
        const std::string chunk =
            api::completion_chunk(p.meta, e.text, std::nullopt, lp, text_offset);
        text_offset += static_cast<int64_t>(e.text.size());
        if (!write(sink, chunk)) return false;
      }
      if (!e.final) return true;
      std::string tail;
      if (e.finish_reason == serve::FinishReason::kCancelled ||
          e.finish_reason == serve::FinishReason::kError) {
        // Headers are gone; OpenAI streams an error as an event of its own.
        tail = api::sse_event(api::error_body(api::api_error_from_status(final_error(e))));
      } else {
        api::FinishReason finish = api_finish(e.finish_reason);
        if (tool_stream && tool_stream->calls_started() > 0 && finish == api::FinishReason::kStop) {
          finish = api::FinishReason::kToolCalls;
        }
        tail = p.chat ? api::chat_chunk(p.meta, {}, finish)
                      : api::completion_chunk(p.meta, "", finish);
        if (p.stream.include_usage) {
          tail += api::usage_chunk(p.meta, p.chat,
                                   {static_cast<int64_t>(prompt_tokens),
                                    static_cast<int64_t>(e.usage.completion_tokens)});
        }
      }
      tail += api::sse_done();
      if (!write(sink, tail)) return false;
      done = true;
      return false;
    }
  };

  void stream(Prepared p, size_t prompt_tokens, std::shared_ptr<serve::RequestHandle> handle,
              http::Response& res) const {
    auto state = std::make_shared<Stream>();
    state->tokenizer = inf_.tokenizer;
    state->prompt_tokens = prompt_tokens;
    if (p.tool_syntax) state->tool_stream.emplace(*p.tool_syntax);
    state->p = std::move(p);
    state->handle = std::move(handle);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_stream(
        "text/event-stream", [state](http::StreamSink& sink) { return state->pump(sink); },
        // Called when the stream ends for any reason; one that did not finish is cancelled
        // (the server stopping, a failed write).
        [state] {
          if (!state->done) state->handle->cancel();
        });
  }

  const Inference& inf_;
  const api::RequestLimits limits_;
  const std::shared_ptr<OutputConstraints> constraints_;
};

}  // namespace

Result<serve::RequestClass> request_class(const std::string& priority, const http::Request& req) {
  if (!priority.empty()) return *serve::request_class_from_name(priority);
  if (!req.has_header(kClassHeader)) return serve::RequestClass::kInteractive;
  const std::string name = req.header(kClassHeader);
  if (auto c = serve::request_class_from_name(name)) return *c;
  return Status(ErrorCode::kInvalidValue,
                std::string(kClassHeader) + " must be 'interactive', 'batch' or 'background'",
                ErrorWhere{.field = kClassHeader});
}

Result<std::string> run_generation_request(const Inference& inference, std::string_view url,
                                           std::string_view body, serve::RequestClass request_class,
                                           const std::function<bool()>& cancelled,
                                           const api::RequestLimits& limits) {
  return Routes(inference, limits).call(url, body, request_class, cancelled);
}

void add_inference_routes(http::Router& router, const Inference& inference,
                          const api::RequestLimits& limits) {
  auto routes = std::make_shared<const Routes>(inference, limits);
  // A model that does not generate gets add_wrong_model_routes' answers there instead.
  if (inference.service == nullptr || inference.service->generates()) {
    router.add("POST", "/v1/completions", [routes](const http::Request& req, http::Response& res) {
      routes->completions(req, res);
    });
    router.add("POST", "/v1/chat/completions",
               [routes](const http::Request& req, http::Response& res) {
                 routes->chat_completions(req, res);
               });
  }
  router.add("POST", "/tokenize", [routes](const http::Request& req, http::Response& res) {
    routes->tokenize(req, res);
  });
  router.add("POST", "/detokenize", [routes](const http::Request& req, http::Response& res) {
    routes->detokenize(req, res);
  });
}

}  // namespace synapse::server
