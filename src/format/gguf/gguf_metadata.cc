// SPDX-License-Identifier: Apache-2.0
#include "format/gguf/gguf_metadata.h"

#include <cmath>
#include <limits>

#include "format/gguf/gguf_keys.h"

namespace synapse {
namespace {

Status missing(std::string_view key) {
  return Status(ErrorCode::kMissingKey, "required metadata key is missing",
                ErrorWhere{.key = std::string(key)});
}

Status wrong_type(std::string_view key, const GgufValue& value, std::string_view wanted) {
  std::string actual(gguf_value_type_name(value.type()));
  if (value.is_array()) actual += " of " + std::string(gguf_value_type_name(value.element_type()));
  return Status(ErrorCode::kTypeMismatch, "expected " + std::string(wanted) + ", found " + actual,
                ErrorWhere{.key = std::string(key)});
}

Status out_of_range(std::string_view key, std::string_view what) {
  return Status(ErrorCode::kBadValue, std::string(what), ErrorWhere{.key = std::string(key)});
}

}  // namespace

GgufMetadata::GgufMetadata(std::vector<GgufKeyValue> entries) : entries_(std::move(entries)) {
  index_.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    const bool inserted = index_.emplace(entries_[i].key, i).second;
    SYN_CHECK(inserted, "GgufMetadata built with duplicate keys");
  }
}

const GgufValue* GgufMetadata::find(std::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].value;
}

Result<std::string_view> GgufMetadata::get_string(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  if (!value->is_string()) return wrong_type(key, *value, "string");
  return *value->to_string();
}

Result<uint64_t> GgufMetadata::get_u64(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  if (const auto v = value->to_uint()) return *v;
  if (value->to_int()) return out_of_range(key, "negative value where a count is expected");
  return wrong_type(key, *value, "an integer");
}

Result<uint32_t> GgufMetadata::get_u32(std::string_view key) const {
  SYN_ASSIGN_OR_RETURN(const uint64_t v, get_u64(key));
  if (v > std::numeric_limits<uint32_t>::max()) return out_of_range(key, "value exceeds 32 bits");
  return static_cast<uint32_t>(v);
}

Result<int64_t> GgufMetadata::get_i64(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  if (const auto v = value->to_int()) return *v;
  if (value->to_uint()) return out_of_range(key, "value exceeds the signed 64-bit range");
  return wrong_type(key, *value, "an integer");
}

Result<float> GgufMetadata::get_f32(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  const auto v = value->to_double();
  if (!v) return wrong_type(key, *value, "a float");
  if (value->type() == GgufValueType::kFloat64 && std::isfinite(*v) &&
      std::fabs(*v) > static_cast<double>(std::numeric_limits<float>::max())) {
    return out_of_range(key, "value exceeds the float range");
  }
  return static_cast<float>(*v);
}

Result<bool> GgufMetadata::get_bool(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  if (const auto v = value->to_bool()) return *v;
  return wrong_type(key, *value, "bool");
}

Result<uint32_t> GgufMetadata::get_u32_or(std::string_view key, uint32_t fallback) const {
  if (!contains(key)) return fallback;
  return get_u32(key);
}

Result<float> GgufMetadata::get_f32_or(std::string_view key, float fallback) const {
  if (!contains(key)) return fallback;
  return get_f32(key);
}

Result<bool> GgufMetadata::get_bool_or(std::string_view key, bool fallback) const {
  if (!contains(key)) return fallback;
  return get_bool(key);
}

Result<std::string_view> GgufMetadata::get_string_or(std::string_view key,
                                                     std::string_view fallback) const {
  if (!contains(key)) return fallback;
  return get_string(key);
}

Result<std::span<const std::string_view>> GgufMetadata::get_string_array(
    std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  if (!value->is_array() || value->element_type() != GgufValueType::kString) {
    return wrong_type(key, *value, "array of string");
  }
  return value->strings();
}

Result<std::vector<float>> GgufMetadata::get_f32_array(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  if (!value->is_array() || (value->element_type() != GgufValueType::kFloat32 &&
                             value->element_type() != GgufValueType::kFloat64)) {
    return wrong_type(key, *value, "array of f32");
  }
  std::vector<float> out;
  out.reserve(value->array_size());
  for (uint64_t i = 0; i < value->array_size(); ++i) {
    out.push_back(static_cast<float>(*value->element(i).to_double()));
  }
  return out;
}

Result<std::vector<int32_t>> GgufMetadata::get_i32_array(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return missing(key);
  if (!value->is_array() || value->element_type() == GgufValueType::kString ||
      value->element_type() == GgufValueType::kArray ||
      value->element_type() == GgufValueType::kFloat32 ||
      value->element_type() == GgufValueType::kFloat64 ||
      value->element_type() == GgufValueType::kBool) {
    return wrong_type(key, *value, "array of integers");
  }
  std::vector<int32_t> out;
  out.reserve(value->array_size());
  for (uint64_t i = 0; i < value->array_size(); ++i) {
    const auto v = value->element(i).to_int();
    if (!v || *v < std::numeric_limits<int32_t>::min() ||
        *v > std::numeric_limits<int32_t>::max()) {
      return out_of_range(key, "element " + std::to_string(i) + " exceeds the i32 range");
    }
    out.push_back(static_cast<int32_t>(*v));
  }
  return out;
}

Result<std::string_view> GgufMetadata::architecture() const {
  return get_string(gguf_key::kArchitecture);
}

Result<std::string> GgufMetadata::arch_key(std::string_view suffix) const {
  SYN_ASSIGN_OR_RETURN(const std::string_view arch, architecture());
  return gguf_key::arch_key(arch, suffix);
}

}  // namespace synapse
