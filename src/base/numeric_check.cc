// SPDX-License-Identifier: Apache-2.0
#include "base/numeric_check.h"

#include <cmath>
#include <string>

namespace synapse {

Status check_finite(std::span<const float> values, std::string_view what) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return Status(ErrorCode::kNumericFault,
                    std::string(what) + " holds " + (std::isnan(values[i]) ? "NaN" : "infinity") +
                        " at element " + std::to_string(i) +
                        " (the model's weights or a kernel produced a non-finite value)");
    }
  }
  return ok_status();
}

}  // namespace synapse
