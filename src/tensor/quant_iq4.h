// SPDX-License-Identifier: Apache-2.0
// The non-linear 4-bit formats of GGUF (ggml-common.h): IQ4_NL (32-element blocks, one F16
// scale) and IQ4_XS (256-element super-blocks of eight 32-element sub-blocks with 6-bit scales).
// A 4-bit index selects one of sixteen fixed values (kIq4Values), spaced more densely near zero
// than Q4_0's uniform levels, which suits the bell-shaped weight distributions of trained
// networks. Quantizers write llama-quantize's bytes (its search over 15 candidate scales per
// block, without an importance matrix); dequantizers give ggml's floats bit for bit.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/quant_common.h"

namespace synapse {

// The sixteen values an index selects (ggml's kvalues_iq4nl), in increasing order.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// x = d * kIq4Values[q]; element j's index in the low nibble of qs[j], element j + 16's in the
// high nibble (the Q4_0 layout).
struct BlockIQ4_NL {
  uint16_t d;  // F16
  uint8_t qs[kQuantBlockElements / 2];
};

// Sub-block s (elements 32s..32s+31) has the 6-bit scale ls = low | high << 4, where low is
// nibble s % 2 of scales_l[s / 2] and high is bits 2s..2s+1 of scales_h; x = d * (ls - 32) *
// kIq4Values[q], indices laid out per sub-block as in IQ4_NL (qs[16s..16s+15]).
struct BlockIQ4_XS {
  uint16_t d;  // F16
  uint16_t scales_h;
  uint8_t scales_l[kSuperBlockElements / 64];
  uint8_t qs[kSuperBlockElements / 2];
};

static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);

// The signed scale (ls - 32, in -32..31) of sub-block s of an IQ4_XS super-block.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int s) {
  const int low = (b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0F;
  const int high = (b.scales_h >> (2 * s)) & 0x03;
  return (low | (high << 4)) - 32;
}

// The value (kIq4Values entry) of element j of a 32-element block's 16 index bytes.
inline int iq4_value(const uint8_t qs[16], int j) {
  return kIq4Values[j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4)];
}

// x.size() == y.size() * 32 (IQ4_NL) or * 256 (IQ4_XS).
void quantize_row_iq4_nl(std::span<const float> x, std::span<BlockIQ4_NL> y);
void quantize_row_iq4_xs(std::span<const float> x, std::span<BlockIQ4_XS> y);
void dequantize_row_iq4_nl(std::span<const BlockIQ4_NL> x, std::span<float> y);
void dequantize_row_iq4_xs(std::span<const BlockIQ4_XS> x, std::span<float> y);

}  // namespace synapse
