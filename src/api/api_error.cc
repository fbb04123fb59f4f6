// SPDX-License-Identifier: Apache-2.0
#include "api/api_error.h"

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

ApiError api_error_from_status(const Status& status) {
  const ErrorCodeInfo& info = error_code_info(status.code());
  ApiError error;
  error.http_status = info.http_status;
  error.message = status.message();
  error.type = std::string(error_type(info.http_status));
  error.param = status.where().field;
  error.code = std::string(info.name);
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
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace synapse::api
