// SPDX-License-Identifier: Apache-2.0
#include "base/error_code_doc.h"

#include "base/error_code.h"

namespace synapse {

std::string error_codes_markdown() {
  std::string out =
      "| code | number | HTTP | retryable | retry_after_ms | meaning |\n"
      "|---|---:|---:|---|---:|---|\n";
  for (const ErrorCodeInfo& info : error_code_table()) {
    if (info.code == ErrorCode::kOk) continue;  // never an error body
    const bool transient = info.retry == Retry::kTransient;
    out += "| `" + std::string(info.name) + "` | " + std::to_string(static_cast<int>(info.code)) +
           " | " + std::to_string(info.http_status) + " | " + (transient ? "yes" : "no") + " | " +
           (transient ? std::to_string(info.retry_after_ms) : std::string("")) + " | " +
           std::string(info.summary) + " |\n";
  }
  out +=
      "\nRetired names (stored job results that still carry them read back as the new code):\n\n"
      "| retired | now |\n"
      "|---|---|\n";
  for (const RetiredErrorName& retired : retired_error_names()) {
    out += "| `" + std::string(retired.name) + "` | `" +
           std::string(error_code_name(retired.replaced_by)) + "` |\n";
  }
  return out;
}

}  // namespace synapse
