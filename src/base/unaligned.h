// SPDX-License-Identifier: Apache-2.0
// Loads and stores of trivially copyable values at any byte address (binary headers and frames,
// where a field need not be aligned). memcpy is what compilers turn into one plain move; a cast
// pointer would be undefined behaviour. Byte order is the machine's (x86-64: little-endian, which
// every format read this way specifies).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace synapse {

template <typename T>
void store_unaligned(uint8_t* at, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(at, &value, sizeof value);
}

template <typename T>
T load_unaligned(const uint8_t* at) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace synapse
