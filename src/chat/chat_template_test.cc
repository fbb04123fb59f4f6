// SPDX-License-Identifier: Apache-2.0
// The chat-template API: messages as templates see them, built-ins, detection, validation.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

namespace synapse::chat {
namespace {

ChatRenderInput sample() {
  ChatRenderInput input;
  input.messages = {{"system", "Be brief.", {}, "", ""}, {"user", "Hi", {}, "", ""}};
  input.bos_token = "<s>";
  input.eos_token = "</s>";
  return input;
}

TEST(ChatTemplate, RendersChatml) {
  auto t = ChatTemplate::compile(std::string(*builtin_template("chatml")));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->family(), TemplateFamily::kChatml);
  auto out = t->render(sample());
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, EveryBuiltinCompilesValidatesAndIsRecognized) {
  for (std::string_view name : builtin_template_names()) {
    auto t = select_chat_template("", name, "<s>", "</s>");
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().to_string();
    EXPECT_NE(t->family(), TemplateFamily::kUnknown) << name;
  }
  EXPECT_EQ(detect_family(*builtin_template("llama3.1")), TemplateFamily::kLlama3);
  EXPECT_EQ(detect_family(*builtin_template("llama2")), TemplateFamily::kLlama2);
  EXPECT_EQ(detect_family(*builtin_template("mixtral")), TemplateFamily::kMistral);
  EXPECT_EQ(detect_family(*builtin_template("gemma")), TemplateFamily::kGemma);
  EXPECT_EQ(detect_family(*builtin_template("phi3")), TemplateFamily::kPhi3);
  EXPECT_EQ(detect_family(*builtin_template("lfm2")), TemplateFamily::kLfm2);
  EXPECT_EQ(detect_family(*builtin_template("chatml")), TemplateFamily::kChatml);
  EXPECT_EQ(detect_family("{{ messages }}"), TemplateFamily::kUnknown);
}

TEST(ChatTemplate, SelectionErrorsAreClear) {
  EXPECT_EQ(select_chat_template("", "", "", "").status().code(), ErrorCode::kNoChatTemplate);
  EXPECT_EQ(select_chat_template("", "nosuch", "", "").status().code(),
            ErrorCode::kInvalidArgument);
  auto broken = select_chat_template("{% for m in messages %}", "", "", "");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), ErrorCode::kTemplateSyntax);
  auto failing = select_chat_template("{{ messages[0].content.nosuch() }}", "", "", "");
  ASSERT_FALSE(failing.ok());
  EXPECT_EQ(failing.status().code(), ErrorCode::kTemplateError);
  // A built-in name wins over the model's template; text given in its place is compiled.
  auto inline_text = select_chat_template("ignored {{", "{{ messages[-1].content }}", "", "");
  ASSERT_TRUE(inline_text.ok()) << inline_text.status().to_string();
}

TEST(ChatTemplate, ToolCallsAsTemplatesSeeThem) {
  ChatMessage m{"assistant", std::nullopt, {{"c1", "get", R"({"city": "Paris"})"}}, "", ""};
  const Value v = message_value(m);
  ASSERT_TRUE(v.is_dict());
  EXPECT_TRUE(v.as_dict().find("content")->is_none());
  const Value& call = v.as_dict().find("tool_calls")->as_list().items[0];
  const Value& args =
      call.as_dict().find("function")->as_dict().find("arguments")->as_dict().items[0].second;
  EXPECT_EQ(args.as_string(), "Paris");
  ChatMessage plain{"user", "x", {}, "", ""};
  EXPECT_EQ(message_value(plain).as_dict().find("tool_calls"), nullptr);
}

// Issue 22: tool-call arguments are the client's JSON text; nested 100000 levels deep they must
// stay a string, not recurse through value_from_json until the stack runs out.
TEST(ChatTemplate, DeeplyNestedToolArgumentsStayText) {
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  ChatMessage m{"assistant", std::nullopt, {{"c1", "get", deep}}, "", ""};
  const Value v = message_value(m);
  const Value& call = v.as_dict().find("tool_calls")->as_list().items[0];
  const Value* args = call.as_dict().find("function")->as_dict().find("arguments");
  ASSERT_NE(args, nullptr);
  EXPECT_TRUE(args->is_string());
}

TEST(ChatTemplate, RaiseExceptionIsItsOwnCode) {
  auto t = ChatTemplate::compile(std::string(*builtin_template("gemma")));
  ASSERT_TRUE(t.ok());
  auto out = t->render(sample());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kTemplateRaised);
  EXPECT_EQ(out.status().message(), "System role not supported");
}

}  // namespace
}  // namespace synapse::chat
