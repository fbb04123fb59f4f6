// SPDX-License-Identifier: Apache-2.0
// Q4_0, Q4_1, Q5_0 and Q5_1 interleaved rows (nibbles_interleaved.h) on the AVX2 level's AVX-VNNI
// variant: a slice's four- or five-bit levels, unsigned as stored, go into the lane's 32-bit sum
// by one vpdpbusd, where AVX2 spends vpmaddubsw, a sixteen-bit add and a share of vpmaddwd. The
// layout, the prepared columns and the arithmetic (exact integer sums, then the reference's
// scaling in its order) are the AVX2 kernels', so the rows interleaved at load serve both.
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/nibbles_interleaved.h"

namespace synapse::avx2::nibbles {
namespace {

struct DotProducts {
  static constexpr bool kPairs = false;
  static void add(__m256i& sum, __m256i low, __m256i x_low, __m256i high, __m256i x_high) {
    sum = _mm256_dpbusd_avx_epi32(sum, low, x_low);
    sum = _mm256_dpbusd_avx_epi32(sum, high, x_high);
    in_order(sum);
  }
};

template <typename W>
void set_dot(KernelTable& table) {
  table.weights[static_cast<uint32_t>(W::kType)].interleaved.dot = dot<DotProducts, W>;
}

}  // namespace
}  // namespace synapse::avx2::nibbles

namespace synapse::avx2 {

// After fill_interleaved_nibble_dots: the layout and its other entries are the AVX2 level's.
void fill_interleaved_nibble_dots_vnni(KernelTable& table) {
  nibbles::set_dot<nibbles::Q4_0>(table);
  nibbles::set_dot<nibbles::Q4_1>(table);
  nibbles::set_dot<nibbles::Q5_0>(table);
  nibbles::set_dot<nibbles::Q5_1>(table);
}

}  // namespace synapse::avx2
