// SPDX-License-Identifier: Apache-2.0
// Little-endian loads and stores of possibly unaligned values. GGUF and our packages are
// little-endian; Synapse targets little-endian x86-64 only, so these are plain copies.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace synapse {

static_assert(std::endian::native == std::endian::little, "Synapse assumes a little-endian host");

template <typename T>
T load_le(const uint8_t* src) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, src, sizeof(T));
  return value;
}

template <typename T>
void store_le(uint8_t* dst, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(dst, &value, sizeof(T));
}

}  // namespace synapse
