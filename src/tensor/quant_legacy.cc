// SPDX-License-Identifier: Apache-2.0
// Reference quantizers and dequantizers of the 32-element block formats. The arithmetic follows
// ggml's reference code operation for operation (float, no fused multiply-add), because the goal
// is identical bytes and bit-identical values, not just small error.
#include "tensor/quant_legacy.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "tensor/half.h"

namespace synapse {
namespace {

constexpr size_t kQK = kQuantBlockElements;

void check_sizes(size_t n_values, size_t n_blocks) {
  SYN_CHECK(n_values == n_blocks * kQK, "row length does not match the block count");
}

// The value of largest magnitude (the first one on ties), as ggml's Q4_0/Q5_0 quantizers pick it.
float signed_absmax(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (size_t j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

float absmax(const float* x) {
  float amax = 0.0f;
  for (size_t j = 0; j < kQK; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;
  }
  return amax;
}

void min_max(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (size_t j = 0; j < kQK; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

void store_qh(uint32_t value, uint8_t qh[4]) { std::memcpy(qh, &value, sizeof(value)); }

}  // namespace

// Q4_0/Q5_0 (symmetric: d = max / -2^(b-1), level = x / d + 2^(b-1)) and Q4_1/Q5_1 (d =
// (max - min) / (2^b - 1), level = (x - min) / d, m = min), b = 4 or 5: the low four bits as
// nibbles (element j low, j + 16 high), the fifth bits of Q5 in qh.
template <typename Block, int kBits>
void quantize_q45(std::span<const float> x, std::span<Block> y) {
  constexpr bool kHasMin = requires(Block b) { b.m; };
  constexpr int kMaxLevel = (1 << kBits) - 1;
  constexpr auto kHalf = static_cast<float>(1 << (kBits - 1));
  check_sizes(x.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float* xb = x.data() + i * kQK;
    float min = 0.0f, max = 0.0f, d = 0.0f;
    if constexpr (kHasMin) {
      min_max(xb, min, max);
      d = (max - min) / static_cast<float>(kMaxLevel);
      y[i].m = f32_to_f16(min);
    } else {
      d = signed_absmax(xb) / -kHalf;
    }
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    auto level = [&](float v) {
      return kHasMin ? truncate_clamped((v - min) * id + 0.5f, 0, kMaxLevel)
                     : truncate_clamped(v * id + (kHalf + 0.5f), 0, kMaxLevel);
    };
    uint32_t qh = 0;
    for (size_t j = 0; j < kQK / 2; ++j) {
      const int q0 = level(xb[j]);
      const int q1 = level(xb[j + kQK / 2]);
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
    }
    if constexpr (kBits == 5) store_qh(qh, y[i].qh);
  }
}

void quantize_row_q4_0(std::span<const float> x, std::span<BlockQ4_0> y) {
  quantize_q45<BlockQ4_0, 4>(x, y);
}
void quantize_row_q4_1(std::span<const float> x, std::span<BlockQ4_1> y) {
  quantize_q45<BlockQ4_1, 4>(x, y);
}
void quantize_row_q5_0(std::span<const float> x, std::span<BlockQ5_0> y) {
  quantize_q45<BlockQ5_0, 5>(x, y);
}
void quantize_row_q5_1(std::span<const float> x, std::span<BlockQ5_1> y) {
  quantize_q45<BlockQ5_1, 5>(x, y);
}

// Q8_0 and Q8_1: d = amax / 127, q = round(x / d) (half away from zero, like roundf); Q8_1
// also stores s = d * sum(q).
template <typename Block>
void quantize_q8(std::span<const float> x, std::span<Block> y) {
  check_sizes(x.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float* xb = x.data() + i * kQK;
    const float d = absmax(xb) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    int sum = 0;
    for (size_t j = 0; j < kQK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(round_away_clamped(xb[j] * id, -128, 127));
      sum += y[i].qs[j];
    }
    if constexpr (requires { y[i].s; }) y[i].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

void quantize_row_q8_0(std::span<const float> x, std::span<BlockQ8_0> y) { quantize_q8(x, y); }
void quantize_row_q8_1(std::span<const float> x, std::span<BlockQ8_1> y) { quantize_q8(x, y); }

void dequantize_row_q4_0(std::span<const BlockQ4_0> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < static_cast<int>(kQK); ++j) {
      y[i * kQK + static_cast<size_t>(j)] = static_cast<float>(q4_value(x[i].qs, j) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(std::span<const BlockQ4_1> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = f16_to_f32(x[i].d);
    const float m = f16_to_f32(x[i].m);
    for (int j = 0; j < static_cast<int>(kQK); ++j) {
      y[i * kQK + static_cast<size_t>(j)] = static_cast<float>(q4_value(x[i].qs, j)) * d + m;
    }
  }
}

void dequantize_row_q5_0(std::span<const BlockQ5_0> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < static_cast<int>(kQK); ++j) {
      y[i * kQK + static_cast<size_t>(j)] =
          static_cast<float>(q5_value(x[i].qs, x[i].qh, j) - 16) * d;
    }
  }
}

void dequantize_row_q5_1(std::span<const BlockQ5_1> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = f16_to_f32(x[i].d);
    const float m = f16_to_f32(x[i].m);
    for (int j = 0; j < static_cast<int>(kQK); ++j) {
      y[i * kQK + static_cast<size_t>(j)] =
          static_cast<float>(q5_value(x[i].qs, x[i].qh, j)) * d + m;
    }
  }
}

template <typename Block>
void dequantize_q8(std::span<const Block> x, std::span<float> y) {
  check_sizes(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = f16_to_f32(x[i].d);
    for (size_t j = 0; j < kQK; ++j) y[i * kQK + j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void dequantize_row_q8_0(std::span<const BlockQ8_0> x, std::span<float> y) { dequantize_q8(x, y); }
void dequantize_row_q8_1(std::span<const BlockQ8_1> x, std::span<float> y) { dequantize_q8(x, y); }

}  // namespace synapse
