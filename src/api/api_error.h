// SPDX-License-Identifier: Apache-2.0
// Errors as OpenAI clients expect them: an HTTP status and the body
// {"error": {"message", "type", "param", "code"}}, derived from a Status in one place: the
// status from the error-code table, `type` from the status class, `param` from the request field
// the Status names, `code` the stable error-code name.
#pragma once

#include <string>

#include "base/status.h"

namespace synapse::api {

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type;   // invalid_request_error, authentication_error, not_found_error, ...
  std::string param;  // the request field ("messages[2].content"), empty when none
  std::string code;   // the stable error-code name ("invalid_type")
};

ApiError api_error_from_status(const Status& status);
// OpenAI's error type for an HTTP status: authentication_error (401), not_found_error (404), ...
std::string error_type_for_status(int http_status);
// The JSON body; `param` is null when empty.
std::string error_body(const ApiError& error);

}  // namespace synapse::api
