// SPDX-License-Identifier: Apache-2.0
// The one entry point for JSON that comes from outside (HTTP request bodies, job submissions,
// batch input lines): every caller gets the same bounds and the same refusals, checked in one
// non-recursive SAX pass before nlohmann builds a value (its parser's DOM builder, dump() and
// destructor recurse per level). It lives in base because jobs (base + sqlite only) uses it too.
//
// Refused, all as invalid_json (400) naming the field path ("a.b[2]") in where.field:
//  - nesting deeper than `max_depth`;
//  - a duplicate key in one object: parsers disagree on which copy wins (nlohmann keeps the last,
//    others the first), so a proxy and this server could read different requests from one body;
//  - an integer literal outside [INT64_MIN, UINT64_MAX] (nlohmann would turn it into a rounded
//    double) and a number that overflows a double (1e400);
//  - not a JSON object, when the caller asks for one.
// Text larger than `max_bytes` is request_too_large (413). Messages never echo more than a short,
// clipped piece of the input (base/echo.h).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"

namespace synapse {

struct JsonLimits {
  size_t max_bytes = 8u << 20;
  int max_depth = 64;
};

enum class JsonShape { kObject, kAny };

// Checks `text` against the rules above without building a value. `what` names the text in
// messages ("the request body", "the line").
Status validate_json_text(std::string_view text, const JsonLimits& limits, JsonShape shape,
                          std::string_view what);

// Validates, then parses into `JsonT` (nlohmann::json or nlohmann::ordered_json).
template <typename JsonT>
Result<JsonT> parse_json_text(std::string_view text, const JsonLimits& limits,
                              JsonShape shape = JsonShape::kObject,
                              std::string_view what = "the request body") {
  SYN_RETURN_IF_ERROR(validate_json_text(text, limits, shape, what));
  JsonT value = JsonT::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  // Unreachable after validation (the same lexer accepted the text); kept as a value, not a crash.
  if (value.is_discarded())
    return Status(ErrorCode::kInvalidJson, std::string(what) + " is not valid JSON");
  return value;
}

// The common case: a request body that must be a JSON object, keys in the order given.
inline Result<nlohmann::ordered_json> parse_json_body(std::string_view body,
                                                      const JsonLimits& limits) {
  return parse_json_text<nlohmann::ordered_json>(body, limits);
}

}  // namespace synapse
