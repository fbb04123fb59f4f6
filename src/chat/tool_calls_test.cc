// SPDX-License-Identifier: Apache-2.0
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

namespace synapse::chat {
namespace {

TEST(ToolCalls, ChatmlRepliesParseIntoCallsAndContent) {
  const ToolCallSyntax s = tool_call_syntax(TemplateFamily::kChatml);
  const ParsedReply r = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", "
      "\"arguments\": {}}\n</tool_call>",
      s);
  EXPECT_EQ(r.content, "Let me check.\n");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\": \"Paris\", \"days\": [1, 2]}");
  EXPECT_EQ(r.calls[1].name, "now");
  EXPECT_EQ(r.calls[1].arguments, "{}");
}

TEST(ToolCalls, Llama3AndMistralForms) {
  const ParsedReply llama = parse_tool_calls("{\"name\": \"f\", \"parameters\": {\"x\": \"}\"}}",
                                             tool_call_syntax(TemplateFamily::kLlama3));
  ASSERT_EQ(llama.calls.size(), 1u);
  EXPECT_EQ(llama.calls[0].arguments, "{\"x\": \"}\"}");
  EXPECT_EQ(llama.content, "");

  const ParsedReply mistral = parse_tool_calls(
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"k\": 1}}, {\"name\": "
      "\"b\", \"arguments\": {}}]",
      tool_call_syntax(TemplateFamily::kMistral));
  ASSERT_EQ(mistral.calls.size(), 2u);
  EXPECT_EQ(mistral.calls[1].name, "b");

  // LFM2's JSON form, closed by its end token.
  const ParsedReply lfm2 = parse_tool_calls(
      "<|tool_call_start|>[{\"name\": \"a\", \"arguments\": {\"k\": 1}}, {\"name\": "
      "\"b\", \"arguments\": {}}]<|tool_call_end|>",
      tool_call_syntax(TemplateFamily::kLfm2));
  ASSERT_EQ(lfm2.calls.size(), 2u);
  EXPECT_EQ(lfm2.calls[0].name, "a");
  EXPECT_EQ(lfm2.calls[0].arguments, "{\"k\": 1}");
  EXPECT_EQ(lfm2.content, "");
}

TEST(ToolCalls, TextThatIsNoCallStaysContent) {
  const ToolCallSyntax s = tool_call_syntax(TemplateFamily::kChatml);
  for (const char* text :
       {"plain answer", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1",  // cut short
        "<tool_call>\nnot json\n</tool_call>", "a <tool_ mention"}) {
    const ParsedReply r = parse_tool_calls(text, s);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
  const ParsedReply llama =
      parse_tool_calls("The answer is {1}", tool_call_syntax(TemplateFamily::kLlama3));
  EXPECT_TRUE(llama.calls.empty());
}

// Streaming by every split gives the same content, names and arguments as the whole reply.
TEST(ToolCalls, StreamedDeltasAssembleToTheWholeReply) {
  struct Case {
    TemplateFamily family;
    std::string text;
  };
  const std::vector<Case> cases = {
      {TemplateFamily::kChatml,
       "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\\\"a\"}}\n"
       "</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"n\": [1, {\"m\": 2}]}}\n"
       "</tool_call>"},
      {TemplateFamily::kChatml, "no call here, just <tool text"},
      {TemplateFamily::kLlama3, "{\"name\": \"f\", \"parameters\": {\"a\": 1}}"},
      {TemplateFamily::kMistral,
       "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"k\": 1}}, {\"name\": \"b\", "
       "\"arguments\": {}}]"},
      {TemplateFamily::kLfm2,
       "<|tool_call_start|>[{\"name\": \"a\", \"arguments\": {\"k\": 1}}]<|tool_call_end|>"},
  };
  for (const Case& c : cases) {
    const ToolCallSyntax syntax = tool_call_syntax(c.family);
    const ParsedReply whole = parse_tool_calls(c.text, syntax);
    for (const size_t piece : {size_t{1}, size_t{3}, size_t{7}}) {
      ToolCallStream stream(syntax);
      std::string content;
      std::vector<ParsedToolCall> calls;
      auto take = [&](const ToolCallStream::Delta& d) {
        content += d.content;
        for (const auto& call : d.calls) {
          if (call.first) {
            ASSERT_EQ(call.index, calls.size());
            calls.push_back({call.name, ""});
          }
          ASSERT_LT(call.index, calls.size());
          calls[call.index].arguments += call.arguments;
        }
      };
      for (size_t i = 0; i < c.text.size(); i += piece) take(stream.push(c.text.substr(i, piece)));
      take(stream.finish());
      EXPECT_EQ(content, whole.content) << c.text << " by " << piece;
      ASSERT_EQ(calls.size(), whole.calls.size()) << c.text << " by " << piece;
      for (size_t k = 0; k < calls.size(); ++k) {
        EXPECT_EQ(calls[k].name, whole.calls[k].name);
        EXPECT_EQ(calls[k].arguments, whole.calls[k].arguments) << c.text << " by " << piece;
      }
    }
  }
}

}  // namespace
}  // namespace synapse::chat
