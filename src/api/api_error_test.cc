// SPDX-License-Identifier: Apache-2.0
#include "api/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace synapse::api {
namespace {

using Json = nlohmann::json;

TEST(ApiError, EveryBodyCarriesTheContractFields) {
  for (const ErrorCodeInfo& info : error_code_table()) {
    if (info.code == ErrorCode::kOk) continue;
    const ApiError error = api_error_from_status(Status(info.code, "m"));
    const Json body = Json::parse(error_body(error))["error"];
    EXPECT_EQ(body["code"], info.name);
    EXPECT_EQ(body["message"], "m");
    EXPECT_TRUE(body["type"].is_string()) << info.name;
    EXPECT_TRUE(body.contains("param")) << info.name;
    EXPECT_EQ(body["retryable"], info.retry == Retry::kTransient) << info.name;
    // The delay comes with exactly the transient codes.
    EXPECT_EQ(body.contains("retry_after_ms"), info.retry == Retry::kTransient) << info.name;
    EXPECT_EQ(error.http_status, info.http_status);
  }
}

TEST(ApiError, TransientCodesTakeTheCallersDelayElseTheTables) {
  const ApiError full = api_error_from_status(Status(ErrorCode::kQueueFull, "full"), 7000);
  EXPECT_TRUE(full.retryable);
  EXPECT_EQ(full.retry_after_ms, 7000u);
  EXPECT_EQ(Json::parse(error_body(full))["error"]["retry_after_ms"], 7000);
  EXPECT_EQ(retry_after_header(full), "7");

  const ApiError unavailable = api_error_from_status(Status(ErrorCode::kUnavailable, "down"));
  EXPECT_EQ(unavailable.retry_after_ms, error_code_info(ErrorCode::kUnavailable).retry_after_ms);
  EXPECT_EQ(retry_after_header(unavailable), "1");

  // A permanent code never suggests a retry, whatever the caller passes.
  const ApiError bad = api_error_from_status(Status(ErrorCode::kInvalidValue, "no"), 5000);
  EXPECT_FALSE(bad.retryable);
  EXPECT_FALSE(bad.retry_after_ms);
  EXPECT_FALSE(retry_after_header(bad));
  EXPECT_FALSE(Json::parse(error_body(bad))["error"].contains("retry_after_ms"));
}

TEST(ApiError, RetryAfterHeaderOnEveryTransient429And503Only) {
  for (const ErrorCodeInfo& info : error_code_table()) {
    if (info.code == ErrorCode::kOk) continue;
    const ApiError error = api_error_from_status(Status(info.code, "m"));
    const bool wants =
        info.retry == Retry::kTransient && (info.http_status == 429 || info.http_status == 503);
    EXPECT_EQ(retry_after_header(error).has_value(), wants) << info.name;
  }
  // Rounded up to whole seconds, at least one.
  const ApiError soon = api_error_from_status(Status(ErrorCode::kQueueFull, "full"), 1);
  EXPECT_EQ(retry_after_header(soon), "1");
  const ApiError later = api_error_from_status(Status(ErrorCode::kQueueFull, "full"), 1001);
  EXPECT_EQ(retry_after_header(later), "2");
}

TEST(ApiError, HttpLayerErrorsKeepTheirStatusAndTakeTheTablesRetryClass) {
  const ApiError cap = api_error_from_code_name(503, "too_many_connections", "busy");
  EXPECT_EQ(cap.http_status, 503);
  EXPECT_EQ(cap.type, "unavailable_error");
  EXPECT_TRUE(cap.retryable);
  EXPECT_EQ(retry_after_header(cap), "1");
  const ApiError version = api_error_from_code_name(505, "invalid_http", "HTTP/2.0");
  EXPECT_EQ(version.http_status, 505);
  EXPECT_FALSE(version.retryable);
  EXPECT_EQ(api_error_from_code_name(500, "no_such_code", "x").code, "internal");
}

}  // namespace
}  // namespace synapse::api
