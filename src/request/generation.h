// SPDX-License-Identifier: Apache-2.0
// Text generation without HTTP: /v1/completions and /v1/chat/completions prepared (parsed,
// checked against the model, templated, tokenized, constrained), submitted to the model's
// Service, and their events collected into one JSON response or turned into server-sent-event
// chunks. The HTTP routes and the durable-job executor both run requests through here, so the
// two cannot drift apart.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/requests.h"
#include "api/responses.h"
#include "base/status.h"
#include "chat/tool_calls.h"
#include "request/endpoints.h"
#include "request/model_directory.h"
#include "serve/request.h"
#include "serve/request_handle.h"

namespace synapse::request {

// How often a waiting request looks at whether its caller still wants it: a client that
// disconnects is cancelled within this time plus one engine step.
inline constexpr std::chrono::milliseconds kPollInterval{50};

// The header that names a request's scheduling class when its body does not.
inline constexpr std::string_view kClassHeader = "X-Synapse-Class";

// The scheduling class of a request: the body's "priority" (already checked) when not empty,
// else the class header's value when given, else interactive. invalid_value for a bad header.
Result<serve::RequestClass> choose_request_class(std::string_view priority,
                                                 const std::optional<std::string>& header);

// Chooses the class from the body's "priority": an HTTP request also looks at its header, a job
// item runs in its job's class.
using ClassChoice = std::function<Result<serve::RequestClass>(const std::string& priority)>;

// One generation request on its way to the service.
struct GenerationCall {
  ModelHandle model;
  serve::GenerationRequest request;
  api::ResponseMeta meta;
  bool chat = false;
  api::StreamParams stream;
  bool logprobs = false;
  std::string echo;  // completions: the prompt text written before the completion
  // Chat with tools: the reply is read for tool calls in this syntax.
  std::optional<chat::ToolCallSyntax> tool_syntax;
  size_t prompt_tokens = 0;
};

// Parses and prepares a kCompletions or kChatCompletions request (another kind is
// unsupported_parameter). Errors name the field, as the route answers them.
Result<GenerationCall> prepare_generation(EndpointKind kind, const ModelDirectory& models,
                                          std::string_view body, const ClassChoice& choose,
                                          const api::RequestLimits& limits);

// The same on a request already parsed and a model already found: what prepare_generation does
// after parsing, for callers that build the typed request themselves (the Ollama dialect).
Result<GenerationCall> prepare_completion_call(ModelHandle model, api::CompletionRequest body,
                                               const ClassChoice& choose);
Result<GenerationCall> prepare_chat_call(ModelHandle model, api::ChatCompletionRequest body,
                                         const ClassChoice& choose);

// A completion asking for no tokens is answered without running: its (echoed) prompt, as one
// JSON object or, when streamed, the whole event stream. nullopt for every other request.
std::optional<std::string> answer_without_running(const GenerationCall& call);

// Submits to the model's Service. Errors: queue_full and unavailable (transient: answer with
// Retry-After, see retry_after_s), a prompt longer than the context (context_length_exceeded on
// the field the client wrote it in), invalid_argument.
Result<std::shared_ptr<serve::RequestHandle>> submit_generation(GenerationCall& call);

// Seconds a refused client should wait before retrying.
uint32_t retry_after_s(const GenerationCall& call);

// Waits for the request's events and renders the one JSON response. `abandoned` is asked every
// poll interval; when it says true the request is cancelled and `cancelled` returned.
Result<std::string> collect_generation(const GenerationCall& call, serve::RequestHandle& handle,
                                       const std::function<bool()>& abandoned);

// The server-sent events of a streamed request, produced one engine event at a time.
class GenerationStream {
 public:
  GenerationStream(GenerationCall call, std::shared_ptr<serve::RequestHandle> handle);
  // Waits up to one poll interval for an event and appends the chunks it brings to `out` (the
  // first call also writes the stream's opening chunk). False once the stream has ended: its
  // last chunk and [DONE] are in `out`.
  bool next(std::string& out);
  // The caller has gone (or stopped writing): cancels the request unless it already ended.
  void abandon();
  bool ended() const { return ended_; }

 private:
  std::string chat_text_chunk(const std::string& text, bool at_end,
                              const std::vector<api::TokenLogprob>* lp);

  GenerationCall call_;
  std::shared_ptr<serve::RequestHandle> handle_;
  bool started_ = false;
  bool ended_ = false;
  int64_t text_offset_ = 0;
  std::optional<chat::ToolCallStream> tool_stream_;  // chat with tools: the reply's reader
};

// One request run to its end as a durable job's item runs: `url` must be a generation endpoint,
// the class is fixed (whatever the body's "priority" says), a body asking to stream is
// unsupported_parameter. Returns the JSON response the route would send, or its error.
Result<std::string> run_generation(const ModelDirectory& models, EndpointKind kind,
                                   std::string_view body, serve::RequestClass request_class,
                                   const std::function<bool()>& cancelled,
                                   const api::RequestLimits& limits = {});

}  // namespace synapse::request
