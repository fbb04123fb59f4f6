// SPDX-License-Identifier: Apache-2.0
// Scalar conversions between float and the 16-bit float formats GGUF stores (IEEE binary16 "F16"
// and bfloat16 "BF16"), bit-exact with ggml: round to nearest, ties to even; NaN stays NaN.
// These are the reference conversions; SIMD kernels are checked against them.
#pragma once

#include <cstdint>
#include <span>

namespace synapse {

uint16_t f32_to_f16(float value);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);

// Row conversions (dst.size() == src.size()).
void f32_to_f16_row(std::span<const float> src, std::span<uint16_t> dst);
void f16_to_f32_row(std::span<const uint16_t> src, std::span<float> dst);
void f32_to_bf16_row(std::span<const float> src, std::span<uint16_t> dst);
void bf16_to_f32_row(std::span<const uint16_t> src, std::span<float> dst);

}  // namespace synapse
