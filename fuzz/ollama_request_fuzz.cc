// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the bodies of Ollama's API (src/api/ollama.h). The first input byte picks
// the parser (generate, chat, embed, embeddings, show/pull/delete, copy), the rest is the body.
// Every outcome must be a parsed request or an error with a request-error code; a parsed
// generate or chat request's answer objects are also written, with its text as the content.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/ollama.h"

namespace {

bool request_error(synapse::ErrorCode code) {
  using synapse::ErrorCode;
  return code == ErrorCode::kInvalidJson || code == ErrorCode::kMissingParameter ||
         code == ErrorCode::kInvalidType || code == ErrorCode::kInvalidValue ||
         code == ErrorCode::kUnsupportedParameter || code == ErrorCode::kRequestTooLarge;
}

template <typename T>
void check(const synapse::Result<T>& r) {
  if (r.ok() || request_error(r.status().code())) return;
  std::fprintf(stderr, "unexpected error: %s\n", r.status().to_string().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;  // NOLINT(google-build-using-namespace)
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  api::RequestLimits limits;
  limits.max_body_bytes = 64 << 10;
  switch (data[0] % 6) {
    case 0: {
      auto r = api::parse_ollama_generate(body, limits);
      check(r);
      if (r.ok()) {
        const api::OllamaStats stats{.done_reason = "stop"};
        if (api::ollama_reply({.model = r->common.model, .text = r->prompt, .stats = &stats})
                .empty()) {
          std::abort();
        }
      }
      break;
    }
    case 1: {
      auto r = api::parse_ollama_chat(body, limits);
      check(r);
      if (r.ok() && !r->messages.empty()) {
        std::vector<api::OllamaToolCall> calls;
        for (const auto& c : r->messages[0].tool_calls) calls.push_back({c.name, c.arguments});
        const std::string line = api::ollama_reply({.model = r->common.model,
                                                    .chat = true,
                                                    .text = r->messages[0].content.value_or(""),
                                                    .tool_calls = calls});
        if (line.empty()) std::abort();
      }
      break;
    }
    case 2:
      check(api::parse_ollama_embed(body, false, limits));
      break;
    case 3:
      check(api::parse_ollama_embed(body, true, limits));
      break;
    case 4:
      check(api::parse_ollama_model_request(body, limits));
      break;
    default:
      check(api::parse_ollama_copy(body, limits));
      break;
  }
  return 0;
}
