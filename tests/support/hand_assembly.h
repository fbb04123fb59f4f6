// SPDX-License-Identifier: Apache-2.0
// Byte building blocks for tests that hand-assemble files (the malformed GGUF and package
// suites): little-endian scalars, GGUF strings, concatenation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "format/byte_order.h"

namespace synapse::testing {

using Bytes = std::vector<uint8_t>;

// Buffers are sized up front: GCC 12 at -O2 misreads insert() into a fresh vector as an
// overflow.
template <typename T>
Bytes le(T value) {
  Bytes out(sizeof(T));
  store_le(out.data(), value);
  return out;
}

// A GGUF string: u64 length, then the bytes.
inline Bytes str(std::string_view text) {
  Bytes out(8 + text.size());
  store_le(out.data(), static_cast<uint64_t>(text.size()));
  std::copy(text.begin(), text.end(), out.begin() + 8);
  return out;
}

inline Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline Bytes repeat(const Bytes& part, size_t times) {
  Bytes out;
  for (size_t i = 0; i < times; ++i) out.insert(out.end(), part.begin(), part.end());
  return out;
}

}  // namespace synapse::testing
