// SPDX-License-Identifier: Apache-2.0
// Rows of any supported tensor type as bytes: their size, and the reference conversions to and
// from float. The kernels layer has faster variants; these are the definitions they are checked
// against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "format/tensor_type.h"

namespace synapse {

// Weight types with a reference quantizer, dequantizer and dot product: F32, F16, BF16, Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS.
bool is_weight_type(TensorType type);
std::span<const TensorType> weight_types();
// The activation formats the dot products use: Q8_0, Q8_1, Q8_K (F32 activations need none).
bool is_activation_type(TensorType type);

// Elements per block (1 for F32/F16/BF16) and bytes per block.
size_t block_elements(TensorType type);
size_t block_bytes(TensorType type);
// Bytes of a row of n elements; n must be a multiple of block_elements(type).
size_t row_bytes(TensorType type, size_t n);

// Reference conversions of one row (weight or activation types). dst/src hold
// row_bytes(type, n) bytes, aligned to the block type (4 bytes covers every type).
void quantize_row(TensorType type, std::span<const float> src, std::span<uint8_t> dst);
void dequantize_row(TensorType type, std::span<const uint8_t> src, std::span<float> dst);

}  // namespace synapse
