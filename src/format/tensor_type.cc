// SPDX-License-Identifier: Apache-2.0
#include "format/tensor_type.h"

#include <array>
#include <cctype>
#include <string>

#include "base/checked_math.h"

namespace synapse {
namespace {

using T = TensorType;

// Block layouts as ggml defines them (ggml-common.h): e.g. Q4_K = f16 d + f16 dmin + 12 bytes of
// 6-bit scales + 128 bytes of nibbles per 256 elements = 144 bytes.
constexpr std::array kTypes = {
    TensorTypeInfo{T::kF32, "F32", 1, 4, false},
    TensorTypeInfo{T::kF16, "F16", 1, 2, false},
    TensorTypeInfo{T::kQ4_0, "Q4_0", 32, 18, true},
    TensorTypeInfo{T::kQ4_1, "Q4_1", 32, 20, true},
    TensorTypeInfo{T::kQ5_0, "Q5_0", 32, 22, true},
    TensorTypeInfo{T::kQ5_1, "Q5_1", 32, 24, true},
    TensorTypeInfo{T::kQ8_0, "Q8_0", 32, 34, true},
    TensorTypeInfo{T::kQ8_1, "Q8_1", 32, 36, true},
    TensorTypeInfo{T::kQ2_K, "Q2_K", 256, 84, true},
    TensorTypeInfo{T::kQ3_K, "Q3_K", 256, 110, true},
    TensorTypeInfo{T::kQ4_K, "Q4_K", 256, 144, true},
    TensorTypeInfo{T::kQ5_K, "Q5_K", 256, 176, true},
    TensorTypeInfo{T::kQ6_K, "Q6_K", 256, 210, true},
    TensorTypeInfo{T::kQ8_K, "Q8_K", 256, 292, true},
    TensorTypeInfo{T::kIQ2_XXS, "IQ2_XXS", 256, 66, true},
    TensorTypeInfo{T::kIQ2_XS, "IQ2_XS", 256, 74, true},
    TensorTypeInfo{T::kIQ3_XXS, "IQ3_XXS", 256, 98, true},
    TensorTypeInfo{T::kIQ1_S, "IQ1_S", 256, 50, true},
    TensorTypeInfo{T::kIQ4_NL, "IQ4_NL", 32, 18, true},
    TensorTypeInfo{T::kIQ3_S, "IQ3_S", 256, 110, true},
    TensorTypeInfo{T::kIQ2_S, "IQ2_S", 256, 82, true},
    TensorTypeInfo{T::kIQ4_XS, "IQ4_XS", 256, 136, true},
    TensorTypeInfo{T::kI8, "I8", 1, 1, false},
    TensorTypeInfo{T::kI16, "I16", 1, 2, false},
    TensorTypeInfo{T::kI32, "I32", 1, 4, false},
    TensorTypeInfo{T::kI64, "I64", 1, 8, false},
    TensorTypeInfo{T::kF64, "F64", 1, 8, false},
    TensorTypeInfo{T::kIQ1_M, "IQ1_M", 256, 56, true},
    TensorTypeInfo{T::kBF16, "BF16", 1, 2, false},
    TensorTypeInfo{T::kTQ1_0, "TQ1_0", 256, 54, true},
    TensorTypeInfo{T::kTQ2_0, "TQ2_0", 256, 66, true},
    TensorTypeInfo{T::kMXFP4, "MXFP4", 32, 17, true},
};

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::span<const TensorTypeInfo> tensor_type_table() { return kTypes; }

const TensorTypeInfo* find_tensor_type(uint32_t id) {
  for (const TensorTypeInfo& info : kTypes) {
    if (static_cast<uint32_t>(info.type) == id) return &info;
  }
  return nullptr;
}

const TensorTypeInfo& tensor_type_info(TensorType type) {
  const TensorTypeInfo* info = find_tensor_type(static_cast<uint32_t>(type));
  SYN_CHECK(info != nullptr, "TensorType value outside the table");
  return *info;
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const TensorTypeInfo& info : kTypes) {
    if (equals_ignoring_case(info.name, name)) return info.type;
  }
  return std::nullopt;
}

Result<uint64_t> tensor_byte_size(TensorType type, std::span<const uint64_t> dims) {
  const TensorTypeInfo& info = tensor_type_info(type);
  if (dims.empty()) return Status(ErrorCode::kBadShape, "tensor has no dimensions");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) {
      return Status(ErrorCode::kBadShape, "dimension " + std::to_string(i) + " is zero");
    }
  }
  if (dims[0] % info.block_elements != 0) {
    return Status(ErrorCode::kBadShape, "row of " + std::to_string(dims[0]) +
                                            " elements is not a multiple of the " +
                                            std::string(info.name) + " block size " +
                                            std::to_string(info.block_elements));
  }
  // ggml keeps element counts in int64_t; stay within that so every consumer can index them.
  constexpr uint64_t kMaxElements = static_cast<uint64_t>(INT64_MAX);
  std::optional<uint64_t> elements = 1;
  for (uint64_t dim : dims) {
    elements = checked_mul(*elements, dim);
    if (!elements || *elements > kMaxElements) {
      return Status(ErrorCode::kBadShape, "element count overflows");
    }
  }
  const std::optional<uint64_t> bytes =
      checked_mul(*elements / info.block_elements, info.block_bytes);
  if (!bytes || *bytes > kMaxElements) return Status(ErrorCode::kBadShape, "byte size overflows");
  return *bytes;
}

}  // namespace synapse
