// SPDX-License-Identifier: Apache-2.0
// The /v1/models/pull body: what it accepts, its refusals by field, the objects it answers.
#include "api/model_pull.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace synapse::api {
namespace {

using Json = nlohmann::json;

TEST(ModelPullRequest, ParsesTheModelTheFileAndStream) {
  Result<ModelPullRequest> r = parse_model_pull_request(R"({"model": "hf.co/org/m-GGUF:Q8_0"})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->model, "hf.co/org/m-GGUF:Q8_0");
  EXPECT_TRUE(r->file.empty());
  EXPECT_TRUE(r->stream) << "streams unless told not to";
  r = parse_model_pull_request(
      R"({"model": "org/m-GGUF", "file": "m-Q4_K_M.gguf", "stream": false, "other": 1})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->file, "m-Q4_K_M.gguf");
  EXPECT_FALSE(r->stream);
}

TEST(ModelPullRequest, RefusesByField) {
  const struct {
    const char* body;
    ErrorCode code;
    const char* field;
  } cases[] = {
      {R"({})", ErrorCode::kMissingParameter, "model"},
      {R"({"model": null})", ErrorCode::kMissingParameter, "model"},
      {R"({"model": 7})", ErrorCode::kInvalidType, "model"},
      {R"({"model": ""})", ErrorCode::kInvalidValue, "model"},
      {R"({"model": "m", "file": ["a"]})", ErrorCode::kInvalidType, "file"},
      {R"({"model": "m", "stream": "yes"})", ErrorCode::kInvalidType, "stream"},
      {R"({"model": "m", "model": "n"})", ErrorCode::kInvalidJson, ""},
      {R"(["model"])", ErrorCode::kInvalidJson, ""},
      {R"({"model": )", ErrorCode::kInvalidJson, ""},
  };
  for (const auto& c : cases) {
    const Result<ModelPullRequest> r = parse_model_pull_request(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), c.code) << c.body << ": " << r.status().to_string();
    if (*c.field != '\0') {
      EXPECT_EQ(r.status().where().field, c.field) << c.body;
    }
  }
  RequestLimits small;
  small.max_body_bytes = 8;
  EXPECT_EQ(parse_model_pull_request(R"({"model": "hf.co/org/m"})", small).status().code(),
            ErrorCode::kRequestTooLarge);
}

TEST(ModelPullResponse, ProgressAndDoneObjects) {
  Json j = Json::parse(model_pull_progress({"manifest", "", "", 0, 0}));
  EXPECT_EQ(j, Json::parse(R"({"object":"model.pull.progress","status":"manifest"})"));
  j = Json::parse(model_pull_progress({"downloading", "m.gguf", "sha256:ab", 10, 4}));
  EXPECT_EQ(j, Json::parse(R"({"object":"model.pull.progress","status":"downloading",
      "file":"m.gguf","digest":"sha256:ab","total":10,"completed":4})"));
  j = Json::parse(model_pull_done({"hf.co/org/m:Q8_0", "cd", 10, "download"}));
  EXPECT_EQ(j, Json::parse(R"({"object":"model.pull.done","status":"success",
      "model":"hf.co/org/m:Q8_0","digest":"cd","bytes":10,"source":"download"})"));
}

}  // namespace
}  // namespace synapse::api
