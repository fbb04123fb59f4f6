// SPDX-License-Identifier: Apache-2.0
// Chat templates rendered by src/chat, compared byte for byte with Jinja2's renders
// (tests/golden/chat/expected.json, written by scripts/gen_chat_goldens.py). Adding a case is a
// line in cases.json (a template) or conversations.json (a conversation), then regenerating.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "format/model_file.h"
#include "tests/support/test_support.h"

namespace synapse::chat {
namespace {

using Json = nlohmann::ordered_json;

// The generator's fixed clock: 2024-07-26 12:00:00 UTC.
constexpr std::time_t kGoldenNow = 1721995200;

std::string golden_dir() { return std::string(SYNAPSE_SOURCE_DIR) + "/tests/golden/chat/"; }

Json read_json(const std::string& name) {
  std::ifstream in(golden_dir() + name);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

ChatMessage to_message(const Json& m) {
  ChatMessage out;
  out.role = m.at("role").get<std::string>();
  if (m.contains("content") && !m["content"].is_null())
    out.content = m["content"].get<std::string>();
  if (m.contains("tool_calls")) {
    for (const Json& c : m["tool_calls"]) {
      out.tool_calls.push_back({c.value("id", ""), c["function"]["name"].get<std::string>(),
                                c["function"]["arguments"].get<std::string>()});
    }
  }
  out.tool_call_id = m.value("tool_call_id", "");
  out.name = m.value("name", "");
  return out;
}

// The template's text; nullopt (the test skipped) when its fixture is missing.
std::optional<std::string> template_source(const std::string& source) {
  const size_t colon = source.find(':');
  const std::string kind = source.substr(0, colon);
  const std::string ref = source.substr(colon + 1);
  if (kind == "builtin") {
    const auto text = builtin_template(ref);
    EXPECT_TRUE(text.has_value()) << ref;
    return text ? std::optional<std::string>(std::string(*text)) : std::nullopt;
  }
  if (kind == "file") return synapse::testing::read_file_text(golden_dir() + ref);
  const auto path = synapse::testing::find_fixture(ref);
  if (!path) return std::nullopt;
  auto file = open_model_file(*path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return std::nullopt;
  auto text = (*file)->metadata().get_string("tokenizer.chat_template");
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  return text.ok() ? std::optional<std::string>(std::string(*text)) : std::nullopt;
}

TEST(ChatGolden, MatchesJinja2ByteForByte) {
  const Json cases = read_json("cases.json");
  const Json conversations = read_json("conversations.json");
  const Json expected = read_json("expected.json");
  int compared = 0;
  int skipped = 0;
  for (const Json& c : cases) {
    const std::string name = c["name"].get<std::string>();
    const auto source = template_source(c["source"].get<std::string>());
    if (!source) {
      if (synapse::testing::running_in_ci()) ADD_FAILURE() << name << ": fixture missing";
      ++skipped;
      continue;
    }
    auto compiled = ChatTemplate::compile(*source);
    ASSERT_TRUE(compiled.ok()) << name << ": " << compiled.status().to_string();
    // Every real template passes the start-up check the server will run.
    const Status valid =
        validate_template(*compiled, c.value("bos_token", "<s>"), c.value("eos_token", "</s>"));
    EXPECT_TRUE(valid.ok()) << name << ": " << valid.to_string();
    for (const Json& conv : conversations) {
      const std::string conv_name = conv["name"].get<std::string>();
      SCOPED_TRACE(name + " / " + conv_name);
      ChatRenderInput input;
      for (const Json& m : conv["messages"]) input.messages.push_back(to_message(m));
      input.tools = conv.contains("tools") ? conv["tools"] : Json();
      input.add_generation_prompt = conv["add_generation_prompt"].get<bool>();
      input.bos_token = c.value("bos_token", "<s>");
      input.eos_token = c.value("eos_token", "</s>");
      if (conv.contains("extra")) input.extra = conv["extra"];
      const Json& want = expected.at(name).at(conv_name);
      auto got = compiled->render(input, {}, kGoldenNow);
      if (want.contains("output")) {
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        EXPECT_EQ(*got, want["output"].get<std::string>());
      } else if (want.contains("raised")) {
        ASSERT_FALSE(got.ok()) << "rendered instead of raising: " << *got;
        EXPECT_EQ(got.status().code(), ErrorCode::kTemplateRaised) << got.status().to_string();
        EXPECT_EQ(got.status().message(), want["raised"].get<std::string>());
      } else {
        ASSERT_FALSE(got.ok()) << "rendered where Jinja failed (" << want["error"] << "): " << *got;
        EXPECT_EQ(got.status().code(), ErrorCode::kTemplateError) << got.status().to_string();
      }
      ++compared;
    }
  }
  std::cout << "chat goldens: " << compared << " renders compared, " << skipped
            << " templates skipped (fixtures missing)\n";
  EXPECT_GT(compared, 0);
}

// The built-in templates compiled into the library are the files the generator reads.
TEST(ChatGolden, BuiltinsMatchTheirFiles) {
  for (std::string_view name : builtin_template_names()) {
    const std::string file =
        std::string(SYNAPSE_SOURCE_DIR) + "/src/chat/templates/" + std::string(name) + ".jinja";
    EXPECT_EQ(*builtin_template(name), synapse::testing::read_file_text(file)) << name;
  }
}

}  // namespace
}  // namespace synapse::chat
