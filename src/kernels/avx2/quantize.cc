// SPDX-License-Identifier: Apache-2.0
// AVX2 activation quantizers, byte-identical to the reference quantizers (tensor/): the same
// float operations in the same order, with the reference's roundings reproduced exactly --
// round half away from zero for Q8_0 (ggml's roundf), ties to even for Q8_K (nearest_int).
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/simd_avx2.h"

namespace synapse::avx2 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// roundf: truncate, then step away from zero when the dropped fraction is at least one half
// (the fraction v - trunc(v) is exact).
inline __m256 round_half_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = abs_ps(_mm256_sub_ps(v, t));
  const __m256 step =
      _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                    _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f))));
  return _mm256_add_ps(t, step);
}

// Four vectors of eight int32 (each in -128..127) to 32 int8 in order.
inline __m256i pack_32(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // lanes interleaved by 128-bit halves
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void quantize_q8_0(const float* x, uint8_t* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    uint8_t* yb = y + 34 * b;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(xb + 8 * i);
      amax = _mm256_max_ps(amax, abs_ps(v[i]));
    }
    const float d = hmax(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const auto d16 = static_cast<uint16_t>(
        _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT), 0));
    std::memcpy(yb, &d16, sizeof(d16));
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      q[i] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[i], _mm256_set1_ps(id))));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(yb + 2), pack_32(q[0], q[1], q[2], q[3]));
  }
}

void quantize_q8_k(const float* x, uint8_t* y, size_t n) {
  for (size_t b = 0; b < n / 256; ++b) {
    const float* xb = x + 256 * b;
    uint8_t* yb = y + 292 * b;
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) amax = _mm256_max_ps(amax, abs_ps(_mm256_loadu_ps(xb + 8 * i)));
    const float a = hmax(amax);
    if (a == 0.0f) {
      std::memset(yb, 0, 292);
      continue;
    }
    // The reference scales by the first element of largest magnitude, keeping its sign.
    float max = 0.0f;
    for (int i = 0; i < 32; ++i) {
      const __m256 v = _mm256_loadu_ps(xb + 8 * i);
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v), _mm256_set1_ps(a), _CMP_EQ_OQ));
      if (hit != 0) {
        max = xb[8 * i + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 scale = _mm256_set1_ps(iscale);
    int16_t bsums[16];
    for (int s = 0; s < 8; ++s) {  // 32 elements (two 16-element sums) per step
      __m256i q[4];
      for (int i = 0; i < 4; ++i) {
        q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + 32 * s + 8 * i), scale));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(yb + 4 + 32 * s),
                          pack_32(q[0], q[1], q[2], q[3]));  // saturates 128 to 127 like MIN
      const __m256i cap = _mm256_set1_epi32(127);
      const __m256i lo = _mm256_add_epi32(_mm256_min_epi32(q[0], cap), _mm256_min_epi32(q[1], cap));
      const __m256i hi = _mm256_add_epi32(_mm256_min_epi32(q[2], cap), _mm256_min_epi32(q[3], cap));
      bsums[2 * s] = static_cast<int16_t>(hsum_i32(lo));
      bsums[2 * s + 1] = static_cast<int16_t>(hsum_i32(hi));
    }
    std::memcpy(yb + 260, bsums, sizeof(bsums));
    const float d = 1.0f / iscale;
    std::memcpy(yb, &d, sizeof(d));
  }
}

}  // namespace

void fill_quantizers(KernelTable& table) {
  table.quantize_q8_0 = quantize_q8_0;
  table.quantize_q8_k = quantize_q8_k;
}

}  // namespace synapse::avx2
