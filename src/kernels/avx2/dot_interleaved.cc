// SPDX-License-Identifier: Apache-2.0
// Q8_0 weights interleaved eight rows to a vector on the AVX2 level (q8_interleaved.h has the
// layout, the kernels and why): a slice's products join a lane's sum as vpsignb, vpmaddubsw,
// vpmaddwd and vpaddd -- |w| times x signed by w, since vpmaddubsw multiplies unsigned by signed
// bytes, whose pairs of products (at most 2 x 127 x 127) fit its sixteen bits.
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/q8_interleaved.h"

namespace synapse::avx2 {
namespace {

struct SignedSlices {
  static constexpr int kOffset = 0;  // the levels are the values
  // A slice of eight rows' levels, with their magnitudes (computed once for every column).
  struct Levels {
    __m256i q;
    __m256i magnitude;
    explicit Levels(__m256i levels) : q(levels), magnitude(_mm256_abs_epi8(levels)) {}
  };
  static __m256i start(const uint8_t* /*block_pair*/) { return _mm256_setzero_si256(); }
  static void add(__m256i& sum, const Levels& w, __m256i x) {
    const __m256i products = _mm256_maddubs_epi16(w.magnitude, _mm256_sign_epi8(x, w.q));
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(products, _mm256_set1_epi16(1)));
  }
};

}  // namespace

void fill_interleaved_dots(KernelTable& table) {
  q8::set_kernels<SignedSlices>(
      table.weights[static_cast<uint32_t>(TensorType::kQ8_0)].interleaved);
}

}  // namespace synapse::avx2
