// SPDX-License-Identifier: Apache-2.0
#include "base/error_code.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace synapse {
namespace {

TEST(ErrorCode, TableIsConsistent) {
  std::set<uint16_t> numbers;
  std::set<std::string_view> names;
  uint16_t previous = 0;
  bool first = true;
  for (const ErrorCodeInfo& info : error_code_table()) {
    const auto number = static_cast<uint16_t>(info.code);
    EXPECT_TRUE(numbers.insert(number).second) << "duplicate number " << number;
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate name " << info.name;
    if (!first) {
      EXPECT_GT(number, previous) << "table must be in numeric order";
    }
    previous = number;
    first = false;
    EXPECT_GE(info.http_status, 200);
    EXPECT_LT(info.http_status, 600);
    EXPECT_FALSE(info.summary.empty());
    for (char c : info.name) {
      EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << info.name;
    }
    EXPECT_EQ(error_code_from_name(info.name), info.code);
    EXPECT_EQ(&error_code_info(info.code), &info);
    // Every transient error body carries a retry delay; a permanent one never suggests a retry.
    if (info.retry == Retry::kTransient) {
      EXPECT_GT(info.retry_after_ms, 0u) << info.name;
    } else {
      EXPECT_EQ(info.retry_after_ms, 0u) << info.name;
    }
  }
}

TEST(ErrorCode, RetiredNamesReadAsTheirReplacement) {
  // Job results stored before the rename still name these.
  EXPECT_EQ(error_code_from_name("missing_field"), ErrorCode::kMissingParameter);
  EXPECT_EQ(error_code_from_name("invalid_field"), ErrorCode::kInvalidValue);
  for (const RetiredErrorName& retired : retired_error_names()) {
    EXPECT_NE(error_code_name(retired.replaced_by), retired.name);
    for (const ErrorCodeInfo& info : error_code_table()) EXPECT_NE(info.name, retired.name);
  }
  // Their numbers are never reused.
  EXPECT_EQ(error_code_info(static_cast<ErrorCode>(807)).code, ErrorCode::kInternal);
  EXPECT_EQ(error_code_info(static_cast<ErrorCode>(808)).code, ErrorCode::kInternal);
}

TEST(ErrorCode, StableNamesAndNumbers) {
  // These appear in logs, JSON error bodies and the worker protocol: they must never change.
  EXPECT_EQ(error_code_name(ErrorCode::kFileTruncated), "file_truncated");
  EXPECT_EQ(static_cast<int>(ErrorCode::kFileTruncated), 100);
  EXPECT_EQ(error_code_name(ErrorCode::kTensorOverlap), "tensor_overlap");
  EXPECT_EQ(static_cast<int>(ErrorCode::kTensorOverlap), 112);
  EXPECT_EQ(error_code_info(ErrorCode::kResourceExhausted).http_status, 429);
  EXPECT_EQ(error_code_info(ErrorCode::kResourceExhausted).retry, Retry::kTransient);
  EXPECT_EQ(error_code_info(ErrorCode::kInvalidArgument).http_status, 400);
  EXPECT_EQ(error_code_name(ErrorCode::kQueueFull), "queue_full");
  EXPECT_EQ(static_cast<int>(ErrorCode::kQueueFull), 700);
  EXPECT_EQ(error_code_info(ErrorCode::kQueueFull).http_status, 429);
  EXPECT_EQ(error_code_info(ErrorCode::kQueueFull).retry, Retry::kTransient);
  EXPECT_FALSE(error_code_from_name("no_such_code").has_value());
}

TEST(ErrorCode, UnknownNumberMapsToInternal) {
  EXPECT_EQ(error_code_info(static_cast<ErrorCode>(9999)).code, ErrorCode::kInternal);
}

}  // namespace
}  // namespace synapse
