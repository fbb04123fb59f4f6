// SPDX-License-Identifier: Apache-2.0
#include "format/gguf/gguf_kv_codec.h"

#include <algorithm>
#include <unordered_map>

#include "base/utf8.h"

namespace synapse {
namespace {

constexpr uint64_t kMinNestedArrayBytes = 4 + 8;  // element type, count
constexpr uint64_t kMinStringBytes = 8;           // length of an empty string

Status error_at(ErrorCode code, uint64_t offset, std::string message) {
  return Status(code, std::move(message), ErrorWhere{.byte_offset = offset});
}

}  // namespace

GgufKvReader::GgufKvReader(std::span<const uint8_t> bytes, uint64_t begin, uint64_t end,
                           const GgufLimits& limits, std::string_view region)
    : bytes_(bytes.first(end)),
      pos_(begin),
      end_(end),
      max_pos_(begin),
      limits_(limits),
      region_(region) {}

Status GgufKvReader::need(uint64_t n, std::string_view what) {
  if (n > remaining()) {
    return error_at(ErrorCode::kFileTruncated, pos_,
                    region_ + " ends inside " + std::string(what) + " (needs " + std::to_string(n) +
                        " bytes, " + std::to_string(remaining()) + " left)");
  }
  max_pos_ = std::max(max_pos_, pos_ + n);
  return ok_status();
}

Result<std::string_view> GgufKvReader::read_string(uint64_t max_bytes, std::string_view what) {
  const uint64_t start = pos_;
  SYN_ASSIGN_OR_RETURN(const uint64_t length, read<uint64_t>(what));
  if (length > max_bytes) {
    return error_at(ErrorCode::kLimitExceeded, start,
                    std::string(what) + " length " + std::to_string(length) +
                        " exceeds the limit of " + std::to_string(max_bytes));
  }
  SYN_RETURN_IF_ERROR(need(length, what));
  const std::string_view text(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
  pos_ += length;
  return text;
}

Result<std::vector<GgufKeyValue>> GgufKvReader::read_key_values(uint64_t count) {
  std::vector<GgufKeyValue> entries;
  entries.reserve(count);
  std::unordered_map<std::string_view, uint64_t> seen;
  seen.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t key_at = pos_;
    SYN_ASSIGN_OR_RETURN(const std::string_view key, read_string(limits_.max_key_bytes, "key"));
    if (key.empty()) return error_at(ErrorCode::kBadValue, key_at, "empty metadata key");
    if (const auto bad = find_invalid_utf8(key)) {
      return error_at(ErrorCode::kInvalidUtf8, key_at + 8 + *bad,
                      "metadata key is not valid UTF-8");
    }
    if (!seen.emplace(key, key_at).second) {
      return Status(ErrorCode::kDuplicateKey,
                    "key appears twice (first at byte " + std::to_string(seen[key]) + ")",
                    ErrorWhere{.byte_offset = key_at, .key = std::string(key)});
    }
    const uint64_t type_at = pos_;
    SYN_ASSIGN_OR_RETURN(const uint32_t type_id, read<uint32_t>("value type"));
    const auto type = gguf_value_type_from_id(type_id);
    if (!type) {
      return Status(ErrorCode::kUnknownValueType, "unknown value type " + std::to_string(type_id),
                    ErrorWhere{.byte_offset = type_at, .key = std::string(key)});
    }
    Result<GgufValue> value = read_value(*type, 0);
    if (!value.ok()) return std::move(value).take_status().with_key(std::string(key));
    entries.push_back(GgufKeyValue{key, std::move(value).value(), key_at});
  }
  return entries;
}

Result<GgufValue> GgufKvReader::read_value(GgufValueType type, uint32_t depth) {
  if (type == GgufValueType::kString) {
    SYN_ASSIGN_OR_RETURN(const std::string_view text,
                         read_string(limits_.max_string_bytes, "string value"));
    return GgufValue::string_view_of(text);
  }
  if (type == GgufValueType::kArray) return read_array(depth);
  const uint32_t size = gguf_scalar_bytes(type);
  SYN_RETURN_IF_ERROR(need(size, "scalar value"));
  GgufValue value = GgufValue::scalar_from_bytes(type, bytes_.data() + pos_);
  pos_ += size;
  return value;
}

Result<GgufValue> GgufKvReader::read_array(uint32_t depth) {
  const uint64_t array_at = pos_;
  if (depth >= limits_.max_array_depth) {
    return error_at(ErrorCode::kLimitExceeded, array_at,
                    "arrays nested deeper than " + std::to_string(limits_.max_array_depth));
  }
  SYN_ASSIGN_OR_RETURN(const uint32_t type_id, read<uint32_t>("array element type"));
  const auto element_type = gguf_value_type_from_id(type_id);
  if (!element_type) {
    return error_at(ErrorCode::kUnknownValueType, array_at,
                    "unknown array element type " + std::to_string(type_id));
  }
  const uint64_t count_at = pos_;
  SYN_ASSIGN_OR_RETURN(const uint64_t count, read<uint64_t>("array length"));
  if (count > limits_.max_array_elements) {
    return error_at(ErrorCode::kLimitExceeded, count_at,
                    "array length " + std::to_string(count) + " exceeds the limit of " +
                        std::to_string(limits_.max_array_elements));
  }
  uint64_t min_element_bytes = gguf_scalar_bytes(*element_type);
  if (*element_type == GgufValueType::kString) min_element_bytes = kMinStringBytes;
  if (*element_type == GgufValueType::kArray) min_element_bytes = kMinNestedArrayBytes;
  // count <= 2^28 and min_element_bytes <= 12: no overflow.
  if (count * min_element_bytes > remaining()) {
    return error_at(ErrorCode::kFileTruncated, count_at,
                    "array of " + std::to_string(count) + " " +
                        std::string(gguf_value_type_name(*element_type)) +
                        " elements cannot fit in the " + std::to_string(remaining()) +
                        " bytes left");
  }
  if (*element_type == GgufValueType::kString) {
    std::vector<std::string_view> strings;
    strings.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      SYN_ASSIGN_OR_RETURN(const std::string_view s,
                           read_string(limits_.max_string_bytes, "string array element"));
      strings.push_back(s);
    }
    return GgufValue::string_array_view(std::move(strings));
  }
  if (*element_type == GgufValueType::kArray) {
    nested_arrays_ += count;
    if (nested_arrays_ > limits_.max_nested_arrays) {
      return error_at(ErrorCode::kLimitExceeded, array_at,
                      "more than " + std::to_string(limits_.max_nested_arrays) +
                          " nested arrays in the metadata");
    }
    std::vector<GgufValue> arrays;
    arrays.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      SYN_ASSIGN_OR_RETURN(GgufValue inner, read_array(depth + 1));
      arrays.push_back(std::move(inner));
    }
    return GgufValue::array_of_arrays(std::move(arrays));
  }
  const uint64_t raw_bytes = count * min_element_bytes;
  SYN_RETURN_IF_ERROR(need(raw_bytes, "array data"));
  const std::span<const uint8_t> raw = bytes_.subspan(pos_, raw_bytes);
  pos_ += raw_bytes;
  return GgufValue::scalar_array_view(*element_type, raw, count);
}

void append_gguf_string(std::vector<uint8_t>& out, std::string_view text) {
  append_le<uint64_t>(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
}

void append_gguf_value(std::vector<uint8_t>& out, const GgufValue& value) {
  switch (value.type()) {
    case GgufValueType::kString:
      append_gguf_string(out, *value.to_string());
      break;
    case GgufValueType::kArray: {
      append_le<uint32_t>(out, static_cast<uint32_t>(value.element_type()));
      append_le<uint64_t>(out, value.array_size());
      if (value.element_type() == GgufValueType::kString) {
        for (std::string_view s : value.strings()) append_gguf_string(out, s);
      } else if (value.element_type() == GgufValueType::kArray) {
        for (const GgufValue& inner : value.arrays()) append_gguf_value(out, inner);
      } else {
        const std::span<const uint8_t> raw = value.raw_elements();
        out.insert(out.end(), raw.begin(), raw.end());
      }
      break;
    }
    default: {
      uint8_t bytes[8];
      store_le(bytes, value.raw_scalar_bits());
      out.insert(out.end(), bytes, bytes + gguf_scalar_bytes(value.type()));
      break;
    }
  }
}

void append_gguf_key_value(std::vector<uint8_t>& out, std::string_view key,
                           const GgufValue& value) {
  append_gguf_string(out, key);
  append_le<uint32_t>(out, static_cast<uint32_t>(value.type()));
  append_gguf_value(out, value);
}

Status check_gguf_key(std::string_view key) {
  if (key.empty()) return Status(ErrorCode::kInvalidArgument, "empty metadata key");
  if (key.size() > 65535) {
    return Status(ErrorCode::kLimitExceeded, "metadata key longer than 65535 bytes");
  }
  if (!is_valid_utf8(key)) {
    return Status(ErrorCode::kInvalidUtf8, "metadata key is not valid UTF-8");
  }
  return ok_status();
}

}  // namespace synapse
