// SPDX-License-Identifier: Apache-2.0
#include "constrain/tool_grammar.h"

#include <gtest/gtest.h>

#include "constrain/matcher.h"

namespace synapse::constrain {
namespace {

using Json = nlohmann::ordered_json;

ToolCallFormat hermes() {
  ToolCallFormat f;
  f.open = "<tool_call>\n";
  f.close = "\n</tool_call>";
  f.separator = "\n";
  return f;
}

std::vector<ToolFunction> functions() {
  return {
      {"get_weather", Json::parse(R"({"type": "object", "properties": {"city": {"type":
          "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
          "required": ["city"], "additionalProperties": false})")},
      {"now", Json()},
  };
}

std::shared_ptr<const Grammar> compile(const ToolCallFormat& format, ToolMode mode,
                                       const Json* content = nullptr) {
  auto g = compile_tool_grammar(format, functions(), mode, content);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return std::make_shared<const Grammar>(std::move(g).value());
}

const char* kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"days\":3}}\n"
    "</tool_call>";

TEST(ToolGrammar, RequiredAcceptsOnlyCallsWhoseArgumentsFitTheirFunction) {
  const auto g = compile(hermes(), ToolMode::kRequired);
  EXPECT_TRUE(grammar_accepts(g, kWeather));
  EXPECT_TRUE(grammar_accepts(g, std::string(kWeather) +
                                     "\n<tool_call>\n{\"name\": \"now\", \"arguments\": "
                                     "{\"anything\":[1]}}\n</tool_call>"));
  for (const char* text :
       {"", "Sure.",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\":3}}\n"
        "</tool_call>",  // city is required
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"P\",\"days\":9}}\n"
        "</tool_call>",  // days out of range
        "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"now\", \"arguments\": []}\n</tool_call>"}) {
    EXPECT_FALSE(grammar_accepts(g, text)) << text;
  }
}

TEST(ToolGrammar, ParallelOffAllowsOneCall) {
  ToolCallFormat f = hermes();
  f.parallel = false;
  const auto g = compile(f, ToolMode::kRequired);
  EXPECT_TRUE(grammar_accepts(g, kWeather));
  EXPECT_FALSE(grammar_accepts(g, std::string(kWeather) + "\n" + kWeather));
}

TEST(ToolGrammar, AutoAllowsTextThenTheTriggerOpensACall) {
  const auto g = compile(hermes(), ToolMode::kAuto);
  EXPECT_TRUE(grammar_accepts(g, ""));
  EXPECT_TRUE(grammar_accepts(g, "Paris is sunny."));
  EXPECT_TRUE(grammar_accepts(g, kWeather));
  EXPECT_TRUE(grammar_accepts(g, std::string("Let me look. ") + kWeather));
  // Once the trigger is written, the call must follow the grammar.
  EXPECT_FALSE(grammar_accepts(g, "Look: <tool_call>\nnot json\n</tool_call>"));
  EXPECT_FALSE(grammar_accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}"));
}

TEST(ToolGrammar, AutoWithAResponseFormatMeansThatFormatOrACall) {
  const Json content = Json::parse(R"({"type": "object", "properties": {"answer":
      {"type": "string"}}, "required": ["answer"], "additionalProperties": false})");
  const auto g = compile(hermes(), ToolMode::kAuto, &content);
  EXPECT_TRUE(grammar_accepts(g, R"({"answer":"yes"})"));
  EXPECT_TRUE(grammar_accepts(g, kWeather));
  EXPECT_FALSE(grammar_accepts(g, "free text"));
}

TEST(ToolGrammar, Llama3AndMistralSyntaxes) {
  ToolCallFormat llama;
  llama.arguments_key = "parameters";
  llama.parallel = false;
  const auto l = compile(llama, ToolMode::kAuto);
  EXPECT_TRUE(grammar_accepts(l, "{\"name\": \"now\", \"parameters\": {}}"));
  EXPECT_TRUE(grammar_accepts(l, "It is noon."));
  EXPECT_FALSE(grammar_accepts(l, "{\"name\": \"now\", \"arguments\": {}}"));

  ToolCallFormat mistral;
  mistral.list_open = "[TOOL_CALLS]";
  const auto m = compile(mistral, ToolMode::kRequired);
  EXPECT_TRUE(grammar_accepts(
      m,
      "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"get_weather\", "
      "\"arguments\": {\"city\":\"Oslo\"}}]"));
  EXPECT_FALSE(grammar_accepts(m, "[TOOL_CALLS][]"));
}

TEST(ToolGrammar, BadParametersNameTheTool) {
  std::vector<ToolFunction> bad = {
      {"f", Json::parse(R"({"type": "object", "properties": {"a": {"type": "array",
          "uniqueItems": true}}})")}};
  auto g = compile_tool_grammar(hermes(), bad, ToolMode::kRequired, nullptr);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kUnsupportedSchema);
  EXPECT_EQ(g.status().where().field.rfind("tools[0].function.parameters/properties/a", 0), 0u)
      << g.status().to_string();
}

}  // namespace
}  // namespace synapse::constrain
