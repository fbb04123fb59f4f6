// SPDX-License-Identifier: Apache-2.0
// The 32-element block formats of GGUF (ggml-common.h): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, with
// their reference quantizers and dequantizers. Quantizers reproduce llama.cpp's reference
// quantizers (quantize_row_*_ref) byte for byte; dequantizers reproduce ggml's values bit for bit.
// Block pointers must be aligned to 2 bytes (tensor data in a GGUF always is).
#pragma once

#include <cstdint>
#include <span>

#include "tensor/quant_common.h"

namespace synapse {

// x = d * (q - 8); q in 0..15, element j in the low nibble of qs[j], element j + 16 in the high.
struct BlockQ4_0 {
  uint16_t d;  // F16
  uint8_t qs[kQuantBlockElements / 2];
};
// x = d * q + m; q in 0..15, nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;  // F16
  uint16_t m;  // F16
  uint8_t qs[kQuantBlockElements / 2];
};
// x = d * (q - 16); q in 0..31: low four bits as in Q4_0, bit 4 of element j is bit j of qh.
struct BlockQ5_0 {
  uint16_t d;  // F16
  uint8_t qh[4];
  uint8_t qs[kQuantBlockElements / 2];
};
// x = d * q + m; q in 0..31 laid out as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;  // F16
  uint16_t m;  // F16
  uint8_t qh[4];
  uint8_t qs[kQuantBlockElements / 2];
};
// x = d * q; q in -127..127 (the quantizer never writes -128, a reader accepts it).
struct BlockQ8_0 {
  uint16_t d;  // F16
  int8_t qs[kQuantBlockElements];
};
// Q8_0 plus s = d * sum(q) (F16). An activation format of ggml; Synapse's dots compute the sum
// exactly from qs instead, so it is kept for format completeness.
struct BlockQ8_1 {
  uint16_t d;  // F16
  uint16_t s;  // F16
  int8_t qs[kQuantBlockElements];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);

// x.size() == y.size() * 32.
void quantize_row_q4_0(std::span<const float> x, std::span<BlockQ4_0> y);
void quantize_row_q4_1(std::span<const float> x, std::span<BlockQ4_1> y);
void quantize_row_q5_0(std::span<const float> x, std::span<BlockQ5_0> y);
void quantize_row_q5_1(std::span<const float> x, std::span<BlockQ5_1> y);
void quantize_row_q8_0(std::span<const float> x, std::span<BlockQ8_0> y);
void quantize_row_q8_1(std::span<const float> x, std::span<BlockQ8_1> y);

// y.size() == x.size() * 32.
void dequantize_row_q4_0(std::span<const BlockQ4_0> x, std::span<float> y);
void dequantize_row_q4_1(std::span<const BlockQ4_1> x, std::span<float> y);
void dequantize_row_q5_0(std::span<const BlockQ5_0> x, std::span<float> y);
void dequantize_row_q5_1(std::span<const BlockQ5_1> x, std::span<float> y);
void dequantize_row_q8_0(std::span<const BlockQ8_0> x, std::span<float> y);
void dequantize_row_q8_1(std::span<const BlockQ8_1> x, std::span<float> y);

// The 5-bit value of element j (0..31) of a Q5 block.
inline int q5_value(const uint8_t qs[16], const uint8_t qh[4], int j) {
  const uint32_t high =
      (static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
       (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24));
  const int low = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return low | static_cast<int>(((high >> j) & 1U) << 4);
}

// The 4-bit value of element j (0..31) of a Q4 block.
inline int q4_value(const uint8_t qs[16], int j) {
  return j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
}

}  // namespace synapse
