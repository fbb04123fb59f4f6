// SPDX-License-Identifier: Apache-2.0
// run_embeddings_request on hostile bodies (issue 22), without HTTP and without a model: every
// case here is refused while parsing, before the service is touched (its pointer stays null).
#include "server/embedding_routes.h"

#include <gtest/gtest.h>

#include <string>

namespace synapse::server {
namespace {

Status run(std::string_view body) {
  Inference inference;
  inference.model_id = "served-model";
  Result<std::string> r =
      run_embeddings_request(inference, body, serve::RequestClass::kInteractive);
  EXPECT_FALSE(r.ok());
  return r.ok() ? ok_status() : r.status();
}

TEST(EmbeddingRoutes, DeeplyNestedBodyIsInvalidJsonNotACrash) {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  const Status s = run("{\"a\":" + deep + ",\"b\":" + deep + "}");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson) << s.to_string();
  EXPECT_EQ(error_code_info(s.code()).http_status, 400);
  EXPECT_EQ(run(R"({"input": )" + deep + "}").code(), ErrorCode::kInvalidJson);
}

TEST(EmbeddingRoutes, DuplicateKeysAndOverflowingNumbersAreInvalidJson) {
  Status s = run(R"({"input": "a", "input": [1, 2]})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(s.where().field, "input");
  s = run(R"({"input": [1, 99999999999999999999999]})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(s.where().field, "input[1]");
  EXPECT_EQ(run("[]").code(), ErrorCode::kInvalidJson);
}

TEST(EmbeddingRoutes, AHugeModelNameIsNotEchoedWhole) {
  const std::string name(1 << 20, 'n');
  const Status s = run(R"({"model": ")" + name + R"(", "input": "x"})");
  EXPECT_EQ(s.code(), ErrorCode::kModelNotFound);
  EXPECT_LT(s.message().size(), 512u);
  EXPECT_NE(s.message().find("served-model"), std::string::npos);
}

}  // namespace
}  // namespace synapse::server
