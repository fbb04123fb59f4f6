// SPDX-License-Identifier: Apache-2.0
// A GGUF metadata value: a scalar, a string or an array (of scalars, strings or arrays). Values
// read from a file are views into its mapping (no copies of vocabularies); values built in memory
// own their storage. Copies are cheap: array payloads are shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "format/byte_order.h"

namespace synapse {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::optional<GgufValueType> gguf_value_type_from_id(uint32_t id);
std::string_view gguf_value_type_name(GgufValueType type);  // "u32", "string", "array", ...
// Bytes of one scalar in the file; 0 for string and array.
uint32_t gguf_scalar_bytes(GgufValueType type);

template <typename T>
constexpr GgufValueType gguf_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return GgufValueType::kUint8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return GgufValueType::kInt8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return GgufValueType::kUint16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return GgufValueType::kInt16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return GgufValueType::kUint32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return GgufValueType::kInt32;
  else if constexpr (std::is_same_v<T, float>)
    return GgufValueType::kFloat32;
  else if constexpr (std::is_same_v<T, bool>)
    return GgufValueType::kBool;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return GgufValueType::kUint64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return GgufValueType::kInt64;
  else if constexpr (std::is_same_v<T, double>)
    return GgufValueType::kFloat64;
  else
    static_assert(sizeof(T) == 0, "not a GGUF scalar type");
}

class GgufValue {
 public:
  GgufValue() = default;  // u8 zero; only for containers

  template <typename T>
  static GgufValue scalar(T value) {
    GgufValue v;
    v.type_ = gguf_type_of<T>();
    if constexpr (std::is_same_v<T, bool>) {
      v.scalar_bits_ = value ? 1 : 0;
    } else {
      uint8_t bytes[8] = {};
      store_le(bytes, value);
      v.scalar_bits_ = load_le<uint64_t>(bytes);
    }
    return v;
  }
  // Builds a scalar from its raw little-endian bytes (as stored in a file).
  static GgufValue scalar_from_bytes(GgufValueType type, const uint8_t* bytes);

  static GgufValue string_view_of(std::string_view text);  // caller keeps `text` alive
  static GgufValue string(std::string text);               // owns its copy

  // Arrays of fixed-size scalars stored as packed little-endian bytes.
  static GgufValue scalar_array_view(GgufValueType element_type, std::span<const uint8_t> raw,
                                     uint64_t count);
  template <typename T>
  static GgufValue array(const std::vector<T>& values) {
    auto data = std::make_shared<ArrayData>();
    data->element_type = gguf_type_of<T>();
    data->count = values.size();
    data->owned_raw.resize(values.size() * sizeof(T));
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        data->owned_raw[i] = values[i] ? 1 : 0;
      } else {
        store_le(data->owned_raw.data() + i * sizeof(T), values[i]);
      }
    }
    data->raw = data->owned_raw;
    return from_array(std::move(data));
  }
  static GgufValue string_array_view(std::vector<std::string_view> views);
  static GgufValue string_array(std::vector<std::string> values);
  static GgufValue array_of_arrays(std::vector<GgufValue> arrays);

  GgufValueType type() const { return type_; }
  bool is_array() const { return type_ == GgufValueType::kArray; }
  bool is_string() const { return type_ == GgufValueType::kString; }

  // Scalar conversions: nullopt when the type does not convert without loss.
  std::optional<uint64_t> to_uint() const;  // any integer type, value >= 0
  std::optional<int64_t> to_int() const;    // any integer type, value <= INT64_MAX
  std::optional<double> to_double() const;  // f32 or f64
  std::optional<bool> to_bool() const;
  std::optional<std::string_view> to_string() const;
  uint64_t raw_scalar_bits() const { return scalar_bits_; }

  // Arrays. element_type() and array_size() are valid only when is_array().
  GgufValueType element_type() const;
  uint64_t array_size() const;
  std::span<const uint8_t> raw_elements() const;      // packed scalars; empty otherwise
  std::span<const std::string_view> strings() const;  // string arrays; empty otherwise
  std::span<const GgufValue> arrays() const;          // arrays of arrays; empty otherwise
  GgufValue element(uint64_t index) const;            // index < array_size()

  // Bytes this value occupies when written (type tags not included).
  uint64_t serialized_bytes() const;
  // One-line rendering for humans, arrays shortened to their first `max_elements` entries.
  std::string to_display_string(size_t max_elements = 8) const;

 private:
  struct ArrayData {
    GgufValueType element_type = GgufValueType::kUint8;
    uint64_t count = 0;
    std::span<const uint8_t> raw;
    std::vector<std::string_view> strings;
    std::vector<GgufValue> arrays;
    std::vector<uint8_t> owned_raw;
    std::vector<std::string> owned_strings;
  };
  static GgufValue from_array(std::shared_ptr<ArrayData> data);

  GgufValueType type_ = GgufValueType::kUint8;
  uint64_t scalar_bits_ = 0;
  std::string_view text_;
  // shared_ptr: owned payloads must outlive every copy of the value, and are never mutated.
  std::shared_ptr<const std::string> owned_text_;
  std::shared_ptr<const ArrayData> array_;
};

}  // namespace synapse
