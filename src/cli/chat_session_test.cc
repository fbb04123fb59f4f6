// SPDX-License-Identifier: Apache-2.0
// ChatSession over a fake backend (the chat body each turn sends, the history kept only for
// completed answers, the slash commands) and multi-line input read from a pipe.
#include "cli/chat_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "cli/chat_input.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::json;

// Answers "reply N" in two pieces; fails or stops when told to.
class FakeBackend : public ChatBackend {
 public:
  std::string where() const override { return "fake"; }
  Result<ModelFacts> describe(const std::string& model) override {
    if (model != "m") return Status(ErrorCode::kModelNotFound, "no " + model);
    return ModelFacts{.name = "m:latest",
                      .kind = "generation",
                      .loaded = true,
                      .context_tokens = 4096,
                      .chat_template = false};
  }
  Result<ChatReply> complete(Json body, const TextSink& on_text,
                             const std::function<bool()>& stop) override {
    bodies.push_back(body);
    if (fail_next) return Status(ErrorCode::kInvalidValue, "bad");
    on_text("reply ");
    if (stop()) return Status(ErrorCode::kCancelled, "stopped");
    const std::string n = std::to_string(bodies.size());
    on_text(n);
    return ChatReply{"reply " + n, "stop", 3, 2};
  }
  std::vector<Json> bodies;
  bool fail_next = false;
};

struct SessionFixture : ::testing::Test {
  FakeBackend backend;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  ChatSession session{"m", backend, out, err};
  ~SessionFixture() override {
    std::fclose(out);
    std::fclose(err);
  }
  static std::string text_of(std::FILE* f) {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
    return s;
  }
};

TEST_F(SessionFixture, HistoryParametersAndSystemGoIntoTheBody) {
  EXPECT_EQ(session.command("/set parameter temperature 0"), ChatSession::Action::kContinue);
  session.command("/set parameter num_predict 5");
  session.command("/set parameter stop END STOP");
  session.command("/set parameter top_k 40");
  session.command("/set system \"be brief\"");
  ASSERT_TRUE(session.ask("one", [] { return false; }).ok());
  ASSERT_TRUE(session.ask("two", [] { return false; }).ok());
  const Json& body = backend.bodies.back();
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["max_tokens"], 5);
  EXPECT_EQ(body["top_k"], 40);
  EXPECT_EQ(body["stop"], Json({"END", "STOP"}));
  const Json expected = Json::parse(R"([{"role": "system", "content": "be brief"},
      {"role": "user", "content": "one"}, {"role": "assistant", "content": "reply 1"},
      {"role": "user", "content": "two"}])");
  EXPECT_EQ(body["messages"], expected);
  EXPECT_EQ(text_of(out).find("reply 1\nreply 2\n") != std::string::npos, true) << text_of(out);
  session.command("/set parameter num_predict -1");
  session.command("/clear");
  ASSERT_TRUE(session.ask("three", [] { return false; }).ok());
  EXPECT_FALSE(backend.bodies.back().contains("max_tokens"));
  EXPECT_EQ(backend.bodies.back()["messages"].size(), 2u);  // system and the new question
}

TEST_F(SessionFixture, StoppedOrFailedTurnsAreNotKept) {
  EXPECT_EQ(session.ask("one", [] { return true; }).code(), ErrorCode::kCancelled);
  backend.fail_next = true;
  EXPECT_EQ(session.ask("two", [] { return false; }).code(), ErrorCode::kInvalidValue);
  backend.fail_next = false;
  ASSERT_TRUE(session.ask("three", [] { return false; }).ok());
  EXPECT_EQ(backend.bodies.back()["messages"].size(), 1u);
  EXPECT_EQ(session.turns(), 1u);
}

TEST_F(SessionFixture, BadCommandsSayWhyAndByeExits) {
  session.command("/set parameter temperature hot");
  session.command("/set parameter nonsense 1");
  session.command("/frobnicate");
  const std::string e = text_of(err);
  EXPECT_NE(e.find("'hot' is not a number"), std::string::npos) << e;
  EXPECT_NE(e.find("nonsense: unknown"), std::string::npos) << e;
  EXPECT_NE(e.find("Unknown command '/frobnicate'"), std::string::npos) << e;
  EXPECT_EQ(session.command("/bye"), ChatSession::Action::kExit);
  EXPECT_EQ(session.command("/set parameter"), ChatSession::Action::kContinue);
}

TEST_F(SessionFixture, ShowInfoParametersAndSystem) {
  session.command("/set parameter temperature 0.5");
  session.command("/set parameter num_predict 7");
  session.command("/set parameter stop END");
  session.command("/set system be brief");
  ASSERT_TRUE(session.ask("one", [] { return false; }).ok());
  std::fseek(out, 0, SEEK_END);
  const long before = std::ftell(out);
  session.command("/show info");
  session.command("/show parameters");
  session.command("/show system");
  const std::string shown = text_of(out).substr(static_cast<size_t>(before));
  for (const char* line :
       {"    name            m:latest\n", "    kind            generation\n",
        "    loaded          yes\n", "    context length  4096\n", "    chat template   no\n",
        "    runs on         fake\n", "    turns           1\n", "    temperature     0.5\n",
        "    num_predict     7\n", "    stop            [\"END\"]\n", "  system\n    be brief\n"}) {
    EXPECT_NE(shown.find(line), std::string::npos) << line << " in:\n" << shown;
  }
  std::fseek(out, 0, SEEK_END);  // reading, then writing: a seek between (C's rule)
  session.command("/show nonsense");
  EXPECT_NE(text_of(err).find("Usage: /show [info|parameters|system]"), std::string::npos);
  session.command("/?");
  EXPECT_NE(text_of(out).find("/show info"), std::string::npos);
}

std::vector<std::string> messages_of(const std::string& input) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  EXPECT_EQ(write(fds[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
  close(fds[1]);
  LineReader reader(fds[0]);
  std::vector<std::string> out;
  std::string message;
  while (read_message(reader, message) == InputEvent::kLine) out.push_back(message);
  close(fds[0]);
  return out;
}

TEST(ChatInput, MultiLineMessages) {
  EXPECT_EQ(messages_of("hi\r\nthere"), (std::vector<std::string>{"hi", "there"}));
  EXPECT_EQ(messages_of("\"\"\"\na\n\nb\n\"\"\"\nnext\n"),
            (std::vector<std::string>{"a\n\nb", "next"}));
  EXPECT_EQ(messages_of("\"\"\"one\ntwo\"\"\"\n"), (std::vector<std::string>{"one\ntwo"}));
  EXPECT_EQ(messages_of("\"\"\"single\"\"\"\n"), (std::vector<std::string>{"single"}));
  EXPECT_EQ(messages_of("first \\\nsecond\n"), (std::vector<std::string>{"first \nsecond"}));
  EXPECT_EQ(messages_of("\"\"\"unterminated\n"), (std::vector<std::string>{}));
}

}  // namespace
}  // namespace synapse::cli
