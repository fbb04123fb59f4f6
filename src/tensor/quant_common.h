// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the reference quantizers: block sizes and the float-to-int roundings ggml
// uses, written so that non-finite input gives a defined (if meaningless) result instead of UB.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace synapse {

// Elements per block of the legacy formats (Q4_0 ... Q8_1) and per super-block of the K-quants.
inline constexpr size_t kQuantBlockElements = 32;
inline constexpr size_t kSuperBlockElements = 256;

// Round to nearest, ties to even: ggml's nearest_int (which adds 1.5 * 2^23 and reads the
// mantissa) for every |x| < 2^22, where both are defined. NaN gives 0.
inline int nearest_int(float x) {
  if (!(std::fabs(x) < 4194304.0f)) return std::isnan(x) ? 0 : (x > 0 ? 4194303 : -4194303);
  return static_cast<int>(std::nearbyint(x));
}

// C's truncating float-to-int conversion clamped to [lo, hi]; NaN gives lo.
inline int truncate_clamped(float x, int lo, int hi) {
  if (!(x > static_cast<float>(lo))) return lo;
  if (!(x < static_cast<float>(hi))) return hi;
  return static_cast<int>(x);
}

// roundf (half away from zero) clamped to [lo, hi]; NaN gives 0.
inline int round_away_clamped(float x, int lo, int hi) {
  if (std::isnan(x)) return 0;
  if (!(x > static_cast<float>(lo))) return lo;
  if (!(x < static_cast<float>(hi))) return hi;
  return static_cast<int>(std::round(x));
}

}  // namespace synapse
