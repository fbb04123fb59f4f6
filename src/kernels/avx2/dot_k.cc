// SPDX-License-Identifier: Apache-2.0
// AVX2 dot products of the K-quants (and IQ4_XS) with Q8_K activations. Each weight super-block is
// first unpacked into 256 unsigned levels plus sixteen 16-element sub-block scales and mins (the
// per-type part), then one integer kernel serves every type and every activation column:
//   sum_s scale_s * (sum_i q_i x_i - offset * bsum_s)  and  sum_s min_s * bsum_s,
// exact in int32 (at most 16 * 128 * 16002 < 2^25), scaled by d and dmin in float. Nothing is
// reduced horizontally until the end of a row.
#include <cstring>
#include <type_traits>

#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/simd_avx2.h"

namespace synapse::avx2 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 256;
constexpr size_t kQ8KBytes = 292;  // BlockQ8_K: float d, 256 int8, 16 int16 bsums
constexpr size_t kMaxColumns = 8;  // columns handled per pass over a row
// Decode streams and their prefetch distance (see rows_kernel): four, as for the 32-element types.
constexpr size_t kStreams = 4;
constexpr size_t kPrefetchBytes = 2048;

struct Unpacked {
  alignas(32) uint8_t q[kQK];
  __m256i scales;  // int16 per 16-element sub-block
  __m256i mins;
  float d;
  float dmin;
};

// Q4_K/Q5_K six-bit scales and mins of the eight 32-element sub-blocks as bytes, in two 64-bit
// words built in the integer registers: the scales of sub-blocks 0-7, then their mins.
struct K4ScaleWords {
  uint64_t scales;
  uint64_t mins;
};
inline K4ScaleWords k4_scale_words(const uint8_t* s) {
  const uint32_t u0 = load_u32(s), u1 = load_u32(s + 4), u2 = load_u32(s + 8);
  const uint32_t scale_lo = u0 & 0x3F3F3F3Fu;
  const uint32_t min_lo = u1 & 0x3F3F3F3Fu;
  const uint32_t scale_hi = (u2 & 0x0F0F0F0Fu) | ((u0 >> 2) & 0x30303030u);
  const uint32_t min_hi = ((u2 >> 4) & 0x0F0F0F0Fu) | ((u1 >> 2) & 0x30303030u);
  return {scale_lo | uint64_t{scale_hi} << 32, min_lo | uint64_t{min_hi} << 32};
}
// The same as one vector: scales in the low half, mins in the high half.
inline __m128i k4_scale_bytes(const uint8_t* s) {
  const K4ScaleWords w = k4_scale_words(s);
  return _mm_set_epi64x(static_cast<int64_t>(w.mins), static_cast<int64_t>(w.scales));
}

// The mins of the eight sub-blocks, each written twice (for the two 16-element halves).
inline __m256i k4_mins(__m128i bytes) {
  return _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(bytes, bytes));
}
inline __m256i k4_mins(uint64_t mins) {
  const __m128i bytes = _mm_cvtsi64_si128(static_cast<int64_t>(mins));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(bytes, bytes));
}

// The same for the scales, and the mins.
void unpack_k4_scales(const uint8_t* s, Unpacked& u) {
  const __m128i bytes = k4_scale_bytes(s);
  u.scales = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(bytes, bytes));
  u.mins = k4_mins(bytes);
}

inline __m256i shift_mask(__m256i v, int shift, int mask) {
  return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(static_cast<char>(mask)));
}

struct Q2K {
  static constexpr size_t kBytes = 84;
  static constexpr int kOffset = 0;
  static void unpack(const uint8_t* b, Unpacked& u) {
    for (int h = 0; h < 2; ++h) {
      const __m256i v = load_256(b + 16 + 32 * h);
      for (int p = 0; p < 4; ++p) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 128 * h + 32 * p),
                           shift_mask(v, 2 * p, 3));
      }
    }
    const __m256i packed =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    u.scales = _mm256_and_si256(packed, _mm256_set1_epi16(0x0F));
    u.mins = _mm256_srli_epi16(packed, 4);
    u.d = f16_to_f32(load_u16(b + 80));
    u.dmin = f16_to_f32(load_u16(b + 82));
  }
};

struct Q3K {
  static constexpr size_t kBytes = 110;
  static constexpr int kOffset = 4;
  static void unpack(const uint8_t* b, Unpacked& u) {
    const __m256i hmask = load_256(b);
    for (int h = 0; h < 2; ++h) {
      const __m256i v = load_256(b + 32 + 32 * h);
      for (int p = 0; p < 4; ++p) {
        const __m256i high = _mm256_slli_epi16(shift_mask(hmask, 4 * h + p, 1), 2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 128 * h + 32 * p),
                           _mm256_or_si256(shift_mask(v, 2 * p, 3), high));
      }
    }
    const __m128i bytes = q3_k_scale_bytes(b + 96);
    u.scales = _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), _mm256_set1_epi16(32));
    u.mins = _mm256_setzero_si256();
    u.d = f16_to_f32(load_u16(b + 108));
    u.dmin = 0.0f;
  }
};

// Q4_K (quants at 16) and Q5_K (fifth bits at 16, quants at 48): sub-block 2g holds the low
// nibbles of qs[32g..32g+31], sub-block 2g+1 the high ones; Q5_K adds 16 where bit 2g (or
// 2g+1) of qh[l] is set.
template <bool kFifthBit>
void unpack_k4(const uint8_t* b, Unpacked& u) {
  const uint8_t* qs = b + (kFifthBit ? 48 : 16);
  const __m256i qh = kFifthBit ? load_256(b + 16) : _mm256_setzero_si256();
  for (int g = 0; g < 4; ++g) {
    const __m256i v = load_256(qs + 32 * g);
    __m256i lo = shift_mask(v, 0, 0x0F), hi = shift_mask(v, 4, 0x0F);
    if constexpr (kFifthBit) {
      lo = _mm256_or_si256(lo, _mm256_slli_epi16(shift_mask(qh, 2 * g, 1), 4));
      hi = _mm256_or_si256(hi, _mm256_slli_epi16(shift_mask(qh, 2 * g + 1, 1), 4));
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 64 * g), lo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 64 * g + 32), hi);
  }
  unpack_k4_scales(b + 4, u);
  u.d = f16_to_f32(load_u16(b));
  u.dmin = f16_to_f32(load_u16(b + 2));
}

struct Q4K {
  static constexpr size_t kBytes = 144;
  static constexpr int kOffset = 0;
  static void unpack(const uint8_t* b, Unpacked& u) { unpack_k4<false>(b, u); }
};

struct Q5K {
  static constexpr size_t kBytes = 176;
  static constexpr int kOffset = 0;
  static void unpack(const uint8_t* b, Unpacked& u) { unpack_k4<true>(b, u); }
};

struct Q6K {
  static constexpr size_t kBytes = 210;
  static constexpr int kOffset = 32;
  static void unpack(const uint8_t* b, Unpacked& u) {
    for (int h = 0; h < 2; ++h) {
      const __m256i qh = load_256(b + 128 + 32 * h);
      for (int p = 0; p < 4; ++p) {
        const __m256i ql = load_256(b + 64 * h + 32 * (p & 1));
        const __m256i low = shift_mask(ql, (p >> 1) * 4, 0x0F);
        const __m256i high = _mm256_slli_epi16(shift_mask(qh, 2 * p, 3), 4);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 128 * h + 32 * p),
                           _mm256_or_si256(low, high));
      }
    }
    u.scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));
    u.mins = _mm256_setzero_si256();
    u.d = f16_to_f32(load_u16(b + 208));
    u.dmin = 0.0f;
  }
};

// IQ4_XS: eight 32-element sub-blocks of table-looked-up signed values (no min); the unpacked
// "levels" are those signed values, so the product takes |value| and moves its sign onto the
// activation (vpsignb), as for Q8_0 weights: at most 127 * 127 * 2 per pair, no saturation.
struct IQ4XS {
  static constexpr size_t kBytes = 136;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = true;
  static void unpack(const uint8_t* b, Unpacked& u) {
    const __m256i table = _mm256_broadcastsi128_si256(iq4_values_table());
    for (int s = 0; s < 8; ++s) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 32 * s),
                         _mm256_shuffle_epi8(table, unpack_nibbles_16(b + 8 + 16 * s)));
    }
    u.scales = iq4_xs_scales_twice(b);
    u.mins = _mm256_setzero_si256();
    u.d = f16_to_f32(load_u16(b));
    u.dmin = 0.0f;
  }
};

template <typename W>
constexpr bool is_signed() {
  if constexpr (requires { W::kSigned; }) {
    return W::kSigned;
  } else {
    return false;
  }
}

// Chunk j (32 elements) of a super-block: [scale of sub-block 2j x 8, of 2j+1 x 8] as int16,
// the factor vpmaddwd applies to the chunk's int16 pair sums.
inline __m256i chunk_scales(__m256i scales, int j) {
  const __m256i both = _mm256_permutevar8x32_epi32(scales, _mm256_set1_epi32(j));
  const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                          2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(both, spread);
}

// One unpacked super-block against one column's Q8_K block: adds d * dx * sum_s scale_s * (q . x)_s
// to acc and dmin * dx * sum_s min_s * bsum_s to acc_min. Decode and batched columns both go
// through here, so a row's result does not depend on how many columns share the pass.
template <typename W>
inline void accumulate_block(const Unpacked& u, const __m256i (&sc)[8], const uint8_t* xb,
                             __m256& acc, __m256& acc_min) {
  constexpr int kOffsetShift = W::kOffset == 0 ? -1 : (W::kOffset == 4 ? 2 : 5);
  static_assert(W::kOffset == 0 || W::kOffset == 4 || W::kOffset == 32, "offset is 4 or 32");
  float dx;
  std::memcpy(&dx, xb, sizeof(dx));
  const uint8_t* xq = xb + 4;
  __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * j));
    const __m256i xj = load_256(xq + 32 * j);
    const __m256i pairs = is_signed<W>()
                              ? _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(xj, q))
                              : _mm256_maddubs_epi16(q, xj);
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, sc[j]));
  }
  const __m256i bsums = load_256(xb + 260);
  if constexpr (kOffsetShift >= 0) {  // offset * sum_s scale_s * bsum_s
    isum =
        _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(bsums, u.scales), kOffsetShift));
  }
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dx * u.d), acc);
  acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, u.mins)),
                            _mm256_set1_ps(dx * u.dmin), acc_min);
}

template <typename W>
inline void unpack_block(const uint8_t* b, Unpacked& u, __m256i (&sc)[8]) {
  W::unpack(b, u);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) sc[j] = chunk_scales(u.scales, j);
}

// Decode: R rows from far apart against one column, each row one sequential stream prefetched
// kPrefetchBytes ahead (several streams in the out-of-order window multiply the memory-level
// parallelism; one row at a time left most of the bandwidth unused).
template <typename W, size_t R>
void rows_kernel(const uint8_t* const* w, const uint8_t* x, size_t n_blocks, float* const* y) {
  Unpacked u[R];
  __m256 acc[R], acc_min[R];
  for (size_t r = 0; r < R; ++r) acc[r] = acc_min[r] = _mm256_setzero_ps();
  for (size_t b = 0; b < n_blocks; ++b) {
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const uint8_t* wb = w[r] + b * W::kBytes;
      for (size_t line = 0; line < W::kBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchBytes + line), _MM_HINT_T0);
      }
      __m256i sc[8];
      unpack_block<W>(wb, u[r], sc);
      accumulate_block<W>(u[r], sc, x + b * kQ8KBytes, acc[r], acc_min[r]);
    }
  }
  for (size_t r = 0; r < R; ++r) *y[r] = hsum(_mm256_sub_ps(acc[r], acc_min[r]));
}

// Byte j of each 128-bit lane (j < 8), zero-extended into all sixteen int16 words.
inline __m256i spread_byte(__m256i bytes, int j) {
  // Each word's index bytes: j (low), then 0x80 (vpshufb writes zero).
  return _mm256_shuffle_epi8(bytes, _mm256_set1_epi16(static_cast<int16_t>(0x8000 | j)));
}

// Decode of Q4_K/Q5_K straight from the blocks: each 32-element chunk's levels go from the
// nibbles to vpmaddubsw in registers, and its one sub-block scale is broadcast to both int16
// words of every lane, instead of storing an Unpacked copy and reading it back (the round trip
// and the sixteen-word scale shuffles cost a third of the time in cache). The chunk layout,
// scales and integer sums per lane are accumulate_block's, so the result is bit-identical to
// the batched route's.
template <bool kFifthBit, size_t R>
void rows_kernel_k4(const uint8_t* const* w, const uint8_t* x, size_t n_blocks, float* const* y) {
  constexpr size_t kBytes = kFifthBit ? Q5K::kBytes : Q4K::kBytes;
  __m256 acc[R], acc_min[R];
  for (size_t r = 0; r < R; ++r) acc[r] = acc_min[r] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (size_t blk = 0; blk < n_blocks; ++blk) {
    const uint8_t* xb = x + blk * kQ8KBytes;
    float dx;
    std::memcpy(&dx, xb, sizeof(dx));
    const __m256i bsums = load_256(xb + 260);
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const uint8_t* b = w[r] + blk * kBytes;
      for (size_t line = 0; line < kBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchBytes + line), _MM_HINT_T0);
      }
      const K4ScaleWords scale_words = k4_scale_words(b + 4);
      // The eight sub-block scales as bytes in every quarter; a chunk's scale reaches all
      // sixteen words by one in-lane byte shuffle (vpshufb: one cheap uop, where a cross-lane
      // vpermd per chunk cost the most of any instruction here on Zen 3).
      const __m256i scales = _mm256_set1_epi64x(static_cast<int64_t>(scale_words.scales));
      const uint8_t* qs = b + (kFifthBit ? 48 : 16);
      const __m256i qh = kFifthBit ? load_256(b + 16) : _mm256_setzero_si256();
      __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        const __m256i v = load_256(qs + 32 * g);
        __m256i lo = _mm256_and_si256(v, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        if constexpr (kFifthBit) {
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(shift_mask(qh, 2 * g, 1), 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(shift_mask(qh, 2 * g + 1, 1), 4));
        }
        const __m256i pairs_lo = _mm256_maddubs_epi16(lo, load_256(xb + 4 + 64 * g));
        const __m256i pairs_hi = _mm256_maddubs_epi16(hi, load_256(xb + 4 + 64 * g + 32));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs_lo, spread_byte(scales, 2 * g)));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs_hi, spread_byte(scales, 2 * g + 1)));
      }
      const float d = f16_to_f32(load_u16(b)), dmin = f16_to_f32(load_u16(b + 2));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dx * d), acc[r]);
      acc_min[r] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, k4_mins(scale_words.mins))),
                          _mm256_set1_ps(dx * dmin), acc_min[r]);
    }
  }
  for (size_t r = 0; r < R; ++r) *y[r] = hsum(_mm256_sub_ps(acc[r], acc_min[r]));
}

// Decode through rows_kernel_k4 for Q4_K/Q5_K, rows_kernel for the other types.
template <typename W, size_t R>
void decode_rows(const uint8_t* const* w, const uint8_t* x, size_t n_blocks, float* const* y) {
  if constexpr (std::is_same_v<W, Q4K> || std::is_same_v<W, Q5K>) {
    rows_kernel_k4<std::is_same_v<W, Q5K>, R>(w, x, n_blocks, y);
  } else {
    rows_kernel<W, R>(w, x, n_blocks, y);
  }
}

template <typename W>
void dot_k(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  if (t.n_cols == 1) {
    for_row_streams<kStreams>(
        t,
        [&](const uint8_t* const(&w)[kStreams], float* const(&y)[kStreams]) {
          decode_rows<W, kStreams>(w, t.x, n_blocks, y);
        },
        [&](const uint8_t* w, float* y) { decode_rows<W, 1>(&w, t.x, n_blocks, &y); });
    return;
  }
  Unpacked u;
  for (size_t c0 = 0; c0 < t.n_cols; c0 += kMaxColumns) {
    const size_t n_cols = t.n_cols - c0 < kMaxColumns ? t.n_cols - c0 : kMaxColumns;
    for (size_t r = 0; r < t.n_rows; ++r) {
      __m256 acc[kMaxColumns], acc_min[kMaxColumns];
      for (size_t c = 0; c < n_cols; ++c) acc[c] = acc_min[c] = _mm256_setzero_ps();
      for (size_t b = 0; b < n_blocks; ++b) {
        __m256i sc[8];
        unpack_block<W>(t.w + r * t.w_stride + b * W::kBytes, u, sc);
        for (size_t c = 0; c < n_cols; ++c) {
          accumulate_block<W>(u, sc, t.x + (c0 + c) * t.x_stride + b * kQ8KBytes, acc[c],
                              acc_min[c]);
        }
      }
      for (size_t c = 0; c < n_cols; ++c) {
        t.y[(c0 + c) * t.y_stride + r] = hsum(_mm256_sub_ps(acc[c], acc_min[c]));
      }
    }
  }
}

}  // namespace

void fill_k_dots(KernelTable& table) {
  table.weights[static_cast<uint32_t>(TensorType::kQ2_K)].dot = dot_k<Q2K>;
  table.weights[static_cast<uint32_t>(TensorType::kQ3_K)].dot = dot_k<Q3K>;
  table.weights[static_cast<uint32_t>(TensorType::kQ4_K)].dot = dot_k<Q4K>;
  table.weights[static_cast<uint32_t>(TensorType::kQ5_K)].dot = dot_k<Q5K>;
  table.weights[static_cast<uint32_t>(TensorType::kQ6_K)].dot = dot_k<Q6K>;
  table.weights[static_cast<uint32_t>(TensorType::kIQ4_XS)].dot = dot_k<IQ4XS>;
}

}  // namespace synapse::avx2
