// SPDX-License-Identifier: Apache-2.0
// Request parsing: accepted shapes, and errors that name the field, the stable code and the
// HTTP status in OpenAI's body shape.
#include "api/requests.h"

#include <gtest/gtest.h>

#include "api/api_error.h"

namespace synapse::api {
namespace {

template <typename T>
void expect_error(const Result<T>& r, ErrorCode code, const std::string& param) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_EQ(r.status().where().field, param) << r.status().to_string();
}

TEST(ChatRequest, FullRequestParses) {
  auto r = parse_chat_completion_request(R"({
    "model": "m", "messages": [
      {"role": "developer", "content": "sys"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "42"}],
    "max_tokens": 5, "max_completion_tokens": 7, "temperature": 0, "top_p": 0.9, "top_k": 40,
    "min_p": 0.05, "repeat_penalty": 1.1, "frequency_penalty": 0.5, "presence_penalty": -0.5,
    "seed": 42, "stop": ["\n", "END"], "n": 1, "stream": true,
    "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 3,
    "logit_bias": {"15": -100, "7": 2.5}, "user": "u", "response_format": {"type": "text"},
    "tools": [{"type": "function", "function": {"name": "f"}}], "unknown_field": 1})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->model, "m");
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(*r->messages[1].content, "ab");
  EXPECT_FALSE(r->messages[2].content.has_value());
  EXPECT_EQ(r->messages[2].tool_calls[0].arguments, "{\"x\": 1}");
  EXPECT_EQ(r->messages[3].tool_call_id, "c1");
  EXPECT_EQ(*r->sampling.max_tokens, 7);
  EXPECT_EQ(r->sampling.temperature, 0.0);
  EXPECT_EQ(r->sampling.top_k, 40);
  EXPECT_EQ(*r->sampling.seed, 42);
  EXPECT_EQ(r->sampling.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(r->sampling.logit_bias.size(), 2u);
  EXPECT_TRUE(r->stream.stream);
  EXPECT_TRUE(r->stream.include_usage);
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 3);
  EXPECT_TRUE(r->tools.is_array());
}

TEST(ChatRequest, ErrorsNameTheField) {
  expect_error(parse_chat_completion_request("{"), ErrorCode::kInvalidJson, "");
  expect_error(parse_chat_completion_request("[]"), ErrorCode::kInvalidJson, "");
  expect_error(parse_chat_completion_request(R"({"model": "m"})"), ErrorCode::kMissingParameter,
               "messages");
  expect_error(parse_chat_completion_request(R"({"messages": []})"), ErrorCode::kInvalidValue,
               "messages");
  expect_error(parse_chat_completion_request(
                   R"({"messages": [{"role": "user", "content": "a"}, {"role": "user"},
                                    {"role": "user", "content": 5}]})"),
               ErrorCode::kMissingParameter, "messages[1].content");
  expect_error(
      parse_chat_completion_request(
          R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                                    {"role": "user", "content": 5}]})"),
      ErrorCode::kInvalidType, "messages[2].content");
  expect_error(
      parse_chat_completion_request(R"({"messages": [{"role": "robot", "content": "a"}]})"),
      ErrorCode::kInvalidValue, "messages[0].role");
  expect_error(parse_chat_completion_request(
                   R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
               ErrorCode::kUnsupportedParameter, "messages[0].content[0].type");
  const std::string ok_messages = R"("messages": [{"role": "user", "content": "hi"}])";
  auto with = [&](const std::string& extra) {
    return parse_chat_completion_request("{" + ok_messages + ", " + extra + "}");
  };
  expect_error(with(R"("max_tokens": -1)"), ErrorCode::kInvalidValue, "max_tokens");
  expect_error(with(R"("max_tokens": "5")"), ErrorCode::kInvalidType, "max_tokens");
  expect_error(with(R"("temperature": 3)"), ErrorCode::kInvalidValue, "temperature");
  expect_error(with(R"("n": 2)"), ErrorCode::kUnsupportedParameter, "n");
  expect_error(with(R"("stop": [1])"), ErrorCode::kInvalidType, "stop[0]");
  expect_error(with(R"("stream_options": {"include_usage": true})"), ErrorCode::kInvalidValue,
               "stream_options");
  expect_error(with(R"("top_logprobs": 2)"), ErrorCode::kInvalidValue, "top_logprobs");
  expect_error(with(R"("logprobs": true, "top_logprobs": 50)"), ErrorCode::kInvalidValue,
               "top_logprobs");
  expect_error(with(R"("logit_bias": {"x": 1})"), ErrorCode::kInvalidValue, "logit_bias.x");
  expect_error(with(R"("response_format": {"type": "xml"})"), ErrorCode::kInvalidValue,
               "response_format.type");
  expect_error(with(R"("response_format": {"type": "json_schema"})"), ErrorCode::kMissingParameter,
               "response_format.json_schema");
  expect_error(with(R"("response_format": {"type": "json_schema", "json_schema": {"schema": 5}})"),
               ErrorCode::kInvalidType, "response_format.json_schema.schema");
  expect_error(with(R"("json_schema": {}, "grammar": "root ::= \"a\"")"), ErrorCode::kInvalidValue,
               "grammar");
  expect_error(with(R"("tool_choice": "required")"), ErrorCode::kInvalidValue, "tool_choice");
  expect_error(with(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                       "tool_choice": {"type": "function", "function": {"name": "g"}})"),
               ErrorCode::kInvalidValue, "tool_choice.function.name");
  expect_error(with(R"("tools": [{"type": "function", "function": {}}])"),
               ErrorCode::kMissingParameter, "tools[0].function.name");
  expect_error(with(R"("seed": 1.5)"), ErrorCode::kInvalidType, "seed");
  expect_error(with(R"("model": "\ud800")"), ErrorCode::kInvalidJson, "");
}

TEST(ChatRequest, OutputFormatsAndToolChoice) {
  auto r = parse_chat_completion_request(R"({"messages": [{"role": "user", "content": "a"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
      "schema": {"type": "object", "properties": {"b": {}, "a": {}}}}}})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->format.kind, OutputFormat::Kind::kJsonSchema);
  EXPECT_EQ(r->format.name, "p");
  EXPECT_TRUE(r->format.strict);
  EXPECT_EQ(r->format.schema.at("properties").begin().key(), "b");  // key order kept
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kNone);          // no tools

  r = parse_chat_completion_request(R"({"messages": [{"role": "user", "content": "a"}],
      "response_format": {"type": "json_object"}, "tools": [{"type": "function", "function":
      {"name": "f", "parameters": {"type": "object"}}}], "tool_choice": {"type": "function",
      "function": {"name": "f"}}, "parallel_tool_calls": false})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->format.kind, OutputFormat::Kind::kJsonObject);
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(r->tool_choice.function, "f");
  EXPECT_FALSE(r->parallel_tool_calls);

  const auto c = parse_completion_request(R"({"prompt": "a", "grammar": "root ::= \"x\""})");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->format.kind, OutputFormat::Kind::kGrammar);
  EXPECT_EQ(c->format.field, "grammar");
}

TEST(ChatRequest, Bounds) {
  RequestLimits limits;
  limits.max_body_bytes = 100;
  auto big = parse_chat_completion_request(std::string(101, ' '), limits);
  expect_error(big, ErrorCode::kRequestTooLarge, "");
  EXPECT_EQ(api_error_from_status(big.status()).http_status, 413);
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_error(parse_chat_completion_request(deep), ErrorCode::kInvalidJson, "");
  RequestLimits few;
  few.max_messages = 2;
  expect_error(
      parse_chat_completion_request(
          R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                                    {"role": "user", "content": "c"}]})",
          few),
      ErrorCode::kInvalidValue, "messages");
}

// Issue 22: hostile bodies get 400 invalid_json from every parser, never a crash or a wrapped
// number.
std::string nested_members() {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  return "{\"a\":" + deep + ",\"b\":" + deep + "}";
}

TEST(HostileBody, DeepNestingIsInvalidJsonForEveryParser) {
  const std::string body = nested_members();
  expect_error(parse_completion_request(body), ErrorCode::kInvalidJson, "a");
  expect_error(parse_chat_completion_request(body), ErrorCode::kInvalidJson, "a");
  expect_error(parse_tokenize_request(body), ErrorCode::kInvalidJson, "a");
  expect_error(parse_detokenize_request(body), ErrorCode::kInvalidJson, "a");
  EXPECT_EQ(api_error_from_status(parse_completion_request(body).status()).http_status, 400);
}

TEST(HostileBody, DuplicateKeysAreRefused) {
  expect_error(parse_completion_request(R"({"prompt": "a", "prompt": [1, 2]})"),
               ErrorCode::kInvalidJson, "prompt");
  expect_error(parse_detokenize_request(R"({"tokens": [1], "x": {"k": 1, "k": 2}})"),
               ErrorCode::kInvalidJson, "x.k");
}

TEST(HostileBody, OverflowingNumbersAreQuotedAsGiven) {
  const auto r = parse_completion_request(R"({"prompt": "a", "max_tokens": 9223372036854775808})");
  expect_error(r, ErrorCode::kInvalidValue, "max_tokens");
  EXPECT_NE(r.status().message().find("got 9223372036854775808"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('-'), std::string::npos) << r.status().message();
  const auto seed = parse_completion_request(R"({"prompt": "a", "seed": 18446744073709551615})");
  expect_error(seed, ErrorCode::kInvalidValue, "seed");
  EXPECT_NE(seed.status().message().find("18446744073709551615"), std::string::npos);
  expect_error(parse_completion_request(R"({"prompt": "a", "max_tokens": 1e999})"),
               ErrorCode::kInvalidJson, "max_tokens");
  expect_error(parse_completion_request(R"({"prompt": "a", "seed": -99999999999999999999})"),
               ErrorCode::kInvalidJson, "seed");
  expect_error(parse_detokenize_request(R"({"tokens": [1, 18446744073709551615]})"),
               ErrorCode::kInvalidValue, "tokens[1]");
}

TEST(HostileBody, EchoedValuesAreClipped) {
  const std::string huge(1 << 20, 'x');
  const auto r = parse_chat_completion_request(
      R"({"messages": [{"role": "user", "content": "a"}], "response_format": {"type": ")" + huge +
      R"("}})");
  expect_error(r, ErrorCode::kInvalidValue, "response_format.type");
  EXPECT_LT(r.status().message().size(), 512u);
  const auto bias =
      parse_completion_request(R"({"prompt": "a", "logit_bias": {")" + huge + R"(": 1}})");
  ASSERT_FALSE(bias.ok());
  EXPECT_EQ(bias.status().code(), ErrorCode::kInvalidValue);
  EXPECT_LT(bias.status().where().field.size(), 512u);
  EXPECT_LT(bias.status().message().size(), 512u);
}

TEST(CompletionRequest, PromptShapes) {
  auto text =
      parse_completion_request(R"({"model": "m", "prompt": "hi", "logprobs": 2, "echo": true})");
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(*text->prompt_text, "hi");
  EXPECT_EQ(*text->logprobs, 2);
  EXPECT_TRUE(text->echo);
  auto one = parse_completion_request(R"({"prompt": ["only"]})");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one->prompt_text, "only");
  auto ids = parse_completion_request(R"({"prompt": [1, 2, 3]})");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  auto nested = parse_completion_request(R"({"prompt": [[4, 5]]})");
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(nested->prompt_tokens, (std::vector<int32_t>{4, 5}));
  auto zero = parse_completion_request(R"({"prompt": "x", "max_tokens": 0})");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero->sampling.max_tokens, 0);
  expect_error(parse_completion_request(R"({"model": "m"})"), ErrorCode::kMissingParameter,
               "prompt");
  expect_error(parse_completion_request(R"({"prompt": ["a", "b"]})"),
               ErrorCode::kUnsupportedParameter, "prompt");
  expect_error(parse_completion_request(R"({"prompt": [1, "a"]})"), ErrorCode::kInvalidType,
               "prompt[1]");
  expect_error(parse_completion_request(R"({"prompt": [-1]})"), ErrorCode::kInvalidValue,
               "prompt[0]");
  expect_error(parse_completion_request(R"({"prompt": 5})"), ErrorCode::kInvalidType, "prompt");
  expect_error(parse_completion_request(R"({"prompt": "x", "logprobs": true})"),
               ErrorCode::kInvalidType, "logprobs");
  expect_error(parse_completion_request(R"({"prompt": "x", "max_tokens": -3})"),
               ErrorCode::kInvalidValue, "max_tokens");
}

TEST(TokenizeRequest, Shapes) {
  auto t =
      parse_tokenize_request(R"({"content": "hello", "add_special": true, "with_pieces": true})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->content, "hello");
  EXPECT_TRUE(t->add_special);
  EXPECT_TRUE(t->with_pieces);
  expect_error(parse_tokenize_request("{}"), ErrorCode::kMissingParameter, "content");
  auto d = parse_detokenize_request(R"({"tokens": [1, 2]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tokens.size(), 2u);
  expect_error(parse_detokenize_request(R"({"tokens": "x"})"), ErrorCode::kInvalidType, "tokens");
}

TEST(ApiError, OpenAiShape) {
  auto r = parse_chat_completion_request(R"({"messages": [{"role": "user", "content": 1}]})");
  ASSERT_FALSE(r.ok());
  const ApiError e = api_error_from_status(r.status());
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(
      error_body(e),
      R"({"error":{"message":"'messages[0].content' must be a string or an array of content parts, got an integer","type":"invalid_request_error","param":"messages[0].content","code":"invalid_type","retryable":false}})");
  const ApiError key = api_error_from_status(Status(ErrorCode::kInvalidApiKey, "no key"));
  EXPECT_EQ(key.http_status, 401);
  EXPECT_EQ(key.type, "authentication_error");
  EXPECT_EQ(
      error_body(key),
      R"({"error":{"message":"no key","type":"authentication_error","param":null,"code":"invalid_api_key","retryable":false}})");
}

TEST(CompletionRequest, PriorityNamesAClass) {
  auto r = parse_completion_request(R"({"prompt": "a", "priority": "background"})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->priority, "background");
  auto none = parse_chat_completion_request(R"({"messages": [{"role": "user", "content": "a"}]})");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->priority, "");
  expect_error(parse_completion_request(R"({"prompt": "a", "priority": "urgent"})"),
               ErrorCode::kInvalidValue, "priority");
  expect_error(parse_completion_request(R"({"prompt": "a", "priority": 3})"),
               ErrorCode::kInvalidType, "priority");
}

TEST(CompletionRequest, SpeculativeOptsOutOfDrafts) {
  auto off = parse_chat_completion_request(
      R"({"messages": [{"role": "user", "content": "a"}], "speculative": false})");
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_FALSE(off->sampling.speculative);
  auto on = parse_completion_request(R"({"prompt": "a"})");
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->sampling.speculative);
  expect_error(parse_completion_request(R"({"prompt": "a", "speculative": "no"})"),
               ErrorCode::kInvalidType, "speculative");
}

}  // namespace
}  // namespace synapse::api
