// SPDX-License-Identifier: Apache-2.0
// Overflow-checked integer arithmetic for sizes computed from untrusted input.
#pragma once

#include <cstdint>
#include <optional>

namespace synapse {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline constexpr bool is_power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Rounds `value` up to a multiple of `alignment` (a power of two), or nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t value, uint64_t alignment) {
  auto bumped = checked_add(value, alignment - 1);
  if (!bumped) return std::nullopt;
  return *bumped & ~(alignment - 1);
}

}  // namespace synapse
