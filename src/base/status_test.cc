// SPDX-License-Identifier: Apache-2.0
#include "base/status.h"

#include <gtest/gtest.h>

namespace synapse {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0)
    return Status(ErrorCode::kInvalidArgument, "not positive", ErrorWhere{.field = "n"});
  return value;
}

Result<int> doubled(int value) {
  SYN_ASSIGN_OR_RETURN(const int v, parse_positive(value));
  return 2 * v;
}

Status check_both(int a, int b) {
  SYN_RETURN_IF_ERROR(parse_positive(a).status());
  SYN_RETURN_IF_ERROR(parse_positive(b).status());
  return ok_status();
}

TEST(Status, OkByDefault) {
  const Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kOk);
  EXPECT_EQ(s.to_string(), "ok");
  EXPECT_TRUE(s.message().empty());
  EXPECT_TRUE(s.where().empty());
}

TEST(Status, CarriesCodeMessageAndWhere) {
  const Status s(ErrorCode::kFileTruncated, "file ends inside key",
                 ErrorWhere{.path = "m.gguf", .byte_offset = 812, .key = "general.name"});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kFileTruncated);
  EXPECT_EQ(s.where().byte_offset, 812u);
  EXPECT_EQ(s.to_string(),
            "file_truncated: file ends inside key (file m.gguf, byte 812, key 'general.name')");
  EXPECT_FALSE(s.is_transient());
  EXPECT_TRUE(Status(ErrorCode::kUnavailable, "busy").is_transient());
}

TEST(Status, CopiesAreIndependent) {
  Status a(ErrorCode::kNotFound, "missing");
  Status b = a;
  b = std::move(b).with_key("k");
  EXPECT_EQ(a.where().key, "");
  EXPECT_EQ(b.where().key, "k");
  EXPECT_EQ(b.code(), ErrorCode::kNotFound);
  a = Status();
  EXPECT_TRUE(a.ok());
  EXPECT_FALSE(b.ok());
}

TEST(Status, WithKeepsInnermostLocation) {
  Status s =
      Status(ErrorCode::kBadShape, "bad", ErrorWhere{.tensor = "inner"}).with_tensor("outer");
  EXPECT_EQ(s.where().tensor, "inner");
  s = std::move(s).with_path("file.gguf");
  EXPECT_EQ(s.where().path, "file.gguf");
}

TEST(Result, ValueOrStatus) {
  EXPECT_EQ(*doubled(21), 42);
  const Result<int> failed = doubled(-1);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(failed.status().where().field, "n");
}

TEST(Result, ReturnIfErrorStopsAtFirstFailure) {
  EXPECT_TRUE(check_both(1, 2).ok());
  EXPECT_EQ(check_both(1, 0).code(), ErrorCode::kInvalidArgument);
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(7));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> taken = std::move(r).value();
  EXPECT_EQ(*taken, 7);
}

TEST(ResultDeathTest, ValueOfFailureAborts) {
  const Result<int> failed = parse_positive(0);
  EXPECT_DEATH((void)failed.value(), "value\\(\\) of a failed Result");
}

}  // namespace
}  // namespace synapse
