// SPDX-License-Identifier: Apache-2.0
// Response serialization: the exact JSON of each object and chunk.
#include "api/responses.h"

#include <gtest/gtest.h>

namespace synapse::api {
namespace {

const ResponseMeta kMeta{"chatcmpl-1", 1700000000, "tiny"};

TEST(Responses, ChatCompletion) {
  ChatCompletionResult r;
  r.content = "Hello";
  r.finish_reason = FinishReason::kLength;
  r.usage = {3, 2};
  EXPECT_EQ(
      chat_completion_response(kMeta, r),
      R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"tiny",)"
      R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"logprobs":null,)"
      R"("finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})");
  r.logprobs = std::vector<TokenLogprob>{{"Hi", -0.5, {{"Hi", -0.5}, {"Yo", -1.0}}}};
  const std::string with = chat_completion_response(kMeta, r);
  EXPECT_NE(with.find(R"("logprobs":{"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],)"
                      R"("top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]},)"
                      R"({"token":"Yo","logprob":-1.0,"bytes":[89,111]}]}]})"),
            std::string::npos)
      << with;
}

TEST(Responses, CompletionWithLogprobs) {
  CompletionResult r;
  r.text = "ab";
  r.logprobs = std::vector<TokenLogprob>{{"a", -0.25, {{"a", -0.25}}}, {"b", -1.5, {}}};
  r.usage = {1, 2};
  EXPECT_EQ(
      completion_response({"cmpl-1", 5, "m"}, r),
      R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[{"index":0,)"
      R"("text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[-0.25,-1.5],)"
      R"("top_logprobs":[{"a":-0.25},{}],"text_offset":[0,1]},"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})");
}

TEST(Responses, StreamingChunks) {
  EXPECT_EQ(
      chat_chunk(kMeta, {true, ""}, std::nullopt),
      "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
      "\"model\":\"tiny\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":"
      "\"\"},"
      "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
  EXPECT_EQ(
      chat_chunk(kMeta, {}, FinishReason::kStop),
      "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
      "\"model\":\"tiny\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
      "\"finish_reason\":\"stop\"}]}\n\n");
  EXPECT_EQ(
      usage_chunk(kMeta, true, {4, 6}),
      "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
      "\"model\":\"tiny\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":6,"
      "\"total_tokens\":10}}\n\n");
  EXPECT_EQ(
      completion_chunk({"cmpl-2", 1, "m"}, "x", std::nullopt),
      "data: {\"id\":\"cmpl-2\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\","
      "\"choices\":[{\"index\":0,\"text\":\"x\",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

TEST(Responses, InvalidUtf8IsReplacedNotThrown) {
  const std::string chunk = chat_chunk(kMeta, {false, std::string("a\xE2\x82")}, std::nullopt);
  EXPECT_NE(chunk.find("a\xEF\xBF\xBD"), std::string::npos) << chunk;
}

TEST(Responses, ModelsAndTokenize) {
  EXPECT_EQ(
      models_response({{"tiny", 7, "synapse"}}),
      R"({"object":"list","data":[{"id":"tiny","object":"model","created":7,"owned_by":"synapse"}]})");
  EXPECT_EQ(tokenize_response({{1, "a"}, {2, "b"}}, false), R"({"tokens":[1,2]})");
  EXPECT_EQ(tokenize_response({{1, "a"}, {2, std::string("\xE2")}}, true),
            R"({"tokens":[{"id":1,"piece":"a"},{"id":2,"piece":[226]}]})");
  EXPECT_EQ(detokenize_response("hi"), R"({"content":"hi"})");
}

}  // namespace
}  // namespace synapse::api
