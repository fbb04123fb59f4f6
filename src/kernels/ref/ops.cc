// SPDX-License-Identifier: Apache-2.0
// Reference element-wise and row operations. Reductions accumulate in double so the reference
// is as close to exact as a float result allows; transcendental functions come from libm.
#include <cmath>
#include <cstring>

#include "kernels/ref/ref_kernels.h"

namespace synapse::ref {

void rms_norm(const float* x, const float* weight, size_t n, float eps, float* y) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  const auto scale =
      static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + static_cast<double>(eps)));
  for (size_t i = 0; i < n; ++i) y[i] = weight != nullptr ? x[i] * scale * weight[i] : x[i] * scale;
}

void layer_norm(const float* x, const float* weight, const float* bias, size_t n, float eps,
                float* y) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const double mean = sum / static_cast<double>(n);
  double var = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    var += d * d;
  }
  const double scale = 1.0 / std::sqrt(var / static_cast<double>(n) + static_cast<double>(eps));
  for (size_t i = 0; i < n; ++i) {
    float v = static_cast<float>((static_cast<double>(x[i]) - mean) * scale);
    if (weight != nullptr) v *= weight[i];
    if (bias != nullptr) v += bias[i];
    y[i] = v;
  }
}

void softmax(float* x, size_t n, const SoftmaxParams& p) {
  float max = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    float s = x[i] * p.scale;
    if (p.softcap > 0.0f) s = p.softcap * std::tanh(s / p.softcap);
    if (p.mask != nullptr) s += p.mask[i];
    x[i] = s;
    if (s > max) max = s;
  }
  if (max == -INFINITY) {  // everything masked: define the result as all zeros
    std::memset(x, 0, n * sizeof(float));
    return;
  }
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += static_cast<double>(x[i]);
  }
  const double inv = 1.0 / sum;
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<double>(x[i]) * inv);
}

void exp(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

float silu_one(float x) { return x / (1.0f + std::exp(-x)); }

void silu(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = silu_one(x[i]);
}

// The tanh approximation of GELU, 0.5 x (1 + tanh(z)) with z = sqrt(2/pi) (x + 0.044715 x^3),
// evaluated as x * sigmoid(2 z): the same function without the cancellation of 1 + tanh(z) for
// negative x (there the tanh form loses all digits; llama.cpp even uses a half-precision table).
void gelu_tanh(const float* x, float* y, size_t n) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057307f;
  constexpr float kCoefficient = 0.044715f;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float two_z = kTwoSqrt2OverPi * v * (1.0f + kCoefficient * v * v);
    y[i] = v / (1.0f + std::exp(-two_z));
  }
}

void gelu_erf(const float* x, float* y, size_t n) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  for (size_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

void swiglu(const float* gate, const float* up, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = silu_one(gate[i]) * up[i];
}

void add(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void scale(const float* x, float s, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

void softcap(const float* x, float cap, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = cap * std::tanh(x[i] / cap);
}

uint64_t read_bytes(const uint8_t* p, size_t n) {
  uint64_t acc = 0;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, sizeof(word));
    acc += word;
  }
  return acc;
}

}  // namespace synapse::ref
