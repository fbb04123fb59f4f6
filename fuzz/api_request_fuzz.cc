// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for request bodies of the HTTP API. The first input byte picks the endpoint
// (completions, chat completions, tokenize, detokenize, embeddings, rerank, model pull), the rest
// is the body. Every outcome must be a parsed request or an error with a request-error code whose
// OpenAI error body serializes; a parsed chat request is also rendered through the Qwen2.5 template
// (bounded, with tools), so arbitrary messages and tool-call arguments reach the template values.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "api/embeddings.h"
#include "api/model_pull.h"
#include "api/requests.h"
#include "chat/chat_template.h"

namespace {

bool request_error(synapse::ErrorCode code) {
  using synapse::ErrorCode;
  return code == ErrorCode::kInvalidJson || code == ErrorCode::kMissingParameter ||
         code == ErrorCode::kInvalidType || code == ErrorCode::kInvalidValue ||
         code == ErrorCode::kUnsupportedParameter || code == ErrorCode::kRequestTooLarge;
}

template <typename T>
void check(const synapse::Result<T>& r) {
  if (r.ok()) return;
  if (!request_error(r.status().code())) {
    std::fprintf(stderr, "unexpected error: %s\n", r.status().to_string().c_str());
    std::abort();
  }
  const auto error = synapse::api::api_error_from_status(r.status());
  if (error.http_status < 400 || error.http_status >= 500 ||
      synapse::api::error_body(error).empty()) {
    std::fprintf(stderr, "bad error mapping: %d\n", error.http_status);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;  // NOLINT(google-build-using-namespace)
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  api::RequestLimits limits;
  limits.max_body_bytes = 64 << 10;
  switch (data[0] % 7) {
    case 0:
      check(api::parse_completion_request(body, limits));
      break;
    case 1: {
      auto r = api::parse_chat_completion_request(body, limits);
      check(r);
      if (r.ok()) {
        static const auto qwen =
            chat::ChatTemplate::compile(std::string(*chat::builtin_template("qwen2.5")));
        chat::ChatRenderInput input;
        input.messages = r->messages;
        input.tools = r->tools;
        chat::RenderLimits render_limits;
        render_limits.max_output_bytes = 1 << 20;
        render_limits.max_steps = 200000;
        auto rendered = qwen->render(input, render_limits, 0);
        if (!rendered.ok() && rendered.status().code() != ErrorCode::kTemplateError &&
            rendered.status().code() != ErrorCode::kLimitExceeded) {
          std::fprintf(stderr, "render: %s\n", rendered.status().to_string().c_str());
          std::abort();
        }
      }
      break;
    }
    case 2:
      check(api::parse_tokenize_request(body, limits));
      break;
    case 3:
      check(api::parse_detokenize_request(body, limits));
      break;
    case 4: {
      auto r = api::parse_embeddings_request(body, limits);
      check(r);
      // Exactly one input kind, never empty: the request layer relies on it.
      if (r.ok() && (r->texts.empty() == r->tokens.empty())) std::abort();
      break;
    }
    case 5: {
      auto r = api::parse_rerank_request(body, limits);
      check(r);
      if (r.ok() && (r->documents.empty() || r->top_n > r->documents.size())) std::abort();
      break;
    }
    default: {
      auto r = api::parse_model_pull_request(body, limits);
      check(r);
      // A model to pull is always named; the answer objects serialize whatever it holds.
      if (r.ok() && r->model.empty()) std::abort();
      if (r.ok() && (api::model_pull_progress({"downloading", r->file, r->model, 1, 1}).empty() ||
                     api::model_pull_done({r->model, r->file, 0, "download"}).empty())) {
        std::abort();
      }
      break;
    }
  }
  return 0;
}
