// SPDX-License-Identifier: Apache-2.0
#include "server/ollama_routes.h"

#include <memory>
#include <optional>
#include <string>

#include "api/ollama.h"
#include "request/ollama.h"
#include "request/ollama_models.h"
#include "server/http_reply.h"

namespace synapse::server {
namespace {

using request::EndpointKind;

constexpr std::string_view kNdjson = "application/x-ndjson";
constexpr int kClientClosedRequest = 499;  // as the OpenAI routes log it

void send_ollama_error(http::Response& res, const Status& s, std::string_view model = {}) {
  if (s.code() == ErrorCode::kCancelled) {
    res.status = kClientClosedRequest;
    return;
  }
  res.status = request::ollama_http_status(s);
  // Ollama keeps 429 and 503 as the table has them, so the OpenAI routes' header rule applies.
  if (std::optional<std::string> retry = api::retry_after_header(api::api_error_from_status(s))) {
    res.set_header("Retry-After", *retry);
  }
  res.set_content(request::ollama_error_body(s, model), std::string(kJson));
}

// The scheduling class the X-Synapse-Class header names (interactive without it), checked as
// the OpenAI routes check it: Ollama's bodies have no "priority".
Result<serve::RequestClass> request_class(const http::Request& req) {
  const std::string header(request::kClassHeader);
  return request::choose_request_class(
      "", req.has_header(header) ? std::optional(req.header(header)) : std::nullopt);
}

// Generate and chat: submitted, then streamed as NDJSON or collected into one object.
void run_generation(Result<request::OllamaCall> call, const http::Request& req,
                    http::Response& res) {
  if (!call.ok()) return send_ollama_error(res, call.status());
  const std::string model = call->model;
  const bool streaming = call->stream;
  if (!call->call)
    return res.set_content(call->answer + (call->stream ? "\n" : ""),
                           std::string(call->stream ? kNdjson : kJson));
  Result<std::shared_ptr<serve::RequestHandle>> handle = request::submit_generation(*call->call);
  if (!handle.ok()) return send_ollama_error(res, handle.status(), model);
  auto stream = std::make_shared<request::OllamaStream>(std::move(*call), *handle);
  if (streaming) {
    return send_stream(res, std::string(kNdjson), stream);
  }
  std::string out;
  while (stream->next(out)) {
    if (req.client_gone()) {
      stream->abandon();
      res.status = kClientClosedRequest;
      return;
    }
  }
  if (!stream->failure().ok()) return send_ollama_error(res, stream->failure(), model);
  res.set_content(std::move(out), std::string(kJson));
}

void generate(const request::ModelDirectory& models, const api::RequestLimits& limits,
              const http::Request& req, http::Response& res) {
  Result<api::OllamaGenerateRequest> body = api::parse_ollama_generate(req.body, limits);
  if (!body.ok()) return send_ollama_error(res, body.status());
  Result<serve::RequestClass> c = request_class(req);
  if (!c.ok()) return send_ollama_error(res, c.status());
  const std::string model = body->common.model;
  Result<request::OllamaCall> call = request::prepare_ollama_generate(models, std::move(*body), *c);
  if (!call.ok()) return send_ollama_error(res, call.status(), model);
  run_generation(std::move(call), req, res);
}

void chat(const request::ModelDirectory& models, const api::RequestLimits& limits,
          const http::Request& req, http::Response& res) {
  Result<api::OllamaChatRequest> body = api::parse_ollama_chat(req.body, limits);
  if (!body.ok()) return send_ollama_error(res, body.status());
  Result<serve::RequestClass> c = request_class(req);
  if (!c.ok()) return send_ollama_error(res, c.status());
  const std::string model = body->common.model;
  Result<request::OllamaCall> call = request::prepare_ollama_chat(models, std::move(*body), *c);
  if (!call.ok()) return send_ollama_error(res, call.status(), model);
  run_generation(std::move(call), req, res);
}

void embed(bool legacy, const request::ModelDirectory& models, const api::RequestLimits& limits,
           const http::Request& req, http::Response& res) {
  Result<api::OllamaEmbedRequest> body = api::parse_ollama_embed(req.body, legacy, limits);
  if (!body.ok()) return send_ollama_error(res, body.status());
  Result<serve::RequestClass> c = request_class(req);
  if (!c.ok()) return send_ollama_error(res, c.status());
  Result<std::string> out =
      request::run_ollama_embed(models, *body, *c, [&req] { return req.client_gone(); });
  if (!out.ok()) return send_ollama_error(res, out.status(), body->model);
  res.set_content(std::move(*out), std::string(kJson));
}

void show(const request::ModelDirectory& models, const api::RequestLimits& limits,
          const http::Request& req, http::Response& res) {
  Result<api::OllamaModelRequest> body = api::parse_ollama_model_request(req.body, limits);
  if (!body.ok()) return send_ollama_error(res, body.status());
  Result<std::string> out = request::ollama_show(models, body->model);
  if (!out.ok()) return send_ollama_error(res, out.status(), body->model);
  res.set_content(std::move(*out), std::string(kJson));
}

const request::ModelAdmin kNoStore;  // answers that this server manages no store

// Streamed: the hub's progress as it comes, then {"status":"success"} or {"error"}. Not
// streamed: the last object alone, or the error with its status.
void pull(const request::ModelAdmin& admin, const api::RequestLimits& limits,
          const http::Request& req, http::Response& res) {
  Result<api::OllamaModelRequest> body = api::parse_ollama_model_request(req.body, limits);
  if (!body.ok()) return send_ollama_error(res, body.status());
  if (!body->stream) {
    std::string last;
    const Status s = request::ollama_pull(admin, body->model, [&](const std::string& line) {
      last = line;
      return !req.client_gone();
    });
    if (!s.ok()) return send_ollama_error(res, s, body->model);
    return res.set_content(last, std::string(kJson));
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_stream(std::string(kNdjson),
                 // Runs the whole pull in its first call, writing each line as it comes.
                 [&admin, model = body->model](http::StreamSink& sink) {
                   const Status s =
                       request::ollama_pull(admin, model, [&sink](const std::string& line) {
                         return !sink.client_gone() && sink.write(line + "\n");
                       });
                   if (!s.ok() && s.code() != ErrorCode::kCancelled) {
                     sink.write(request::ollama_error_body(s, model) + "\n");
                   }
                   return false;
                 });
}

void remove_or_copy(EndpointKind kind, const request::ModelAdmin& admin,
                    const api::RequestLimits& limits, const http::Request& req,
                    http::Response& res) {
  Status s;
  std::string model;
  if (kind == EndpointKind::kOllamaDelete) {
    Result<api::OllamaModelRequest> body = api::parse_ollama_model_request(req.body, limits);
    if (!body.ok()) return send_ollama_error(res, body.status());
    model = body->model;
    s = request::ollama_delete(admin, model);
  } else {
    Result<api::OllamaCopyRequest> body = api::parse_ollama_copy(req.body, limits);
    if (!body.ok()) return send_ollama_error(res, body.status());
    model = body->source;
    s = request::ollama_copy(admin, body->source, body->destination);
  }
  if (!s.ok()) return send_ollama_error(res, s, model);
  res.status = 200;  // Ollama answers both with an empty 200
}

}  // namespace

std::optional<http::Handler> ollama_route(EndpointKind kind, const request::ModelDirectory& models,
                                          const request::ModelAdmin* admin,
                                          const api::RequestLimits& limits) {
  const request::ModelDirectory* m = &models;
  const request::ModelAdmin* a = admin != nullptr ? admin : &kNoStore;
  switch (kind) {
    case EndpointKind::kOllamaRoot:
      return [](const http::Request&, http::Response& res) {
        res.set_content("Ollama is running", "text/plain; charset=utf-8");
      };
    case EndpointKind::kOllamaVersion:
      return [](const http::Request&, http::Response& res) {
        res.set_content(R"({"version":")" + std::string(api::kOllamaApiVersion) + R"("})",
                        std::string(kJson));
      };
    case EndpointKind::kOllamaTags:
    case EndpointKind::kOllamaPs:
      return [m, kind](const http::Request&, http::Response& res) {
        res.set_content(
            kind == EndpointKind::kOllamaTags ? request::ollama_tags(*m) : request::ollama_ps(*m),
            std::string(kJson));
      };
    case EndpointKind::kOllamaShow:
      return [m, limits](const http::Request& req, http::Response& res) {
        show(*m, limits, req, res);
      };
    case EndpointKind::kOllamaGenerate:
      return [m, limits](const http::Request& req, http::Response& res) {
        generate(*m, limits, req, res);
      };
    case EndpointKind::kOllamaChat:
      return [m, limits](const http::Request& req, http::Response& res) {
        chat(*m, limits, req, res);
      };
    case EndpointKind::kOllamaEmbed:
    case EndpointKind::kOllamaEmbeddings:
      return [m, limits, kind](const http::Request& req, http::Response& res) {
        embed(kind == EndpointKind::kOllamaEmbeddings, *m, limits, req, res);
      };
    case EndpointKind::kOllamaPull:
      return [a, limits](const http::Request& req, http::Response& res) {
        pull(*a, limits, req, res);
      };
    case EndpointKind::kOllamaDelete:
    case EndpointKind::kOllamaCopy:
      return [a, limits, kind](const http::Request& req, http::Response& res) {
        remove_or_copy(kind, *a, limits, req, res);
      };
    default:
      return std::nullopt;
  }
}

}  // namespace synapse::server
