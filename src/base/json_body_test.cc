// SPDX-License-Identifier: Apache-2.0
#include "base/json_body.h"

#include <gtest/gtest.h>

#include <string>

namespace synapse {
namespace {

// Issue 22's body: two members nested 60000 levels deep (~240 KB). Parsed recursively it overflows
// the stack; it must be refused as invalid_json instead.
std::string deeply_nested_body() {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  return "{\"a\":" + deep + ",\"b\":" + deep + "}";
}

Status parse(std::string_view text, JsonShape shape = JsonShape::kObject) {
  return validate_json_text(text, JsonLimits{}, shape, "the request body");
}

TEST(JsonBody, AcceptsOrdinaryObjects) {
  const Result<nlohmann::ordered_json> body = parse_json_body(
      R"({"model":"m","z":1,"a":[1,2.5,{"k":null}],"big":18446744073709551615})", JsonLimits{});
  ASSERT_TRUE(body.ok()) << body.status().to_string();
  EXPECT_EQ(body->begin().key(), "model");  // order kept
  EXPECT_EQ((*body)["big"].get<uint64_t>(), UINT64_MAX);
}

TEST(JsonBody, RefusesDeepNestingWithoutRecursing) {
  const Status s = parse(deeply_nested_body());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_NE(s.message().find("deeper than 64"), std::string::npos) << s.message();
  EXPECT_EQ(s.where().field, "a");
  // The bound is exact: 64 levels pass, 65 do not.
  EXPECT_TRUE(parse(std::string(64, '[') + std::string(64, ']'), JsonShape::kAny).ok());
  EXPECT_FALSE(parse(std::string(65, '[') + std::string(65, ']'), JsonShape::kAny).ok());
}

TEST(JsonBody, RefusesDuplicateKeysNamingThem) {
  Status s = parse(R"({"model":"a","model":"b"})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(s.where().field, "model");
  EXPECT_NE(s.message().find("'model' more than once"), std::string::npos) << s.message();
  s = parse(R"({"messages":[{"role":"user"},{"role":"user","role":"system"}]})");
  EXPECT_EQ(s.where().field, "messages[1].role");
  // The same key in different objects is fine.
  EXPECT_TRUE(parse(R"({"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]})").ok());
}

TEST(JsonBody, RefusesNumbersThatOverflowQuotingThemAsGiven) {
  Status s = parse(R"({"max_tokens":99999999999999999999999})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(s.where().field, "max_tokens");
  EXPECT_NE(s.message().find("99999999999999999999999 is out of range"), std::string::npos)
      << s.message();
  s = parse(R"({"seed":-9223372036854775809})");
  EXPECT_EQ(s.where().field, "seed");
  EXPECT_NE(s.message().find("-9223372036854775809"), std::string::npos) << s.message();
  s = parse(R"({"t":[0.5,1e400]})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(s.where().field, "t[1]");
  EXPECT_NE(s.message().find("1e400"), std::string::npos) << s.message();
  // In range: int64 min, uint64 max, ordinary floats.
  EXPECT_TRUE(parse(R"({"a":-9223372036854775808,"b":18446744073709551615,"c":1e300})").ok());
}

TEST(JsonBody, RefusesOversizedNonObjectAndBrokenText) {
  EXPECT_EQ(validate_json_text("{}", JsonLimits{.max_bytes = 1}, JsonShape::kObject, "body").code(),
            ErrorCode::kRequestTooLarge);
  EXPECT_EQ(parse("[1,2]").code(), ErrorCode::kInvalidJson);
  EXPECT_TRUE(parse("[1,2]", JsonShape::kAny).ok());
  EXPECT_EQ(parse(R"({"a":)").code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(parse("").code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(parse("{} {}").code(), ErrorCode::kInvalidJson);
}

TEST(JsonBody, ClipsEchoedKeys) {
  const std::string key(1 << 20, 'k');
  const Status s = parse("{\"" + key + "\":1,\"" + key + "\":2}");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
  EXPECT_LT(s.message().size(), 1024u);
}

}  // namespace
}  // namespace synapse
