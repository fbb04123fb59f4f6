// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for JSON Schema compilation (src/constrain/json_schema.h). Each input is a JSON
// document read as a schema (through base/json_body.h, which bounds size and depth before
// nlohmann recurses), compiled under small bounds, with flexible whitespace when the input's
// length is odd. The result must be a grammar or an error with a grammar error code. A grammar
// that compiles matches the values the schema itself names (`const`, `enum`, `default`,
// `examples`, at any depth, serialised compactly) and a few fixed texts, and its token masks
// are compared with feeding every token (constrain_fuzz_check.h).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_body.h"
#include "constrain/json_schema.h"
#include "fuzz/constrain_fuzz_check.h"

namespace {

constexpr size_t kMaxTexts = 12;
constexpr size_t kMaxTextBytes = 1024;
constexpr size_t kMaskSteps = 8;
constexpr size_t kMaxVisitedNodes = 2000;

using Json = nlohmann::ordered_json;

void add_text(const Json& value, std::vector<std::string>& texts) {
  if (texts.size() >= kMaxTexts) return;
  // Strings came through the JSON parser, so they are valid UTF-8; `replace` only guards that.
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= kMaxTextBytes) texts.push_back(std::move(text));
}

// The instances a schema names, depth first; arrays under `enum` and `examples` give each
// element. Iterative, with a bounded number of nodes.
std::vector<std::string> named_instances(const Json& schema) {
  std::vector<std::string> texts;
  std::vector<const Json*> stack{&schema};
  for (size_t visited = 0; !stack.empty() && visited < kMaxVisitedNodes; ++visited) {
    const Json& node = *stack.back();
    stack.pop_back();
    if (node.is_array()) {
      for (const Json& element : node) stack.push_back(&element);
      continue;
    }
    if (!node.is_object()) continue;
    for (const auto& [key, value] : node.items()) {
      if (key == "const" || key == "default") {
        add_text(value, texts);
      } else if ((key == "enum" || key == "examples") && value.is_array()) {
        for (const Json& element : value) add_text(element, texts);
      } else {
        stack.push_back(&value);
      }
    }
  }
  return texts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;  // NOLINT(google-build-using-namespace)
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  JsonLimits limits;
  limits.max_bytes = 64 << 10;
  limits.max_depth = 32;
  auto schema = parse_json_text<Json>(text, limits, JsonShape::kAny, "the schema");
  if (!schema.ok()) return 0;
  constrain::JsonSchemaOptions options;
  options.flexible_whitespace = (size & 1) != 0;
  options.time_limit = std::chrono::milliseconds(200);
  options.max_rules = 4000;
  options.max_regex_terms = 100000;
  auto grammar = constrain::compile_json_schema(*schema, options);
  if (!grammar.ok()) {
    if (!fuzz::is_grammar_error(grammar.status().code()) || grammar.status().message().empty()) {
      fuzz::fail("unexpected error: " + grammar.status().to_string());
    }
    return 0;
  }
  std::vector<std::string> texts = named_instances(*schema);
  for (const char* fixed : {"{}", "[]", "null", "0", "\"\"", "true", "{\"a\":[1,\"b\"]}"}) {
    texts.emplace_back(fixed);
  }
  fuzz::check_grammar(std::move(grammar).value(), texts, kMaskSteps);
  return 0;
}
