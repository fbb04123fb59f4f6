// SPDX-License-Identifier: Apache-2.0
// The embedding and rerank wire formats on hostile bodies (issue 22), and the request layer's
// refusals that come before any service is touched: every case here is refused while parsing or
// while finding the model (no model is loaded).
#include "api/embeddings.h"

#include <gtest/gtest.h>

#include <string>

#include "request/embeddings.h"

namespace synapse::request {
namespace {

Status parse(std::string_view body) {
  Result<api::EmbeddingsRequest> r = api::parse_embeddings_request(body);
  return r.ok() ? ok_status() : r.status();
}

TEST(EmbeddingRequests, DeeplyNestedBodyIsInvalidJsonNotACrash) {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  const Status s = parse("{\"a\":" + deep + ",\"b\":" + deep + "}");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson) << s.to_string();
  EXPECT_EQ(error_code_info(s.code()).http_status, 400);
  EXPECT_EQ(parse(R"({"input": )" + deep + "}").code(), ErrorCode::kInvalidJson);
  Result<api::RerankRequest> rerank =
      api::parse_rerank_request(R"({"query": "q", "documents": )" + deep + "}");
  ASSERT_FALSE(rerank.ok());
  EXPECT_EQ(rerank.status().code(), ErrorCode::kInvalidJson);
}

TEST(EmbeddingRequests, DuplicateKeysAndOverflowingNumbersAreInvalidJson) {
  Status s = parse(R"({"input": "a", "input": [1, 2]})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(s.where().field, "input");
  s = parse(R"({"input": [1, 99999999999999999999999]})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(s.where().field, "input[1]");
  EXPECT_EQ(parse("[]").code(), ErrorCode::kInvalidJson);
}

TEST(EmbeddingRequests, EveryInputShapeAndFieldIsChecked) {
  Result<api::EmbeddingsRequest> r =
      api::parse_embeddings_request(R"({"input": [[1, 2], [3]], "encoding_format": "base64",
                                        "pooling": "mean", "normalize": false,
                                        "priority": "batch", "dimensions": 8})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->tokens.size(), 2u);
  EXPECT_TRUE(r->base64);
  EXPECT_EQ(r->pooling, "mean");
  EXPECT_FALSE(r->normalize);
  EXPECT_EQ(r->priority, "batch");
  EXPECT_EQ(r->dimensions, 8);
  EXPECT_EQ(parse(R"({"input": ["a", ""]})").where().field, "input[1]");
  EXPECT_EQ(parse(R"({"input": [[1], "a"]})").where().field, "input[1]");
  EXPECT_EQ(parse(R"({"input": [-1]})").where().field, "input[0]");
  EXPECT_EQ(parse(R"({"input": "a", "pooling": "rank"})").code(), ErrorCode::kInvalidValue);
  EXPECT_EQ(parse(R"({"input": "a", "priority": "urgent"})").where().field, "priority");
  EXPECT_EQ(parse(R"({})").code(), ErrorCode::kMissingParameter);
}

TEST(EmbeddingRequests, RerankBodiesAreChecked) {
  Result<api::RerankRequest> r =
      api::parse_rerank_request(R"({"query": "q", "documents": ["a", {"text": "b"}], "top_n": 5})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->documents, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r->top_n, 2u);  // more than the documents keeps them all
  EXPECT_EQ(api::parse_rerank_request(R"({"query": "q", "documents": []})").status().code(),
            ErrorCode::kInvalidValue);
  EXPECT_EQ(api::parse_rerank_request(R"({"documents": ["a"]})").status().where().field, "query");
  EXPECT_EQ(api::parse_rerank_request(R"({"query": "q", "documents": ["a"], "top_n": 0})")
                .status()
                .code(),
            ErrorCode::kInvalidValue);
}

TEST(EmbeddingRequests, AHugeModelNameIsNotEchoedWhole) {
  ServedModel served;
  served.id = "served-model";
  ModelDirectory models;
  models.add(unowned(served));
  Result<api::EmbeddingsRequest> body = api::parse_embeddings_request(
      R"({"model": ")" + std::string(1 << 20, 'n') + R"(", "input": "x"})");
  ASSERT_TRUE(body.ok());
  const Result<std::string> r = run_embeddings(models, *body, serve::RequestClass::kInteractive);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kModelNotFound);
  EXPECT_EQ(r.status().where().field, "model");
  EXPECT_LT(r.status().message().size(), 512u);
  EXPECT_NE(r.status().message().find("served-model"), std::string::npos);
}

TEST(EmbeddingRequests, Base64IsLittleEndianFloat32) {
  const float values[2] = {1.0f, -2.0f};
  // 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0.
  EXPECT_EQ(api::base64_floats(values, 2), "AACAPwAAAMA=");
}

}  // namespace
}  // namespace synapse::request
