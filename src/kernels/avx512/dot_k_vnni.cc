// SPDX-License-Identifier: Apache-2.0
// AVX-512 VNNI dot products of the K-quants (and IQ4_XS) with Q8_K activations, for decode.
//
// A 256-element super-block is four "chunks" of 64 unsigned weight levels. Per chunk, vpmaddubsw
// multiplies the levels by 64 signed activations into pairs of int16 (no saturation: at most
// 63 * 127 * 2), and vpdpwssd multiplies each pair by its sub-block's scale and accumulates
// into one int32 vector for the whole super-block (exact: at most 8 * 16002 * 128 < 2^24 per
// lane); the super-block scale is applied in float. Levels offset from the value (Q3_K: 4, Q6_K:
// 32) are corrected with the activation block sums (Q8_K's bsums): offset * sum_s scale_s *
// bsum_s; the mins (Q2_K, Q4_K, Q5_K) likewise, into a second accumulator scaled by dmin. The
// activations are prepared once per column (dot_prepare): int8 values in the order the weight
// unpacking produces (natural for Q2_K/Q3_K/Q6_K; for Q4_K/Q5_K each chunk pairs the two
// 32-element sub-blocks that share quant bytes), the bsums, and the scale.
#include <cstring>

#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 256;
constexpr size_t kQ8KBytes = 292;  // float d, 256 int8, 16 int16 bsums
constexpr size_t kMaxColumns = 4;
// Decode reads two far-apart rows side by side and prefetches each this far ahead (see
// dot_legacy_vnni.cc).
constexpr size_t kStreams = 2;
constexpr size_t kPrefetchBytes = 2048;

// A prepared super-block: x (256, in the type's order), the 16 bsums (int16), d (float).
struct Layout {
  static constexpr size_t kSums = 256;
  static constexpr size_t kScale = 288;
  static constexpr size_t kBytes = 320;
};

// The weights of one super-block: levels of the four chunks, the scale and min of each
// 16-element sub-block as int16 words (a 32-element sub-block's twice), d and dmin.
struct Unpacked {
  __m512i levels[4];
  __m256i scales;
  __m256i mins;
  float d;
  float dmin;
};

// Q4_K/Q5_K chunk j holds the 32-element sub-blocks kK4First[j] (bytes 0-31) and +2 (32-63).
constexpr size_t kK4First[4] = {0, 1, 4, 5};

inline size_t k4_position(size_t e) {
  const size_t group = e / 64, upper = (e % 64) / 32, l = e % 32;  // qs[32 group + l] nibble upper
  const size_t chunk = 2 * (group / 2) + upper;
  return 64 * chunk + 32 * (group % 2) + l;
}

// IQ4_XS chunks: the low nibbles of sub-blocks 0-3 (their elements 0-15, 16 bytes each), then
// their high nibbles (elements 16-31), then the same for sub-blocks 4-7.
inline size_t iq4_xs_position(size_t e) {
  const size_t s = e / 32, l = e % 32;
  return 64 * (2 * (s / 4) + l / 16) + 16 * (s % 4) + l % 16;
}

// The order a type's unpacked levels come in: natural, Q4_K/Q5_K's, IQ4_XS's.
enum class Order : uint8_t { kNatural, kK4, kIq4Xs };

inline size_t position(Order order, size_t e) {
  switch (order) {
    case Order::kK4:
      return k4_position(e);
    case Order::kIq4Xs:
      return iq4_xs_position(e);
    default:
      return e;
  }
}

// Word w (an int16 pair of chunk bytes 2w, 2w+1) of chunk j: its 16-element sub-block.
template <Order kOrder>
__m512i word_subblock_index(size_t j) {
  alignas(64) int16_t index[32];
  for (size_t w = 0; w < 32; ++w) {
    size_t sub = 4 * j + w / 8;
    if (kOrder == Order::kK4) sub = 2 * kK4First[j] + (w < 16 ? 0 : 4);
    if (kOrder == Order::kIq4Xs) sub = 2 * (4 * (j / 2) + w / 8) + j % 2;
    index[w] = static_cast<int16_t>(sub);
  }
  return _mm512_load_si512(index);
}

// 32 int16 pair sums of levels * x. Signed levels (IQ4_XS) give vpmaddubsw their magnitude and
// move their sign onto x (AVX-512 has no vpsignb: a masked negation).
template <typename W>
inline __m512i level_products(__m512i levels, __m512i x) {
  if constexpr (W::kSigned) {
    const __mmask64 negative = _mm512_movepi8_mask(levels);
    return _mm512_maddubs_epi16(_mm512_abs_epi8(levels),
                                _mm512_mask_sub_epi8(x, negative, _mm512_setzero_si512(), x));
  } else {
    return _mm512_maddubs_epi16(levels, x);
  }
}

// Q4_K/Q5_K: the 6-bit scales and mins, each written twice (for both 16-element halves).
inline void k4_scales_mins(const uint8_t* s, Unpacked& u) {
  const uint32_t u0 = load_u32(s), u1 = load_u32(s + 4), u2 = load_u32(s + 8);
  const uint32_t scale_lo = u0 & 0x3F3F3F3Fu;
  const uint32_t min_lo = u1 & 0x3F3F3F3Fu;
  const uint32_t scale_hi = (u2 & 0x0F0F0F0Fu) | ((u0 >> 2) & 0x30303030u);
  const uint32_t min_hi = ((u2 >> 4) & 0x0F0F0F0Fu) | ((u1 >> 2) & 0x30303030u);
  const __m256i words =
      _mm256_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(scale_lo), static_cast<int>(scale_hi),
                                          static_cast<int>(min_lo), static_cast<int>(min_hi)));
  const __m256i twice_lo = _mm256_setr_epi16(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  u.scales = _mm256_permutexvar_epi16(twice_lo, words);
  u.mins = _mm256_permutexvar_epi16(_mm256_add_epi16(twice_lo, _mm256_set1_epi16(8)), words);
}

inline void k4_nibble_chunks(const uint8_t* qs, Unpacked& u) {
  const __m512i mask = _mm512_set1_epi8(0x0F);
  const __m512i a = _mm512_loadu_si512(qs), c = _mm512_loadu_si512(qs + 64);
  u.levels[0] = _mm512_and_si512(a, mask);
  u.levels[1] = _mm512_and_si512(_mm512_srli_epi16(a, 4), mask);
  u.levels[2] = _mm512_and_si512(c, mask);
  u.levels[3] = _mm512_and_si512(_mm512_srli_epi16(c, 4), mask);
}

// The two-bit planes of Q2_K/Q3_K: chunk 2h + odd holds bit pairs 2 odd and 2 odd + 1 of
// qs[32h .. 32h + 31] (natural element order).
inline void two_bit_chunks(const uint8_t* qs, Unpacked& u) {
  const __m512i three = _mm512_set1_epi8(3);
#pragma GCC unroll 2
  for (size_t h = 0; h < 2; ++h) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
    const __m512i pairs01 =
        _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 2), 1);
    u.levels[2 * h] = _mm512_and_si512(pairs01, three);
    u.levels[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(pairs01, 4), three);
  }
}

// Adds `amount` to the levels of chunk j whose bit (first_bit for bytes 0-31, second_bit for
// 32-63) is set in the 32 bytes `bits`.
inline void add_where_bit(Unpacked& u, size_t j, __m256i bits, int first_bit, int second_bit,
                          char amount) {
  const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(bits), bits, 1);
  const __m512i select =
      _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << first_bit)),
                         _mm256_set1_epi8(static_cast<char>(1 << second_bit)), 1);
  u.levels[j] = _mm512_mask_add_epi8(u.levels[j], _mm512_test_epi8_mask(both, select), u.levels[j],
                                     _mm512_set1_epi8(amount));
}

struct Q2K {
  static constexpr size_t kBytes = 84;
  static constexpr int kOffsetShift = -1;  // no offset
  static constexpr bool kHasMin = true;
  static constexpr Order kOrder = Order::kNatural;
  static constexpr bool kSigned = false;
  static void unpack(const uint8_t* b, Unpacked& u) {
    two_bit_chunks(b + 16, u);
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
  static constexpr int kOffsetShift = 2;  // levels are 4 above the value
  static constexpr bool kHasMin = false;
  static constexpr Order kOrder = Order::kNatural;
  static constexpr bool kSigned = false;
  static void unpack(const uint8_t* b, Unpacked& u) {
    two_bit_chunks(b + 32, u);
    // Third bit of element 128 h + 32 p + l is bit 4 h + p of hmask[l]; chunk j: bits 2j, 2j+1.
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j)
      add_where_bit(u, j, hm, 2 * static_cast<int>(j), 2 * static_cast<int>(j) + 1, 4);
    const __m128i bytes = q3_k_scale_bytes(b + 96);
    u.scales = _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), _mm256_set1_epi16(32));
    u.mins = _mm256_setzero_si256();
    u.d = f16_to_f32(load_u16(b + 108));
    u.dmin = 0.0f;
  }
};

struct Q4K {
  static constexpr size_t kBytes = 144;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kHasMin = true;
  static constexpr Order kOrder = Order::kK4;
  static constexpr bool kSigned = false;
  static void unpack(const uint8_t* b, Unpacked& u) {
    k4_nibble_chunks(b + 16, u);
    k4_scales_mins(b + 4, u);
    u.d = f16_to_f32(load_u16(b));
    u.dmin = f16_to_f32(load_u16(b + 2));
  }
};

struct Q5K {
  static constexpr size_t kBytes = 176;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kHasMin = true;
  static constexpr Order kOrder = Order::kK4;
  static constexpr bool kSigned = false;
  static void unpack(const uint8_t* b, Unpacked& u) {
    k4_nibble_chunks(b + 48, u);
    // Fifth bit of element 32 s + l is bit s of qh[l]; chunk j holds sub-blocks a and a + 2.
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) {
      const auto first = static_cast<int>(kK4First[j]);
      add_where_bit(u, j, qh, first, first + 2, 16);
    }
    k4_scales_mins(b + 4, u);
    u.d = f16_to_f32(load_u16(b));
    u.dmin = f16_to_f32(load_u16(b + 2));
  }
};

struct Q6K {
  static constexpr size_t kBytes = 210;
  static constexpr int kOffsetShift = 5;  // levels are 32 above the value
  static constexpr bool kHasMin = false;
  static constexpr Order kOrder = Order::kNatural;
  static constexpr bool kSigned = false;
  static void unpack(const uint8_t* b, Unpacked& u) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3);
#pragma GCC unroll 2
    for (size_t h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(b + 64 * h);
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
      const __m512i qh01 =
          _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
      const __m512i high0 = _mm512_slli_epi16(_mm512_and_si512(qh01, two), 4);
      const __m512i high1 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh01, 4), two), 4);
      u.levels[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, low4), high0);
      u.levels[2 * h + 1] =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), high1);
    }
    u.scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));
    u.mins = _mm256_setzero_si256();
    u.d = f16_to_f32(load_u16(b + 208));
    u.dmin = 0.0f;
  }
};

// IQ4_XS: the 4-bit indices looked up in kIq4Values (signed levels, no offset, no min); each
// 32-element sub-block's scale ls - 32 written for both of its 16-element halves.
struct IQ4XS {
  static constexpr size_t kBytes = 136;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kHasMin = false;
  static constexpr Order kOrder = Order::kIq4Xs;
  static constexpr bool kSigned = true;
  static void unpack(const uint8_t* b, Unpacked& u) {
    const __m512i table = _mm512_broadcast_i32x4(iq4_values_table());
    const __m512i mask = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 2
    for (size_t h = 0; h < 2; ++h) {
      const __m512i q = _mm512_loadu_si512(b + 8 + 64 * h);
      u.levels[2 * h] = _mm512_shuffle_epi8(table, _mm512_and_si512(q, mask));
      u.levels[2 * h + 1] =
          _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(q, 4), mask));
    }
    u.scales = iq4_xs_scales_twice(b);
    u.mins = _mm256_setzero_si256();
    u.d = f16_to_f32(load_u16(b));
    u.dmin = 0.0f;
  }
};

template <typename W>
size_t prepared_bytes(size_t k) {
  return k / kQK * Layout::kBytes;
}

template <typename W>
void prepare(const uint8_t* x, size_t k, uint8_t* out) {
  std::memset(out, 0, prepared_bytes<W>(k));
  for (size_t b = 0; b < k / kQK; ++b) {
    const uint8_t* block = x + b * kQ8KBytes;
    const auto* q = reinterpret_cast<const int8_t*>(block + 4);
    uint8_t* dst = out + b * Layout::kBytes;
    // 16-element runs stay contiguous in every order.
    for (size_t e = 0; e < kQK; e += 16) std::memcpy(dst + position(W::kOrder, e), q + e, 16);
    std::memcpy(dst + Layout::kSums, block + 260, 32);
    std::memcpy(dst + Layout::kScale, block, sizeof(float));
  }
}

template <typename W, size_t C>
void row_kernel(const uint8_t* w, size_t n_blocks, const uint8_t* x, size_t x_stride,
                const __m512i (&word_subblock)[4], float* y, size_t y_stride) {
  __m512 acc[C];
  __m256 acc_min[C];
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c) {
    acc[c] = _mm512_setzero_ps();
    acc_min[c] = _mm256_setzero_ps();
  }
  for (size_t b = 0; b < n_blocks; ++b) {
    Unpacked u;
    W::unpack(w + b * W::kBytes, u);
    __m512i word_scale[4];
    const __m512i scales = _mm512_zextsi256_si512(u.scales);
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j)
      word_scale[j] = _mm512_permutexvar_epi16(word_subblock[j], scales);
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      const uint8_t* xb = x + c * x_stride + b * Layout::kBytes;
      __m512i total = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (size_t j = 0; j < 4; ++j) {
        const __m512i pairs = level_products<W>(u.levels[j], _mm512_load_si512(xb + 64 * j));
        total = _mm512_dpwssd_epi32(total, pairs, word_scale[j]);
      }
      const __m256i bsums = _mm256_load_si256(reinterpret_cast<const __m256i*>(xb + Layout::kSums));
      if constexpr (W::kOffsetShift >= 0) {  // offset * sum_s scale_s * bsum_s
        const __m256i correction =
            _mm256_slli_epi32(_mm256_madd_epi16(u.scales, bsums), W::kOffsetShift);
        total = _mm512_sub_epi32(total, _mm512_zextsi256_si512(correction));
      }
      float dx;
      std::memcpy(&dx, xb + Layout::kScale, sizeof(dx));
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_set1_ps(u.d * dx), acc[c]);
      if constexpr (W::kHasMin) {
        acc_min[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(u.mins, bsums)),
                                     _mm256_set1_ps(u.dmin * dx), acc_min[c]);
      }
    }
  }
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c) {
    y[c * y_stride] = _mm512_reduce_add_ps(acc[c]) - hsum(acc_min[c]);
  }
}

// Decode: R rows from far apart side by side, one column (R sequential streams in the
// out-of-order window), each prefetched kPrefetchBytes ahead.
template <typename W, size_t R>
void rows_kernel(const uint8_t* const* w, size_t n_blocks, const uint8_t* x,
                 const __m512i (&word_subblock)[4], float* const* y) {
  __m512 acc[R];
  __m256 acc_min[R];
#pragma GCC unroll 4
  for (size_t r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    acc_min[r] = _mm256_setzero_ps();
  }
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* xb = x + b * Layout::kBytes;
    const __m256i bsums = _mm256_load_si256(reinterpret_cast<const __m256i*>(xb + Layout::kSums));
    float dx;
    std::memcpy(&dx, xb + Layout::kScale, sizeof(dx));
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const uint8_t* wb = w[r] + b * W::kBytes;
      for (size_t line = 0; line < W::kBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchBytes + line), _MM_HINT_T0);
      }
      Unpacked u;
      W::unpack(wb, u);
      const __m512i scales = _mm512_zextsi256_si512(u.scales);
      __m512i total = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (size_t j = 0; j < 4; ++j) {
        const __m512i pairs = level_products<W>(u.levels[j], _mm512_load_si512(xb + 64 * j));
        total =
            _mm512_dpwssd_epi32(total, pairs, _mm512_permutexvar_epi16(word_subblock[j], scales));
      }
      if constexpr (W::kOffsetShift >= 0) {
        const __m256i correction =
            _mm256_slli_epi32(_mm256_madd_epi16(u.scales, bsums), W::kOffsetShift);
        total = _mm512_sub_epi32(total, _mm512_zextsi256_si512(correction));
      }
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_set1_ps(u.d * dx), acc[r]);
      if constexpr (W::kHasMin) {
        acc_min[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(u.mins, bsums)),
                                     _mm256_set1_ps(u.dmin * dx), acc_min[r]);
      }
    }
  }
#pragma GCC unroll 4
  for (size_t r = 0; r < R; ++r) *y[r] = _mm512_reduce_add_ps(acc[r]) - hsum(acc_min[r]);
}

template <typename W>
void dot(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  const __m512i word_subblock[4] = {
      word_subblock_index<W::kOrder>(0), word_subblock_index<W::kOrder>(1),
      word_subblock_index<W::kOrder>(2), word_subblock_index<W::kOrder>(3)};
  if (t.n_cols == 1) {  // decode: kStreams far-apart rows side by side
    for_row_streams<kStreams>(
        t,
        [&](const uint8_t* const(&w)[kStreams], float* const(&y)[kStreams]) {
          rows_kernel<W, kStreams>(w, n_blocks, t.x, word_subblock, y);
        },
        [&](const uint8_t* w, float* y) {
          rows_kernel<W, 1>(&w, n_blocks, t.x, word_subblock, &y);
        });
    return;
  }
  for_column_blocks<kMaxColumns>(t.n_cols, [&]<size_t C>(size_t c) {
    for (size_t r = 0; r < t.n_rows; ++r) {
      row_kernel<W, C>(t.w + r * t.w_stride, n_blocks, t.x + c * t.x_stride, t.x_stride,
                       word_subblock, t.y + c * t.y_stride + r, t.y_stride);
    }
  });
}

template <typename W>
void set(KernelTable& table, TensorType type) {
  WeightKernels& k = table.weights[static_cast<uint32_t>(type)];
  k.dot = dot<W>;
  k.dot_prepare = prepare<W>;
  k.dot_prepared_bytes = prepared_bytes<W>;
}

}  // namespace

void fill_k_dots_vnni(KernelTable& table) {
  set<Q2K>(table, TensorType::kQ2_K);
  set<Q3K>(table, TensorType::kQ3_K);
  set<Q4K>(table, TensorType::kQ4_K);
  set<Q5K>(table, TensorType::kQ5_K);
  set<Q6K>(table, TensorType::kQ6_K);
  set<IQ4XS>(table, TensorType::kIQ4_XS);
}

}  // namespace synapse::avx512
