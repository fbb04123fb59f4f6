// SPDX-License-Identifier: Apache-2.0
// Errors as OpenAI clients expect them: an HTTP status and the body
// {"error": {"message", "type", "param", "code", "retryable", "retry_after_ms"?}}, derived from a
// Status in one place: the status, the retry class and the default retry delay from the
// error-code table, `type` from the status class, `param` from the request field the Status
// names, `code` the stable error-code name. docs/errors.md describes the contract.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace synapse::api {

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type;        // invalid_request_error, authentication_error, not_found_error, ...
  std::string param;       // the request field ("messages[2].content"), empty when none
  std::string code;        // the stable error-code name ("invalid_type")
  bool retryable = false;  // the code is transient: the same request may succeed later
  // Set exactly when retryable: how long to wait before retrying.
  std::optional<uint32_t> retry_after_ms;
};

// `retry_after_ms` is the caller's estimate (the scheduler's, for a full queue); it applies only
// to a transient code, which otherwise gets the table's default delay.
ApiError api_error_from_status(const Status& status,
                               std::optional<uint32_t> retry_after_ms = std::nullopt);
// The same for an error the HTTP layer names by its stable code and answers with its own status
// (a parser's 501 or 505, the connection cap's 503); an unknown name reads as internal.
ApiError api_error_from_code_name(int http_status, std::string_view code,
                                  const std::string& message);
// OpenAI's error type for an HTTP status: authentication_error (401), not_found_error (404), ...
std::string error_type_for_status(int http_status);
// The JSON body; `param` is null when empty, `retry_after_ms` only present when retryable.
std::string error_body(const ApiError& error);
// The Retry-After header's value (whole seconds, at least 1) for a retryable error answered with
// 429 or 503, the statuses whose clients look for the header; nullopt otherwise.
std::optional<std::string> retry_after_header(const ApiError& error);

}  // namespace synapse::api
