// SPDX-License-Identifier: Apache-2.0
// What every route of the server answers errors with: OpenAI's error body for a Status, its HTTP
// status from the error table, and Retry-After when the caller knows when to come back. Private
// to the server library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "base/status.h"
#include "http/message.h"

namespace synapse::server {

inline constexpr std::string_view kJson = "application/json";

inline void send_error(http::Response& res, const Status& status,
                       std::optional<uint32_t> retry_s = std::nullopt) {
  const api::ApiError error = api::api_error_from_status(status);
  res.status = error.http_status;
  if (retry_s) res.set_header("Retry-After", std::to_string(*retry_s));
  res.set_content(api::error_body(error), std::string(kJson));
}

}  // namespace synapse::server
