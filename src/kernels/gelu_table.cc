// SPDX-License-Identifier: Apache-2.0
#include "kernels/gelu_table.h"

#include <array>
#include <cmath>
#include <cstdint>

#include "tensor/half.h"

namespace synapse {
namespace {

// ggml's GELU constants (tanh form).
constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
constexpr float kGeluCoefA = 0.044715f;

const std::array<uint16_t, 65536>& gelu_f16_table() {
  static const std::array<uint16_t, 65536> table = [] {
    std::array<uint16_t, 65536> t{};
    for (uint32_t i = 0; i < t.size(); ++i) {
      const float x = f16_to_f32(static_cast<uint16_t>(i));
      const float inner = kSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x);
      t[i] = f32_to_f16(0.5f * x * (1.0f + std::tanh(inner)));
    }
    return t;
  }();
  return table;
}

}  // namespace

void gelu_tanh_f16_table(const float* x, float* y, size_t n) {
  const auto& table = gelu_f16_table();
  for (size_t i = 0; i < n; ++i) {
    // Outside [-10, 10] GELU is 0 or the identity to float precision; ggml short-cuts the same.
    if (x[i] <= -10.0f) {
      y[i] = 0.0f;
    } else if (x[i] >= 10.0f) {
      y[i] = x[i];
    } else {
      y[i] = f16_to_f32(table[f32_to_f16(x[i])]);
    }
  }
}

}  // namespace synapse
