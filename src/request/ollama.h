// SPDX-License-Identifier: Apache-2.0
// Ollama's API without HTTP: /api/generate and /api/chat built into the OpenAI path's typed
// requests and prepared by request/generation (one generation pipeline, two dialects), their
// events turned into Ollama's NDJSON objects; /api/embed and /api/embeddings run through
// run_embeddings and reshaped; /api/tags, /api/ps and /api/show from the model directory. The
// routes (server/ollama_routes.cc) keep only HTTP: status codes, NDJSON writes, probes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/ollama.h"
#include "base/status.h"
#include "request/generation.h"
#include "request/model_directory.h"

namespace synapse::request {

// A generate or chat request ready to submit, or (empty prompt or messages: Ollama's way to
// load or unload a model) already answered.
struct OllamaCall {
  std::optional<GenerationCall> call;
  std::string answer;  // without `call`: the one object (done_reason "load" or "unload")
  bool chat = false;
  bool stream = true;
  std::string model;       // the name the client wrote, echoed in every object
  int64_t created_ns = 0;  // unix ns when it arrived
  std::chrono::steady_clock::time_point start;
  int64_t load_ns = 0;  // spent finding (loading) the model
};

// `request_class`: the scheduling class (the routes take it from the X-Synapse-Class header,
// as the OpenAI routes do; Ollama's bodies have no field for it).
// Errors: the model directory's (model_not_found, unavailable, ...), the generation path's
// (no_chat_template, context_length_exceeded, invalid_value ...), invalid_value for keep_alive.
Result<OllamaCall> prepare_ollama_generate(const ModelDirectory& models,
                                           api::OllamaGenerateRequest request,
                                           serve::RequestClass request_class);
Result<OllamaCall> prepare_ollama_chat(const ModelDirectory& models, api::OllamaChatRequest request,
                                       serve::RequestClass request_class);

// The objects of a submitted generate or chat request, one engine event at a time. Streaming:
// one NDJSON line per piece of text, then the final line with the counts (or {"error"}).
// Not streaming: nothing until the end, then the one object (no newline), or failure().
class OllamaStream {
 public:
  OllamaStream(OllamaCall call, std::shared_ptr<serve::RequestHandle> handle);
  // Waits up to one poll interval and appends what it brings. False once the stream has ended.
  bool next(std::string& out);
  // The caller has gone (or stopped writing): cancels the request unless it already ended.
  void abandon();
  // Not streaming: why the request failed (OK when it did not).
  const Status& failure() const { return failure_; }

 private:
  std::string line(std::string text, std::vector<api::OllamaToolCall> calls,
                   const api::OllamaStats* stats) const;
  std::string finish(const serve::GenerationEvent& e);

  OllamaCall call_;
  std::shared_ptr<serve::RequestHandle> handle_;
  bool ended_ = false;
  std::string text_;  // the whole reply so far
  std::optional<chat::ToolCallStream> tool_stream_;
  std::optional<std::chrono::steady_clock::time_point> first_event_;
  Status failure_;
};

// /api/embed (or /api/embeddings when request.legacy) run on the model's service in
// `request_class`; an empty input only loads the model.
Result<std::string> run_ollama_embed(const ModelDirectory& models,
                                     const api::OllamaEmbedRequest& request,
                                     serve::RequestClass request_class,
                                     const std::function<bool()>& cancelled = {});

// Every model (every name of it), loaded or not, and the loaded ones, each with its store
// digest and the `details` read from its file's metadata (model_details.h; no weights loaded).
std::string ollama_tags(const ModelDirectory& models);
std::string ollama_ps(const ModelDirectory& models);
// /api/show, loading the model: the details and model_info of its file, the chat template it
// is served with, its stop strings as `parameters`, and what it can do (`capabilities`).
Result<std::string> ollama_show(const ModelDirectory& models, const std::string& name);

// Ollama's HTTP status for a failure (404 for an unknown model, 400 for a bad request, 500 for
// the rest, 503/429 for the transient ones) and its {"error"} body; `model`, when given, names
// the model in Ollama's "model 'x' not found".
int ollama_http_status(const Status& status);
std::string ollama_error_body(const Status& status, std::string_view model = {});

}  // namespace synapse::request
