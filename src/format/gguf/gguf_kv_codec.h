// SPDX-License-Identifier: Apache-2.0
// GGUF's key/value encoding, shared by every format that stores metadata this way: GGUF files and
// the manifest of `.synapse` packages. The reader is a bounded cursor: every read is checked
// against the end of its region, every count against GgufLimits and the bytes left, and errors
// carry the byte offset (in the whole buffer) where the offending item starts.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/byte_order.h"
#include "format/gguf/gguf_limits.h"
#include "format/gguf/gguf_metadata.h"
#include "format/gguf/gguf_value.h"

namespace synapse {

// Smallest possible encoding of one key/value pair: key length, a 1-byte key, type, a u8 value.
inline constexpr uint64_t kGgufMinKeyValueBytes = 8 + 1 + 4 + 1;

class GgufKvReader {
 public:
  // Reads `bytes` from `begin` up to `end` (<= bytes.size()); `region` names the region in
  // messages ("file ends inside key", "manifest ends inside key").
  GgufKvReader(std::span<const uint8_t> bytes, uint64_t begin, uint64_t end,
               const GgufLimits& limits, std::string_view region = "file");

  uint64_t pos() const { return pos_; }
  uint64_t end() const { return end_; }
  uint64_t remaining() const { return end_ - pos_; }
  // The furthest offset any read looked at.
  uint64_t max_pos() const { return max_pos_; }

  // kFileTruncated when `n` bytes are not left.
  Status need(uint64_t n, std::string_view what);
  template <typename T>
  Result<T> read(std::string_view what) {
    SYN_RETURN_IF_ERROR(need(sizeof(T), what));
    const T value = load_le<T>(bytes_.data() + pos_);
    pos_ += sizeof(T);
    return value;
  }
  // A GGUF string: u64 length then bytes. Lengths above `max_bytes` fail with kLimitExceeded.
  Result<std::string_view> read_string(uint64_t max_bytes, std::string_view what);

  // Reads `count` key/value pairs, which the caller has checked against its count limit and
  // against remaining() (kGgufMinKeyValueBytes each). Keys are non-empty UTF-8 and unique; values
  // are views into `bytes`.
  Result<std::vector<GgufKeyValue>> read_key_values(uint64_t count);

 private:
  Result<GgufValue> read_value(GgufValueType type, uint32_t depth);
  Result<GgufValue> read_array(uint32_t depth);

  std::span<const uint8_t> bytes_;
  uint64_t pos_;
  uint64_t end_;
  uint64_t max_pos_;
  const GgufLimits& limits_;
  std::string region_;
  uint64_t nested_arrays_ = 0;
};

// Encoding: little-endian scalars, u64-length strings, values without their type tag, and whole
// key/value pairs (key, u32 type, value), appended to `out`.
template <typename T>
void append_le(std::vector<uint8_t>& out, T value) {
  uint8_t bytes[sizeof(T)];
  store_le(bytes, value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}
void append_gguf_string(std::vector<uint8_t>& out, std::string_view text);
void append_gguf_value(std::vector<uint8_t>& out, const GgufValue& value);
void append_gguf_key_value(std::vector<uint8_t>& out, std::string_view key, const GgufValue& value);
// Bytes append_gguf_key_value() appends.
inline uint64_t gguf_key_value_bytes(std::string_view key, const GgufValue& value) {
  return 8 + key.size() + 4 + value.serialized_bytes();
}

// What a writer accepts as a key: non-empty UTF-8 of at most 65535 bytes.
Status check_gguf_key(std::string_view key);

}  // namespace synapse
