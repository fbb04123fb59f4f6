// SPDX-License-Identifier: Apache-2.0
#include "api/api_error.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace synapse::api {
namespace {

// OpenAI's error types by HTTP status.
std::string_view error_type(int http_status) {
  switch (http_status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 501:
      return "not_implemented_error";
    case 503:
      return "unavailable_error";
    default:
      return http_status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

ApiError api_error_from_status(const Status& status, std::optional<uint32_t> retry_after_ms) {
  const ErrorCodeInfo& info = error_code_info(status.code());
  ApiError error;
  error.http_status = info.http_status;
  error.message = status.message();
  error.type = std::string(error_type(info.http_status));
  error.param = status.where().field;
  error.code = std::string(info.name);
  error.retryable = info.retry == Retry::kTransient;
  if (error.retryable) error.retry_after_ms = retry_after_ms.value_or(info.retry_after_ms);
  return error;
}

ApiError api_error_from_code_name(int http_status, std::string_view code,
                                  const std::string& message) {
  ApiError error = api_error_from_status(
      Status(error_code_from_name(code).value_or(ErrorCode::kInternal), message));
  error.http_status = http_status;
  error.type = std::string(error_type(http_status));
  return error;
}

std::string error_type_for_status(int http_status) { return std::string(error_type(http_status)); }

std::string error_body(const ApiError& error) {
  nlohmann::ordered_json body;
  body["error"]["message"] = error.message;
  body["error"]["type"] = error.type;
  body["error"]["param"] =
      error.param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(error.param);
  body["error"]["code"] = error.code;
  body["error"]["retryable"] = error.retryable;
  if (error.retryable && error.retry_after_ms) {
    body["error"]["retry_after_ms"] = *error.retry_after_ms;
  }
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::optional<std::string> retry_after_header(const ApiError& error) {
  if (!error.retryable || (error.http_status != 429 && error.http_status != 503)) {
    return std::nullopt;
  }
  const uint64_t ms = error.retry_after_ms.value_or(0);
  return std::to_string(std::max<uint64_t>(1, (ms + 999) / 1000));
}

}  // namespace synapse::api
