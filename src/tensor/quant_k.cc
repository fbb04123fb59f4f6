// SPDX-License-Identifier: Apache-2.0
// Element and scale accessors of the K-quant super-blocks and the reference dequantizers. The
// dequantizers follow ggml's float arithmetic operation for operation, so the values are
// bit-identical (checked against an independent implementation in tests/quant_fixture_test.cc).
#include "tensor/quant_k.h"

#include <cstring>

#include "base/check.h"
#include "tensor/half.h"

namespace synapse {
namespace {

constexpr size_t kQK = kSuperBlockElements;

void check_sizes(size_t n_values, size_t n_blocks) {
  SYN_CHECK(n_values == n_blocks * kQK, "row length does not match the super-block count");
}

}  // namespace

void k4_scale_min(const uint8_t scales[kKScaleBytes], int s, int& scale, int& min) {
  if (s < 4) {
    scale = scales[s] & 63;
    min = scales[s + 4] & 63;
  } else {
    scale = (scales[s + 4] & 0x0F) | ((scales[s - 4] >> 6) << 4);
    min = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

int q3_k_scale(const uint8_t scales[kKScaleBytes], int s) {
  const int low = s < 8 ? (scales[s] & 0x0F) : (scales[s - 8] >> 4);
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (low | (high << 4)) - 32;
}

int q2_k_value(const BlockQ2_K& b, int e) {
  const int half = e / 128, pair = (e % 128) / 32, l = e % 32;
  return (b.qs[32 * half + l] >> (2 * pair)) & 3;
}

int q3_k_value(const BlockQ3_K& b, int e) {
  const int half = e / 128, pair = (e % 128) / 32, l = e % 32;
  const int low = (b.qs[32 * half + l] >> (2 * pair)) & 3;
  const bool high = ((b.hmask[l] >> (e / 32)) & 1) != 0;
  return low - (high ? 0 : 4);
}

int q4_k_value(const BlockQ4_K& b, int e) {
  const int group = e / 64, upper = (e % 64) / 32, l = e % 32;
  const uint8_t byte = b.qs[32 * group + l];
  return upper != 0 ? (byte >> 4) : (byte & 0x0F);
}

int q5_k_value(const BlockQ5_K& b, int e) {
  const int group = e / 64, upper = (e % 64) / 32, l = e % 32;
  const uint8_t byte = b.qs[32 * group + l];
  const int low = upper != 0 ? (byte >> 4) : (byte & 0x0F);
  return low | (((b.qh[l] >> (e / 32)) & 1) << 4);
}

int q6_k_value(const BlockQ6_K& b, int e) {
  const int half = e / 128, part = (e % 128) / 32, l = e % 32;
  const uint8_t low_byte = b.ql[64 * half + 32 * (part & 1) + l];
  const int low = (part >> 1) != 0 ? (low_byte >> 4) : (low_byte & 0x0F);
  const int high = (b.qh[32 * half + l] >> (2 * part)) & 3;
  return (low | (high << 4)) - 32;
}

void dequantize_row_q2_k(std::span<const BlockQ2_K> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  float* out = y.data();
  for (const BlockQ2_K& b : x) {
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int e = 0; e < static_cast<int>(kQK); ++e) {
      const uint8_t sc = b.scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0x0F);
      const float ml = dmin * static_cast<float>(sc >> 4);
      *out++ = dl * static_cast<float>(q2_k_value(b, e)) - ml;
    }
  }
}

void dequantize_row_q3_k(std::span<const BlockQ3_K> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  float* out = y.data();
  for (const BlockQ3_K& b : x) {
    const float d = f16_to_f32(b.d);
    for (int e = 0; e < static_cast<int>(kQK); ++e) {
      const float dl = d * static_cast<float>(q3_k_scale(b.scales, e / 16));
      *out++ = dl * static_cast<float>(q3_k_value(b, e));
    }
  }
}

// Q4_K and Q5_K: dl * q - ml with the sub-block's six-bit scale and min.
template <typename Block, typename Value>
void dequantize_k4(std::span<const Block> x, std::span<float> y, Value value) {
  check_sizes(y.size(), x.size());
  float* out = y.data();
  for (const Block& b : x) {
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int e = 0; e < static_cast<int>(kQK); ++e) {
      int scale = 0, min = 0;
      k4_scale_min(b.scales, e / 32, scale, min);
      const float dl = d * static_cast<float>(scale);
      const float ml = dmin * static_cast<float>(min);
      *out++ = dl * static_cast<float>(value(b, e)) - ml;
    }
  }
}

void dequantize_row_q4_k(std::span<const BlockQ4_K> x, std::span<float> y) {
  dequantize_k4(x, y, q4_k_value);
}

void dequantize_row_q5_k(std::span<const BlockQ5_K> x, std::span<float> y) {
  dequantize_k4(x, y, q5_k_value);
}

void dequantize_row_q6_k(std::span<const BlockQ6_K> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  float* out = y.data();
  for (const BlockQ6_K& b : x) {
    const float d = f16_to_f32(b.d);
    for (int e = 0; e < static_cast<int>(kQK); ++e) {
      // ggml evaluates d * scale * q left to right.
      *out++ = d * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q6_k_value(b, e));
    }
  }
}

void dequantize_row_q8_k(std::span<const BlockQ8_K> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  float* out = y.data();
  for (const BlockQ8_K& b : x) {
    for (size_t j = 0; j < kQK; ++j) *out++ = b.d * static_cast<float>(b.qs[j]);
  }
}

}  // namespace synapse
