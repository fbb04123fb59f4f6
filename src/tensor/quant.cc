// SPDX-License-Identifier: Apache-2.0
#include "tensor/quant.h"

#include <array>
#include <cstring>

#include "base/check.h"
#include "tensor/half.h"
#include "tensor/quant_iq4.h"
#include "tensor/quant_k.h"
#include "tensor/quant_legacy.h"

namespace synapse {
namespace {

using T = TensorType;

constexpr std::array kWeightTypes = {T::kF32,  T::kF16,  T::kBF16, T::kQ8_0,   T::kQ4_0,
                                     T::kQ4_1, T::kQ5_0, T::kQ5_1, T::kQ2_K,   T::kQ3_K,
                                     T::kQ4_K, T::kQ5_K, T::kQ6_K, T::kIQ4_NL, T::kIQ4_XS};

template <typename Block>
std::span<Block> blocks_of(std::span<uint8_t> bytes) {
  SYN_CHECK(bytes.size() % sizeof(Block) == 0, "byte count is not a whole number of blocks");
  SYN_CHECK(reinterpret_cast<uintptr_t>(bytes.data()) % alignof(Block) == 0, "misaligned blocks");
  return {reinterpret_cast<Block*>(bytes.data()), bytes.size() / sizeof(Block)};
}

template <typename Block>
std::span<const Block> blocks_of(std::span<const uint8_t> bytes) {
  SYN_CHECK(bytes.size() % sizeof(Block) == 0, "byte count is not a whole number of blocks");
  SYN_CHECK(reinterpret_cast<uintptr_t>(bytes.data()) % alignof(Block) == 0, "misaligned blocks");
  return {reinterpret_cast<const Block*>(bytes.data()), bytes.size() / sizeof(Block)};
}

}  // namespace

bool is_weight_type(TensorType type) {
  for (TensorType t : kWeightTypes) {
    if (t == type) return true;
  }
  return false;
}

std::span<const TensorType> weight_types() { return kWeightTypes; }

bool is_activation_type(TensorType type) {
  return type == T::kQ8_0 || type == T::kQ8_1 || type == T::kQ8_K;
}

size_t block_elements(TensorType type) { return tensor_type_info(type).block_elements; }
size_t block_bytes(TensorType type) { return tensor_type_info(type).block_bytes; }

size_t row_bytes(TensorType type, size_t n) {
  const TensorTypeInfo& info = tensor_type_info(type);
  SYN_CHECK(n % info.block_elements == 0, "row length is not a multiple of the block size");
  return n / info.block_elements * info.block_bytes;
}

void quantize_row(TensorType type, std::span<const float> src, std::span<uint8_t> dst) {
  SYN_CHECK(dst.size() == row_bytes(type, src.size()), "destination size does not match");
  switch (type) {
    case T::kF32:
      std::memcpy(dst.data(), src.data(), dst.size());
      return;
    case T::kF16:
      return f32_to_f16_row(src, blocks_of<uint16_t>(dst));
    case T::kBF16:
      return f32_to_bf16_row(src, blocks_of<uint16_t>(dst));
    case T::kQ4_0:
      return quantize_row_q4_0(src, blocks_of<BlockQ4_0>(dst));
    case T::kQ4_1:
      return quantize_row_q4_1(src, blocks_of<BlockQ4_1>(dst));
    case T::kQ5_0:
      return quantize_row_q5_0(src, blocks_of<BlockQ5_0>(dst));
    case T::kQ5_1:
      return quantize_row_q5_1(src, blocks_of<BlockQ5_1>(dst));
    case T::kQ8_0:
      return quantize_row_q8_0(src, blocks_of<BlockQ8_0>(dst));
    case T::kQ8_1:
      return quantize_row_q8_1(src, blocks_of<BlockQ8_1>(dst));
    case T::kQ2_K:
      return quantize_row_q2_k(src, blocks_of<BlockQ2_K>(dst));
    case T::kQ3_K:
      return quantize_row_q3_k(src, blocks_of<BlockQ3_K>(dst));
    case T::kQ4_K:
      return quantize_row_q4_k(src, blocks_of<BlockQ4_K>(dst));
    case T::kQ5_K:
      return quantize_row_q5_k(src, blocks_of<BlockQ5_K>(dst));
    case T::kQ6_K:
      return quantize_row_q6_k(src, blocks_of<BlockQ6_K>(dst));
    case T::kQ8_K:
      return quantize_row_q8_k(src, blocks_of<BlockQ8_K>(dst));
    case T::kIQ4_NL:
      return quantize_row_iq4_nl(src, blocks_of<BlockIQ4_NL>(dst));
    case T::kIQ4_XS:
      return quantize_row_iq4_xs(src, blocks_of<BlockIQ4_XS>(dst));
    default:
      SYN_CHECK(false, "no quantizer for this tensor type");
  }
}

void dequantize_row(TensorType type, std::span<const uint8_t> src, std::span<float> dst) {
  SYN_CHECK(src.size() == row_bytes(type, dst.size()), "source size does not match");
  switch (type) {
    case T::kF32:
      std::memcpy(dst.data(), src.data(), src.size());
      return;
    case T::kF16:
      return f16_to_f32_row(blocks_of<uint16_t>(src), dst);
    case T::kBF16:
      return bf16_to_f32_row(blocks_of<uint16_t>(src), dst);
    case T::kQ4_0:
      return dequantize_row_q4_0(blocks_of<BlockQ4_0>(src), dst);
    case T::kQ4_1:
      return dequantize_row_q4_1(blocks_of<BlockQ4_1>(src), dst);
    case T::kQ5_0:
      return dequantize_row_q5_0(blocks_of<BlockQ5_0>(src), dst);
    case T::kQ5_1:
      return dequantize_row_q5_1(blocks_of<BlockQ5_1>(src), dst);
    case T::kQ8_0:
      return dequantize_row_q8_0(blocks_of<BlockQ8_0>(src), dst);
    case T::kQ8_1:
      return dequantize_row_q8_1(blocks_of<BlockQ8_1>(src), dst);
    case T::kQ2_K:
      return dequantize_row_q2_k(blocks_of<BlockQ2_K>(src), dst);
    case T::kQ3_K:
      return dequantize_row_q3_k(blocks_of<BlockQ3_K>(src), dst);
    case T::kQ4_K:
      return dequantize_row_q4_k(blocks_of<BlockQ4_K>(src), dst);
    case T::kQ5_K:
      return dequantize_row_q5_k(blocks_of<BlockQ5_K>(src), dst);
    case T::kQ6_K:
      return dequantize_row_q6_k(blocks_of<BlockQ6_K>(src), dst);
    case T::kQ8_K:
      return dequantize_row_q8_k(blocks_of<BlockQ8_K>(src), dst);
    case T::kIQ4_NL:
      return dequantize_row_iq4_nl(blocks_of<BlockIQ4_NL>(src), dst);
    case T::kIQ4_XS:
      return dequantize_row_iq4_xs(blocks_of<BlockIQ4_XS>(src), dst);
    default:
      SYN_CHECK(false, "no dequantizer for this tensor type");
  }
}

}  // namespace synapse
