// SPDX-License-Identifier: Apache-2.0
// Every tensor type GGUF (ggml) defines, with its block size and bytes per block, so a file's
// tensor sizes can be validated even for types no kernel runs yet.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "base/status.h"

namespace synapse {

// Values are ggml's type ids as stored in GGUF tensor infos. Ids 4, 5 (Q4_2, Q4_3), 31-33
// (Q4_0_4_4 ...) and 36-38 (IQ4_NL_4_4 ...) were removed from ggml and are not valid in files.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct TensorTypeInfo {
  TensorType type;
  std::string_view name;    // "F32", "Q4_K", ... (gguf-py's spelling)
  uint32_t block_elements;  // elements per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
  bool quantized;
};

// All defined types, in id order.
std::span<const TensorTypeInfo> tensor_type_table();

// nullptr for ids that are unknown or removed.
const TensorTypeInfo* find_tensor_type(uint32_t id);
const TensorTypeInfo& tensor_type_info(TensorType type);
inline std::string_view tensor_type_name(TensorType type) { return tensor_type_info(type).name; }

// Case-insensitive: "q4_k", "Q4_K", "bf16".
std::optional<TensorType> tensor_type_from_name(std::string_view name);

// Bytes of a tensor of `type` with dims ne[0..n) (ne[0] innermost). Fails with kBadShape when a
// dim is zero, ne[0] is not a multiple of the block size, or a product overflows.
Result<uint64_t> tensor_byte_size(TensorType type, std::span<const uint64_t> dims);

}  // namespace synapse
