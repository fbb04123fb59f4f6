// SPDX-License-Identifier: Apache-2.0
// The 256-element super-block formats of GGUF ("K-quants", ggml-common.h): Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, and Q8_K, the activation format their dot products use. Reference quantizers
// reproduce llama.cpp's quantize_row_*_ref (no importance matrix) byte for byte; dequantizers
// reproduce ggml's values bit for bit. Block pointers must be aligned to 2 bytes (4 for Q8_K).
#pragma once

#include <cstdint>
#include <span>

#include "tensor/quant_common.h"

namespace synapse {

inline constexpr size_t kKScaleBytes = 12;  // K_SCALE_SIZE: eight 6-bit scales and mins

// 16 sub-blocks of 16: x = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4), q in 0..3.
// Element 128*h + 32*p + l (h half, p bit pair, l < 32) is bits 2p..2p+1 of qs[32*h + l].
struct BlockQ2_K {
  uint8_t scales[kSuperBlockElements / 16];
  uint8_t qs[kSuperBlockElements / 4];
  uint16_t d;     // F16
  uint16_t dmin;  // F16
};
// 16 sub-blocks of 16: x = d * (scale[s] - 32) * (q - 4), q in 0..7 (6-bit scales packed in
// `scales`); the low two bits of q as in Q2_K, the third bit of element e is bit e / 32 of
// hmask[e % 32].
struct BlockQ3_K {
  uint8_t hmask[kSuperBlockElements / 8];
  uint8_t qs[kSuperBlockElements / 4];
  uint8_t scales[kKScaleBytes];
  uint16_t d;  // F16
};
// 8 sub-blocks of 32: x = d * scale[s] * q - dmin * min[s], q in 0..15, 6-bit scales and mins.
// Element 64*p + l is the low nibble of qs[32*p + l], element 64*p + 32 + l the high nibble.
struct BlockQ4_K {
  uint16_t d;     // F16
  uint16_t dmin;  // F16
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kSuperBlockElements / 2];
};
// Q4_K plus a fifth bit: bit 4 of element 32*s + l is bit s of qh[l].
struct BlockQ5_K {
  uint16_t d;     // F16
  uint16_t dmin;  // F16
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kSuperBlockElements / 8];
  uint8_t qs[kSuperBlockElements / 2];
};
// 16 sub-blocks of 16: x = d * scales[s] * (q - 32), q in 0..63 (low nibbles in ql, high bit
// pairs in qh, see q6_k_value).
struct BlockQ6_K {
  uint8_t ql[kSuperBlockElements / 2];
  uint8_t qh[kSuperBlockElements / 4];
  int8_t scales[kSuperBlockElements / 16];
  uint16_t d;  // F16
};
// Activations: x = d * q, q in -127..127, bsums[s] = sum of q over elements 16s..16s+15.
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlockElements];
  int16_t bsums[kSuperBlockElements / 16];
};

static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// x.size() == y.size() * 256.
void quantize_row_q2_k(std::span<const float> x, std::span<BlockQ2_K> y);
void quantize_row_q3_k(std::span<const float> x, std::span<BlockQ3_K> y);
void quantize_row_q4_k(std::span<const float> x, std::span<BlockQ4_K> y);
void quantize_row_q5_k(std::span<const float> x, std::span<BlockQ5_K> y);
void quantize_row_q6_k(std::span<const float> x, std::span<BlockQ6_K> y);
void quantize_row_q8_k(std::span<const float> x, std::span<BlockQ8_K> y);

// y.size() == x.size() * 256.
void dequantize_row_q2_k(std::span<const BlockQ2_K> x, std::span<float> y);
void dequantize_row_q3_k(std::span<const BlockQ3_K> x, std::span<float> y);
void dequantize_row_q4_k(std::span<const BlockQ4_K> x, std::span<float> y);
void dequantize_row_q5_k(std::span<const BlockQ5_K> x, std::span<float> y);
void dequantize_row_q6_k(std::span<const BlockQ6_K> x, std::span<float> y);
void dequantize_row_q8_k(std::span<const BlockQ8_K> x, std::span<float> y);

// Unpacked views of one super-block, shared by the dequantizers and the reference dot products:
// the integer value of each element and the integer scale (and min) of each sub-block.
// Q4_K/Q5_K: the 6-bit scale and min of sub-block s (0..7).
void k4_scale_min(const uint8_t scales[kKScaleBytes], int s, int& scale, int& min);
// Q3_K: the 6-bit scale of sub-block s (0..15), minus 32 (-32..31).
int q3_k_scale(const uint8_t scales[kKScaleBytes], int s);
// Element e (0..255) of a block.
int q2_k_value(const BlockQ2_K& b, int e);  // 0..3
int q3_k_value(const BlockQ3_K& b, int e);  // -4..3
int q4_k_value(const BlockQ4_K& b, int e);  // 0..15
int q5_k_value(const BlockQ5_K& b, int e);  // 0..31
int q6_k_value(const BlockQ6_K& b, int e);  // -32..31

}  // namespace synapse
