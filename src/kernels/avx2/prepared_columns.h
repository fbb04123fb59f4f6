// SPDX-License-Identifier: Apache-2.0
// Q8_0 activation columns prepared for the interleaved kernels (AVX2's q8_interleaved.h and
// nibbles_interleaved.h, AVX-512 VNNI's dot_interleaved_vnni.cc): the k int8 values, 64-byte
// aligned, then per block {int32 correction, float dx} -- the correction -offset * sum(x) makes
// a sum over levels (value + offset) a sum over values, exactly (0 where the levels are the
// values, as AVX2's Q8_0 keeps them) -- or,
// for the types with a min, whose levels are their values, {float sum(x), float dx} for the
// min's term. Internal linkage, like simd_avx2.h: each ISA's translation unit keeps its copy.
#pragma once

#include <cstring>

#include "kernels/avx2/simd_avx2.h"

namespace synapse::simd {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

struct PreparedColumn {
  static constexpr size_t kBlock = 32;       // elements of a Q8_0 block
  static constexpr size_t kBlockBytes = 34;  // BlockQ8_0: F16 d, 32 int8
  size_t blocks;                             // byte offset of the per-block pairs
  size_t bytes;
  explicit PreparedColumn(size_t k)
      : blocks((k + 63) / 64 * 64), bytes(blocks + (k / kBlock * 8 + 63) / 64 * 64) {}
};

inline size_t prepared_column_bytes(size_t k) { return PreparedColumn(k).bytes; }

template <int kOffset, bool kMin>
void prepare_column(const uint8_t* x, size_t k, uint8_t* out) {
  constexpr size_t kBlock = PreparedColumn::kBlock;
  const PreparedColumn p(k);
  std::memset(out, 0, p.bytes);
  for (size_t b = 0; b < k / kBlock; ++b) {
    const uint8_t* block = x + b * PreparedColumn::kBlockBytes;
    std::memcpy(out + b * kBlock, block + 2, kBlock);
    int32_t sum = 0;
    for (size_t e = 0; e < kBlock; ++e) sum += static_cast<int8_t>(block[2 + e]);
    const float dx = f16_to_f32(load_u16(block));
    if constexpr (kMin) {
      const auto sum_x = static_cast<float>(sum);
      std::memcpy(out + p.blocks + 8 * b, &sum_x, 4);
    } else {
      const int32_t correction = -kOffset * sum;
      std::memcpy(out + p.blocks + 8 * b, &correction, 4);
    }
    std::memcpy(out + p.blocks + 8 * b + 4, &dx, 4);
  }
}

}  // namespace
}  // namespace synapse::simd
