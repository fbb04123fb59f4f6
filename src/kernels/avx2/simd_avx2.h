// SPDX-License-Identifier: Apache-2.0
// Small AVX2 helpers shared by the AVX2 translation units (and included by the AVX-512 ones,
// which are compiled with a superset of the flags). Everything here has internal linkage
// (an unnamed namespace), so no copy of it compiled with ISA flags can be picked by the linker
// for baseline code.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"

namespace synapse::simd {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

// libm through the builtins: <cmath>'s std::exp(float) and friends are inline functions, and a
// copy compiled with ISA flags must not be emitted (see kernels/README.md).
inline float scalar_exp(float x) { return __builtin_expf(x); }
inline float scalar_tanh(float x) { return __builtin_tanhf(x); }
inline double scalar_sqrt(double x) { return __builtin_sqrt(x); }

// Runs fn.template operator()<C>(c) over column blocks [c, c + C) of n_cols: blocks of kMax,
// then of 2, then single columns (the register-blocked kernels are instantiated for those C).
template <size_t kMax, typename Fn>
inline void for_column_blocks(size_t n_cols, Fn&& fn) {
  size_t c = 0;
  for (; c + kMax <= n_cols; c += kMax) fn.template operator()<kMax>(c);
  if constexpr (kMax > 2) {
    for (; c + 2 <= n_cols; c += 2) fn.template operator()<2>(c);
  }
  for (; c < n_cols; ++c) fn.template operator()<1>(c);
}

// Decode of a one-column tile over kStreams far-apart rows side by side: calls
// streams(w, y) with the weight rows and outputs of rows (i, i + part, i + 2 part, ...) for each
// i < part = n_rows / kStreams, then single(w, y) for each row left over.
template <size_t kStreams, typename Streams, typename Single>
inline void for_row_streams(const DotTile& t, Streams&& streams, Single&& single) {
  const size_t part = t.n_rows / kStreams;
  for (size_t i = 0; i < part; ++i) {
    const uint8_t* w[kStreams];
    float* y[kStreams];
    for (size_t p = 0; p < kStreams; ++p) {
      w[p] = t.w + (p * part + i) * t.w_stride;
      y[p] = t.y + p * part + i;
    }
    streams(w, y);
  }
  for (size_t r = kStreams * part; r < t.n_rows; ++r) single(t.w + r * t.w_stride, t.y + r);
}

inline float hsum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  __m128 s = _mm_add_ps(lo, hi);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t hsum_i32(__m256i v) {
  const __m128i lo = _mm256_castsi256_si128(v);
  const __m128i hi = _mm256_extracti128_si256(v, 1);
  __m128i s = _mm_add_epi32(lo, hi);
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The sixteen 6-bit Q3_K scales (12 bytes: low nibbles in bytes 0-7, two per byte, high bit
// pairs in bytes 8-11) as 16 bytes, before subtracting 32.
inline __m128i q3_k_scale_bytes(const uint8_t* s) {
  const uint32_t a0 = load_u32(s), a1 = load_u32(s + 4), tmp = load_u32(s + 8);
  const uint32_t s0 = (a0 & 0x0F0F0F0Fu) | ((tmp & 0x03030303u) << 4);
  const uint32_t s1 = (a1 & 0x0F0F0F0Fu) | (((tmp >> 2) & 0x03030303u) << 4);
  const uint32_t s2 = ((a0 >> 4) & 0x0F0F0F0Fu) | (((tmp >> 4) & 0x03030303u) << 4);
  const uint32_t s3 = ((a1 >> 4) & 0x0F0F0F0Fu) | (((tmp >> 6) & 0x03030303u) << 4);
  return _mm_setr_epi32(static_cast<int>(s0), static_cast<int>(s1), static_cast<int>(s2),
                        static_cast<int>(s3));
}

// The eight IQ4_XS sub-block scales ls - 32 of a super-block starting at b, each written twice
// as int16 (16 words, one per 16-element half): ls = nibble s of scales_l (bytes 4-7) | bits
// 2s, 2s + 1 of scales_h (bytes 2-3) << 4.
inline __m256i iq4_xs_scales_twice(const uint8_t* b) {
  const __m256i low = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(load_u32(b + 4))),
                                        _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
  const __m256i high = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(load_u16(b + 2))),
                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
  const __m256i ls = _mm256_sub_epi32(
      _mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi32(0x0F)),
                      _mm256_slli_epi32(_mm256_and_si256(high, _mm256_set1_epi32(3)), 4)),
      _mm256_set1_epi32(32));
  // ls is in -32..31: its low word, copied into the high word, is the same int16 twice.
  return _mm256_or_si256(_mm256_and_si256(ls, _mm256_set1_epi32(0xFFFF)),
                         _mm256_slli_epi32(ls, 16));
}

// The sixteen IQ4_NL/IQ4_XS values (ggml's kvalues_iq4nl, tensor/quant_iq4.h) as a vpshufb
// table, signed; iq4_levels_table() is the same biased by 128 (unsigned levels 1..241).
inline __m128i iq4_values_table() {
  return _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}
inline __m128i iq4_levels_table() {
  return _mm_xor_si128(iq4_values_table(), _mm_set1_epi8(static_cast<char>(0x80)));
}

// An empty asm that takes v and gives it back in a register: the adds before it happen before
// it. Exact integer sums may be reassociated, and GCC did so to issue all of a block's products
// first and spill them (the AVX2 interleaved kernels: 45-104 stack moves per kernel before, their
// batched decode ~28% slower in cache).
inline void in_order(__m256i& v) { asm("" : "+x"(v)); }

inline __m256i load_256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// 32 unsigned bytes from 16 bytes of nibbles: low nibbles first, then high nibbles (the element
// order of Q4_0/Q4_1/Q5_0/Q5_1 blocks). The 16 bytes are loaded into both lanes and the high lane
// shifted by a variable shift: on Zen 3 this made the Q4_0 decode 25-45% faster in cache than
// shifting a 128-bit copy and inserting it as the high lane (vinserti128).
inline __m256i unpack_nibbles_16(const uint8_t* qs) {
  const __m256i both =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i shifted = _mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}

// Byte j (0..31) is 0xFF where bit j of `bits` is set, else 0.
inline __m256i expand_bits_32(uint32_t bits) {
  const __m256i shuffle = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                             0x0202020202020202, 0x0303030303030303);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)), shuffle);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

// Pairwise int16 sums of u8 x s8 products widened to int32 (8 lanes).
inline __m256i madd_u8_s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// exp(x) for 8 floats: x = n ln2 + r, |r| <= ln2/2, exp(r) by its degree-7 Taylor polynomial
// (truncation < 5.3e-9), scaled by 2^n as 2^(n/2) * 2^(n - n/2) so that subnormal results come
// out right too. Relative error below kSimdExpRelError (tolerance.h) for normal results; above
// ln(FLT_MAX) the result is infinity, below -104 zero, and NaN stays NaN.
inline __m256 exp_ps(__m256 x) {
  const __m256 max_input = _mm256_set1_ps(88.72283935546875f);
  const __m256 min_input = _mm256_set1_ps(-104.0f);
  // Clamp with x as the second operand so that NaN passes through.
  const __m256 xc = _mm256_min_ps(max_input, _mm256_max_ps(min_input, x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n ln2 with ln2 split in a part exact in n's precision and a correction.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);  // -150..128
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 scale1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 scale2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 result = _mm256_mul_ps(_mm256_mul_ps(p, scale1), scale2);
  result = _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()),
                            _mm256_cmp_ps(x, max_input, _CMP_GT_OQ));
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x, min_input, _CMP_LT_OQ));
  return result;
}

}  // namespace
}  // namespace synapse::simd
