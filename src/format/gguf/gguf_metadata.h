// SPDX-License-Identifier: Apache-2.0
// The key/value metadata of a GGUF file, in file order, with typed accessors that fail with a
// Status naming the key (missing_key, type_mismatch, bad_value) instead of asserting.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "format/gguf/gguf_value.h"

namespace synapse {

struct GgufKeyValue {
  std::string_view key;
  GgufValue value;
  uint64_t file_offset = 0;  // where the key starts in the file (0 for in-memory metadata)
};

class GgufMetadata {
 public:
  GgufMetadata() = default;
  // `entries` must have unique keys; the views must outlive this object.
  explicit GgufMetadata(std::vector<GgufKeyValue> entries);

  std::span<const GgufKeyValue> entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  const GgufValue* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  Result<std::string_view> get_string(std::string_view key) const;
  Result<uint32_t> get_u32(std::string_view key) const;  // any integer type whose value fits
  Result<uint64_t> get_u64(std::string_view key) const;
  Result<int64_t> get_i64(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;  // f32 or f64
  Result<bool> get_bool(std::string_view key) const;

  // Missing key: the fallback. Present with the wrong type: an error.
  Result<uint32_t> get_u32_or(std::string_view key, uint32_t fallback) const;
  Result<float> get_f32_or(std::string_view key, float fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string_view> get_string_or(std::string_view key, std::string_view fallback) const;

  Result<std::span<const std::string_view>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<int32_t>> get_i32_array(std::string_view key) const;  // any integer type

  // general.architecture, and "<architecture>.<suffix>".
  Result<std::string_view> architecture() const;
  Result<std::string> arch_key(std::string_view suffix) const;

 private:
  std::vector<GgufKeyValue> entries_;
  std::unordered_map<std::string_view, size_t> index_;
};

}  // namespace synapse
