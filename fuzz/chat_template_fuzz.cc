// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for chat templates: the input is template text, compiled and (when it
// compiles) rendered over a small conversation with tools, under tight limits. Any outcome but a
// crash, a hang or an error code outside the template/limit family is a finding: malformed or
// hostile templates must fail as values (template_syntax, template_error, template_raised,
// limit_exceeded).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chat/chat_template.h"

namespace synapse::chat {
namespace {

ChatRenderInput conversation() {
  ChatRenderInput input;
  input.messages = {
      {"system", "Be brief.", {}, "", ""},
      {"user", "Weather in Paris? \xC3\xA9 \xF0\x9F\x9A\x80", {}, "", ""},
      {"assistant",
       std::nullopt,
       {{"c1", "get_weather", R"({"city": "Paris", "n": [1, 2.5]})"}},
       "",
       ""},
      {"tool", "{\"t\": 21}", {}, "c1", ""},
      {"assistant", "  It is 21 degrees.\n", {}, "", ""},
      {"user", "Thanks", {}, "", ""},
  };
  input.tools = nlohmann::ordered_json::parse(
      R"([{"type": "function", "function": {"name": "get_weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  input.bos_token = "<s>";
  input.eos_token = "</s>";
  input.extra = {{"enable_thinking", false}};
  return input;
}

bool expected_failure(ErrorCode code) {
  return code == ErrorCode::kTemplateSyntax || code == ErrorCode::kTemplateError ||
         code == ErrorCode::kTemplateRaised || code == ErrorCode::kLimitExceeded;
}

}  // namespace
}  // namespace synapse::chat

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse::chat;  // NOLINT(google-build-using-namespace)
  static const ChatRenderInput input = conversation();
  // Small limits keep each input fast; the limits themselves are what is being exercised.
  RenderLimits limits;
  limits.max_output_bytes = 64 << 10;
  limits.max_loop_iterations = 20000;
  limits.max_steps = 200000;
  limits.max_call_depth = 16;
  auto compiled = ChatTemplate::compile(std::string(reinterpret_cast<const char*>(data), size));
  if (!compiled.ok()) {
    if (!expected_failure(compiled.status().code())) {
      std::fprintf(stderr, "unexpected compile error: %s\n", compiled.status().to_string().c_str());
      std::abort();
    }
    return 0;
  }
  auto rendered = compiled->render(input, limits, 1721995200);
  if (!rendered.ok() && !expected_failure(rendered.status().code())) {
    std::fprintf(stderr, "unexpected render error: %s\n", rendered.status().to_string().c_str());
    std::abort();
  }
  if (rendered.ok() && rendered->size() > limits.max_output_bytes) {
    std::fprintf(stderr, "output over the limit: %zu bytes\n", rendered->size());
    std::abort();
  }
  return 0;
}
