// SPDX-License-Identifier: Apache-2.0
// Q8_0 weights interleaved eight rows to a vector on the AVX2 level's AVX-VNNI variant (CPUs with
// avx_vnni: Intel from Alder Lake on; q8_interleaved.h has the layout, the kernels and why). The
// levels are stored plus 128, unsigned as vpdpbusd multiplies them, and each of a lane's block
// sums starts at the column's correction -128 * sum(x), which makes it the sum over the values
// again, exactly: one vpdpbusd per slice, where the AVX2 level spends vpsignb, vpmaddubsw,
// vpmaddwd and vpaddd (and vpabsb per slice and group).
#include <cstring>

#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/q8_interleaved.h"

namespace synapse::avx2 {
namespace {

struct VnniSlices {
  static constexpr int kOffset = 128;
  struct Levels {
    __m256i unsigned_levels;
    explicit Levels(__m256i levels) : unsigned_levels(levels) {}
  };
  // The block's correction, first of the prepared column's per-block pair.
  static __m256i start(const uint8_t* block_pair) {
    int32_t correction;
    std::memcpy(&correction, block_pair, sizeof(correction));
    return _mm256_set1_epi32(correction);
  }
  static void add(__m256i& sum, const Levels& w, __m256i x) {
    sum = _mm256_dpbusd_avx_epi32(sum, w.unsigned_levels, x);
  }
};

}  // namespace

void fill_interleaved_dots_vnni(KernelTable& table) {
  q8::set_kernels<VnniSlices>(table.weights[static_cast<uint32_t>(TensorType::kQ8_0)].interleaved);
}

}  // namespace synapse::avx2
