// SPDX-License-Identifier: Apache-2.0
#include "format/gguf/gguf_value.h"

#include <array>
#include <cstdio>
#include <limits>

#include "base/check.h"

namespace synapse {
namespace {

struct ValueTypeInfo {
  GgufValueType type;
  std::string_view name;
  uint32_t bytes;
};

constexpr std::array kValueTypes = {
    ValueTypeInfo{GgufValueType::kUint8, "u8", 1},
    ValueTypeInfo{GgufValueType::kInt8, "i8", 1},
    ValueTypeInfo{GgufValueType::kUint16, "u16", 2},
    ValueTypeInfo{GgufValueType::kInt16, "i16", 2},
    ValueTypeInfo{GgufValueType::kUint32, "u32", 4},
    ValueTypeInfo{GgufValueType::kInt32, "i32", 4},
    ValueTypeInfo{GgufValueType::kFloat32, "f32", 4},
    ValueTypeInfo{GgufValueType::kBool, "bool", 1},
    ValueTypeInfo{GgufValueType::kString, "string", 0},
    ValueTypeInfo{GgufValueType::kArray, "array", 0},
    ValueTypeInfo{GgufValueType::kUint64, "u64", 8},
    ValueTypeInfo{GgufValueType::kInt64, "i64", 8},
    ValueTypeInfo{GgufValueType::kFloat64, "f64", 8},
};

bool is_signed_integer(GgufValueType t) {
  return t == GgufValueType::kInt8 || t == GgufValueType::kInt16 || t == GgufValueType::kInt32 ||
         t == GgufValueType::kInt64;
}
bool is_unsigned_integer(GgufValueType t) {
  return t == GgufValueType::kUint8 || t == GgufValueType::kUint16 || t == GgufValueType::kUint32 ||
         t == GgufValueType::kUint64;
}

// Sign-extends the raw bits of a signed scalar to int64.
int64_t signed_value(GgufValueType t, uint64_t bits) {
  switch (t) {
    case GgufValueType::kInt8:
      return static_cast<int8_t>(static_cast<uint8_t>(bits));
    case GgufValueType::kInt16:
      return static_cast<int16_t>(static_cast<uint16_t>(bits));
    case GgufValueType::kInt32:
      return static_cast<int32_t>(static_cast<uint32_t>(bits));
    default:
      return static_cast<int64_t>(bits);
  }
}

std::string format_double(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  return buffer;
}

// Renders a string for display: quotes, and escapes for control characters.
std::string quote(std::string_view text, size_t max_bytes = 120) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const char c = text[i];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out + "\"";
}

}  // namespace

std::optional<GgufValueType> gguf_value_type_from_id(uint32_t id) {
  for (const ValueTypeInfo& info : kValueTypes) {
    if (static_cast<uint32_t>(info.type) == id) return info.type;
  }
  return std::nullopt;
}

std::string_view gguf_value_type_name(GgufValueType type) {
  for (const ValueTypeInfo& info : kValueTypes) {
    if (info.type == type) return info.name;
  }
  return "invalid";
}

uint32_t gguf_scalar_bytes(GgufValueType type) {
  for (const ValueTypeInfo& info : kValueTypes) {
    if (info.type == type) return info.bytes;
  }
  return 0;
}

GgufValue GgufValue::scalar_from_bytes(GgufValueType type, const uint8_t* bytes) {
  const uint32_t size = gguf_scalar_bytes(type);
  SYN_CHECK(size > 0, "scalar_from_bytes needs a scalar type");
  GgufValue v;
  v.type_ = type;
  uint8_t padded[8] = {};
  std::memcpy(padded, bytes, size);
  v.scalar_bits_ = load_le<uint64_t>(padded);
  if (type == GgufValueType::kBool) v.scalar_bits_ = v.scalar_bits_ != 0 ? 1 : 0;
  return v;
}

GgufValue GgufValue::string_view_of(std::string_view text) {
  GgufValue v;
  v.type_ = GgufValueType::kString;
  v.text_ = text;
  return v;
}

GgufValue GgufValue::string(std::string text) {
  GgufValue v;
  v.type_ = GgufValueType::kString;
  v.owned_text_ = std::make_shared<const std::string>(std::move(text));
  v.text_ = *v.owned_text_;
  return v;
}

GgufValue GgufValue::from_array(std::shared_ptr<ArrayData> data) {
  GgufValue v;
  v.type_ = GgufValueType::kArray;
  v.array_ = std::move(data);
  return v;
}

GgufValue GgufValue::scalar_array_view(GgufValueType element_type, std::span<const uint8_t> raw,
                                       uint64_t count) {
  SYN_CHECK(
      gguf_scalar_bytes(element_type) > 0 && raw.size() == count * gguf_scalar_bytes(element_type),
      "scalar_array_view: raw size does not match count");
  auto data = std::make_shared<ArrayData>();
  data->element_type = element_type;
  data->count = count;
  data->raw = raw;
  return from_array(std::move(data));
}

GgufValue GgufValue::string_array_view(std::vector<std::string_view> views) {
  auto data = std::make_shared<ArrayData>();
  data->element_type = GgufValueType::kString;
  data->count = views.size();
  data->strings = std::move(views);
  return from_array(std::move(data));
}

GgufValue GgufValue::string_array(std::vector<std::string> values) {
  auto data = std::make_shared<ArrayData>();
  data->element_type = GgufValueType::kString;
  data->count = values.size();
  data->owned_strings = std::move(values);
  data->strings.reserve(data->owned_strings.size());
  for (const std::string& s : data->owned_strings) data->strings.emplace_back(s);
  return from_array(std::move(data));
}

GgufValue GgufValue::array_of_arrays(std::vector<GgufValue> arrays) {
  for (const GgufValue& a : arrays) SYN_CHECK(a.is_array(), "array_of_arrays needs arrays");
  auto data = std::make_shared<ArrayData>();
  data->element_type = GgufValueType::kArray;
  data->count = arrays.size();
  data->arrays = std::move(arrays);
  return from_array(std::move(data));
}

std::optional<uint64_t> GgufValue::to_uint() const {
  if (is_unsigned_integer(type_)) return scalar_bits_;
  if (is_signed_integer(type_)) {
    const int64_t v = signed_value(type_, scalar_bits_);
    if (v < 0) return std::nullopt;
    return static_cast<uint64_t>(v);
  }
  return std::nullopt;
}

std::optional<int64_t> GgufValue::to_int() const {
  if (is_signed_integer(type_)) return signed_value(type_, scalar_bits_);
  if (is_unsigned_integer(type_)) {
    if (scalar_bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<int64_t>(scalar_bits_);
  }
  return std::nullopt;
}

std::optional<double> GgufValue::to_double() const {
  if (type_ == GgufValueType::kFloat32) {
    const auto bits = static_cast<uint32_t>(scalar_bits_);
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return static_cast<double>(f);
  }
  if (type_ == GgufValueType::kFloat64) {
    double d;
    std::memcpy(&d, &scalar_bits_, sizeof(d));
    return d;
  }
  return std::nullopt;
}

std::optional<bool> GgufValue::to_bool() const {
  if (type_ != GgufValueType::kBool) return std::nullopt;
  return scalar_bits_ != 0;
}

std::optional<std::string_view> GgufValue::to_string() const {
  if (type_ != GgufValueType::kString) return std::nullopt;
  return text_;
}

GgufValueType GgufValue::element_type() const {
  SYN_CHECK(is_array(), "element_type() of a non-array");
  return array_->element_type;
}

uint64_t GgufValue::array_size() const {
  SYN_CHECK(is_array(), "array_size() of a non-array");
  return array_->count;
}

std::span<const uint8_t> GgufValue::raw_elements() const {
  return is_array() ? array_->raw : std::span<const uint8_t>{};
}

std::span<const std::string_view> GgufValue::strings() const {
  return is_array() ? std::span<const std::string_view>(array_->strings)
                    : std::span<const std::string_view>{};
}

std::span<const GgufValue> GgufValue::arrays() const {
  return is_array() ? std::span<const GgufValue>(array_->arrays) : std::span<const GgufValue>{};
}

GgufValue GgufValue::element(uint64_t index) const {
  SYN_CHECK(is_array() && index < array_->count, "array element index out of range");
  switch (array_->element_type) {
    case GgufValueType::kString:
      return string_view_of(array_->strings[index]);
    case GgufValueType::kArray:
      return array_->arrays[index];
    default: {
      const uint32_t size = gguf_scalar_bytes(array_->element_type);
      return scalar_from_bytes(array_->element_type, array_->raw.data() + index * size);
    }
  }
}

uint64_t GgufValue::serialized_bytes() const {
  switch (type_) {
    case GgufValueType::kString:
      return 8 + text_.size();
    case GgufValueType::kArray: {
      uint64_t total = 4 + 8;  // element type + count
      switch (array_->element_type) {
        case GgufValueType::kString:
          for (std::string_view s : array_->strings) total += 8 + s.size();
          break;
        case GgufValueType::kArray:
          for (const GgufValue& a : array_->arrays) total += a.serialized_bytes();  // no type tag
          break;
        default:
          total += array_->raw.size();
          break;
      }
      return total;
    }
    default:
      return gguf_scalar_bytes(type_);
  }
}

std::string GgufValue::to_display_string(size_t max_elements) const {
  switch (type_) {
    case GgufValueType::kString:
      return quote(text_);
    case GgufValueType::kBool:
      return scalar_bits_ != 0 ? "true" : "false";
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64:
      return format_double(*to_double());
    case GgufValueType::kArray: {
      std::string out = "[";
      const uint64_t shown = std::min<uint64_t>(array_->count, max_elements);
      for (uint64_t i = 0; i < shown; ++i) {
        if (i > 0) out += ", ";
        out += element(i).to_display_string(max_elements);
      }
      if (array_->count > shown) out += ", ... (" + std::to_string(array_->count) + " total)";
      return out + "]";
    }
    default:
      if (is_signed_integer(type_)) return std::to_string(signed_value(type_, scalar_bits_));
      return std::to_string(scalar_bits_);
  }
}

}  // namespace synapse
