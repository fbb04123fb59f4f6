// SPDX-License-Identifier: Apache-2.0
#include "tensor/half.h"

#include <bit>

#include "base/check.h"

namespace synapse {

uint16_t f32_to_f16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t magnitude = x & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return sign | 0x7E00;  // NaN: a quiet NaN of the same sign
  // 65520 is halfway between the largest half (65504) and 65536; ties go to even, i.e. infinity.
  if (magnitude >= 0x477FF000) return sign | 0x7C00;
  if (magnitude < 0x38800000) {                 // below 2^-14: a half subnormal or zero
    if (magnitude <= 0x33000000) return sign;   // at most 2^-25: rounds to zero (ties to even)
    const uint32_t exponent = magnitude >> 23;  // 102..112
    const uint32_t mantissa = (magnitude & 0x7FFFFF) | 0x800000;
    const uint32_t shift = 126 - exponent;  // value / 2^-24 == mantissa >> shift
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (remainder > half || (remainder == half && (result & 1) != 0)) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa from 23 to 10 bits; a carry
  // out of the mantissa correctly bumps the exponent.
  uint32_t result = (magnitude - 0x38000000) >> 13;
  const uint32_t remainder = magnitude & 0x1FFF;
  if (remainder > 0x1000 || (remainder == 0x1000 && (result & 1) != 0)) ++result;
  return static_cast<uint16_t>(sign | result);
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t f32_to_bf16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

void f32_to_f16_row(std::span<const float> src, std::span<uint16_t> dst) {
  SYN_CHECK(src.size() == dst.size(), "row sizes differ");
  for (size_t i = 0; i < src.size(); ++i) dst[i] = f32_to_f16(src[i]);
}

void f16_to_f32_row(std::span<const uint16_t> src, std::span<float> dst) {
  SYN_CHECK(src.size() == dst.size(), "row sizes differ");
  for (size_t i = 0; i < src.size(); ++i) dst[i] = f16_to_f32(src[i]);
}

void f32_to_bf16_row(std::span<const float> src, std::span<uint16_t> dst) {
  SYN_CHECK(src.size() == dst.size(), "row sizes differ");
  for (size_t i = 0; i < src.size(); ++i) dst[i] = f32_to_bf16(src[i]);
}

void bf16_to_f32_row(std::span<const uint16_t> src, std::span<float> dst) {
  SYN_CHECK(src.size() == dst.size(), "row sizes differ");
  for (size_t i = 0; i < src.size(); ++i) dst[i] = bf16_to_f32(src[i]);
}

}  // namespace synapse
