// SPDX-License-Identifier: Apache-2.0
// The conversions are checked against an independent oracle: for F16, the nearest representable
// value found by searching all 65536 encodings (ties to the even encoding); for BF16, truncation
// plus the IEEE rounding rule written out in double arithmetic.
#include "tensor/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace synapse {
namespace {

// All finite non-negative F16 values in increasing order, with their encodings.
struct HalfTable {
  std::vector<double> values;
  std::vector<uint16_t> bits;
  HalfTable() {
    for (uint32_t b = 0; b < 0x7C00; ++b) {
      bits.push_back(static_cast<uint16_t>(b));
      values.push_back(static_cast<double>(f16_to_f32(static_cast<uint16_t>(b))));
    }
    // Infinity rounds like the next power of two after the largest finite value (2^16).
    bits.push_back(0x7C00);
    values.push_back(65536.0);
  }
};

uint16_t oracle_f16(float x, const HalfTable& table) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7E00 | sign;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 65536.0) return sign | 0x7C00;
  const auto it = std::lower_bound(table.values.begin(), table.values.end(), a);
  const size_t hi = static_cast<size_t>(it - table.values.begin());
  if (hi < table.values.size() && table.values[hi] == a) return sign | table.bits[hi];
  const size_t lo = hi - 1;
  const double d_lo = a - table.values[lo];
  const double d_hi = table.values[hi] - a;
  if (d_lo < d_hi) return sign | table.bits[lo];
  if (d_hi < d_lo) return sign | table.bits[hi];
  return sign | ((table.bits[lo] & 1) == 0 ? table.bits[lo] : table.bits[hi]);
}

TEST(Half, F16DecodesEveryEncoding) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const float f = f16_to_f32(h);
    const uint32_t exponent = (b >> 10) & 0x1F;
    const uint32_t mantissa = b & 0x3FF;
    const double sign = (b & 0x8000) != 0 ? -1.0 : 1.0;
    if (exponent == 0x1F) {
      EXPECT_EQ(std::isnan(f), mantissa != 0);
      EXPECT_EQ(std::isinf(f), mantissa == 0);
      continue;
    }
    const double expected =
        exponent == 0 ? sign * std::ldexp(static_cast<double>(mantissa), -24)
                      : sign * std::ldexp(1.0 + mantissa / 1024.0, static_cast<int>(exponent) - 15);
    EXPECT_EQ(static_cast<double>(f), expected) << std::hex << b;
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_f16(f), h) << "round trip " << std::hex << b;
    }
  }
}

TEST(Half, F16EncodesLikeTheNearestEvenOracle) {
  const HalfTable table;
  // Midpoints between neighbours (the tie cases), their neighbours one ulp away, and a sweep of
  // float bit patterns across the whole range including subnormals, overflow and NaN.
  std::vector<float> inputs;
  for (size_t i = 0; i + 1 < table.values.size(); ++i) {
    const auto mid = static_cast<float>((table.values[i] + table.values[i + 1]) / 2);
    inputs.push_back(mid);
    inputs.push_back(std::nextafter(mid, 0.0f));
    inputs.push_back(std::nextafter(mid, std::numeric_limits<float>::infinity()));
  }
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4099) {
    inputs.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  inputs.push_back(65504.0f);
  inputs.push_back(65519.996f);
  inputs.push_back(65520.0f);
  inputs.push_back(std::numeric_limits<float>::infinity());
  inputs.push_back(std::numeric_limits<float>::denorm_min());
  for (float x : inputs) {
    const uint16_t expected = oracle_f16(x, table);
    const uint16_t actual = f32_to_f16(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(actual)));
      continue;
    }
    ASSERT_EQ(actual, expected) << "x = " << x << " bits " << std::hex
                                << std::bit_cast<uint32_t>(x);
  }
}

TEST(Half, Bf16RoundsToNearestEven) {
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 997) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const uint16_t b = f32_to_bf16(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(b)));
      continue;
    }
    // The two candidates are truncation and truncation + 1 ulp; pick by distance, ties to even.
    const auto lo = static_cast<uint16_t>(static_cast<uint32_t>(bits) >> 16);
    const auto hi = static_cast<uint16_t>(lo + 1);
    const double v = static_cast<double>(x);
    const double d_lo = std::fabs(v - static_cast<double>(bf16_to_f32(lo)));
    // Past the largest finite value, infinity rounds like 2^128 (the next binade).
    const double hi_value = hi == 0x7F80 || hi == 0xFF80 ? std::copysign(std::ldexp(1.0, 128), v)
                                                         : static_cast<double>(bf16_to_f32(hi));
    const double d_hi = std::fabs(hi_value - v);
    const uint16_t expected = d_lo < d_hi ? lo : d_hi < d_lo ? hi : ((lo & 1) == 0 ? lo : hi);
    ASSERT_EQ(b, expected) << std::hex << bits;
  }
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, RowConversions) {
  const std::vector<float> src = {0.0f, -1.5f, 65504.0f, 1e-8f};
  std::vector<uint16_t> half(src.size());
  std::vector<float> back(src.size());
  f32_to_f16_row(src, half);
  f16_to_f32_row(half, back);
  EXPECT_EQ(back[1], -1.5f);
  EXPECT_EQ(back[2], 65504.0f);
  f32_to_bf16_row(src, half);
  bf16_to_f32_row(half, back);
  EXPECT_EQ(back[1], -1.5f);
}

}  // namespace
}  // namespace synapse
