// SPDX-License-Identifier: Apache-2.0
#include "serve/request.h"

#include <array>

namespace synapse::serve {
namespace {

constexpr std::array<std::string_view, kRequestClassCount> kClassNames = {"interactive", "batch",
                                                                          "background"};

}  // namespace

std::string_view request_class_name(RequestClass c) { return kClassNames[static_cast<size_t>(c)]; }

std::optional<RequestClass> request_class_from_name(std::string_view name) {
  for (size_t i = 0; i < kClassNames.size(); ++i) {
    if (kClassNames[i] == name) return static_cast<RequestClass>(i);
  }
  return std::nullopt;
}

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

}  // namespace synapse::serve
