// SPDX-License-Identifier: Apache-2.0
// Q6_K weights interleaved sixteen rows to a vector for the AVX-512 VNNI level
// (InterleavedKernels, kernels/kernel_table.h): one kernel for decode, batched decode and prefill,
// equal to the scalar reference bit for bit (as dot_interleaved_q4k_vnni.cc is for Q4_K).
//
// Why: Q4_K_M files keep attn_v, half of ffn_down and often the output head in Q6_K; over the
// rows as stored those ran the decode kernel for every step in the service (their prefill tile
// rounds differently), so a batch paid each such matrix once per sequence (issue 17, item 1).
//
// Arithmetic: each lane is one row and computes the reference's integer for a super-block exactly,
// scaled = sum_s scale_s * sum(q * x) - 32 * sum_s scale_s * bsum_s (q the unsigned six-bit level,
// bsum_s Q8_K's sum of sub-block s): vpmaddubsw multiplies four levels by four activations into
// two int16 pair sums (|63 * 127 * 2| fits), vpdpwssd adds each pair times the row's sub-block
// scale into one int32 chain; the -32 term is eight vpdpwssd of scale pairs against bsum pairs.
// Super-blocks combine as the reference does: acc += (d * dx) * float(scaled), in order, no FMA
// (the reference's "- dmin * dx * mins" is 0 for Q6_K, which leaves acc's bits as they are).
//
// Layout, by pairs of sixteen-row groups (two groups' super-block: 2 x 16 x 210 = 6720 bytes =
// 105 cache lines, so every 64-byte load stays in one line): group A's 52 vectors, group B's 52,
// then A's 16 F16 d and B's. A group's vectors: 32 of ql (vector v, lane l = row l's ql bytes
// 4v..4v+3), 16 of qh (likewise), 4 of scales (likewise). Activations (Q8_K) are prepared once per
// column: the int8 values, then per super-block a 64-byte record of its 16 int16 bsums and dx.
#include <cstring>

#include "kernels/avx512/avx512_internal.h"
#include "kernels/avx512/interleaved_k_driver.h"

namespace synapse::avx512 {
namespace {

using namespace simd;           // NOLINT(google-build-using-namespace): the helpers of this ISA
using namespace interleaved_k;  // NOLINT(google-build-using-namespace): the shared driver

constexpr size_t kPairRows = 2 * kGroupRows;  // the layout's unit: InterleavedKernels::rows
constexpr size_t kBlockBytes = 210;           // BlockQ6_K: ql[128], qh[64], scales[16], F16 d
constexpr size_t kQh = size_t{32} * 64;       // vector offsets within a group's 52 vectors
constexpr size_t kSc = kQh + size_t{16} * 64;
constexpr size_t kVectors = kSc + size_t{4} * 64;      // 3328
constexpr size_t kD = 2 * kVectors;                    // the pair's d's, after both groups' vectors
constexpr size_t kPairUnit = kPairRows * kBlockBytes;  // 6720
// Prefetch distance: twice the other layouts'. A pair unit is 6720 bytes of dense work, and 4096
// bytes ahead arrived late (an all-Q6_K 0.5B file decoded at a median 83 tokens/s, 94 with this).
constexpr size_t kAhead = 2 * kPrefetchBytes;
constexpr size_t kRecordBytes = 64;  // per prepared super-block: bsums, dx

// Group g's super-block sb: its 52 vectors and its 16 d's.
struct Unit {
  const uint8_t* vectors;
  const uint8_t* d;
};
inline Unit unit_at(const uint8_t* w, size_t n_sb, size_t g, size_t sb) {
  const uint8_t* pair = w + (g / 2 * n_sb + sb) * kPairUnit;
  return {pair + g % 2 * kVectors, pair + kD + g % 2 * 2 * kGroupRows};
}

// vpshufb control giving each lane the bytes a, a, b, b of its own dword; then an arithmetic
// shift of each int16 by 8 leaves the signed bytes a and b as two int16 (the scale pairs).
inline __m512i byte_pairs(__m512i v, int a, int b) {
  const __m512i control = _mm512_add_epi8(
      _mm512_set1_epi32(a | a << 8 | b << 16 | b << 24),
      _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C)));
  return _mm512_srai_epi16(_mm512_shuffle_epi8(v, control), 8);
}

// Each lane's sum_s scale_s * bsum_s for C columns (the factor of the -32 term), over sub-block
// pairs (2m, 2m + 1); `record` is the super-block's record offset in a prepared column.
template <size_t C>
void bsum_terms(const uint8_t* vectors, const uint8_t* x, size_t x_stride, size_t record,
                __m512i (&terms)[C]) {
#pragma GCC unroll 8
  for (size_t c = 0; c < C; ++c) terms[c] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (size_t j = 0; j < 4; ++j) {
    const __m512i sc = _mm512_loadu_si512(vectors + kSc + 64 * j);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m512i pair = byte_pairs(sc, 2 * h, 2 * h + 1);
      const size_t m = 2 * j + static_cast<size_t>(h);
#pragma GCC unroll 8
      for (size_t c = 0; c < C; ++c) {
        terms[c] =
            _mm512_dpwssd_epi32(terms[c], pair, broadcast_i32(x + c * x_stride + record + 4 * m));
      }
    }
  }
}

// The unsigned six-bit levels of qh vector 8n + u with ql vectors 16n + u and 16n + 8 + u:
// elements 128n + 4u + 32 * part + 0..3 in q[part]. Each line is prefetched kAhead bytes ahead.
inline void six_bit_levels(const uint8_t* vectors, size_t n, size_t u, __m512i (&q)[4]) {
  const size_t a_at = 64 * (16 * n + u), b_at = 64 * (16 * n + 8 + u),
               h_at = kQh + 64 * (8 * n + u);
  for (size_t at : {a_at, b_at, h_at}) {
    _mm_prefetch(reinterpret_cast<const char*>(vectors + kAhead + at), _MM_HINT_T0);
  }
  const __m512i a = _mm512_loadu_si512(vectors + a_at);
  const __m512i b = _mm512_loadu_si512(vectors + b_at);
  const __m512i hb = _mm512_loadu_si512(vectors + h_at);
  const __m512i nibble = _mm512_set1_epi8(0x0F), high_bits = _mm512_set1_epi8(0x30);
  // Sixteen-bit shifts: bits carried across a byte land outside bits 4-5 (masked).
  q[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(a, nibble), _mm512_slli_epi16(hb, 4), high_bits,
                                   0xF8);
  q[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(b, nibble), _mm512_slli_epi16(hb, 2), high_bits,
                                   0xF8);
  q[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(a, 4), nibble), hb, high_bits,
                                   0xF8);
  q[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(b, 4), nibble),
                                   _mm512_srli_epi16(hb, 2), high_bits, 0xF8);
}

// The layout, as interleaved_k_driver.h reads it.
struct Q6K {
  static constexpr TensorType kType = TensorType::kQ6_K;
  static constexpr size_t kRows = kPairRows;
  static constexpr size_t kBlockBytes = avx512::kBlockBytes;
  static constexpr size_t kRecordBytes = avx512::kRecordBytes;
  static constexpr size_t kMaxColumns = 4;
  static constexpr size_t kStreams = 1;  // its unit's two groups side by side already

  // Where row r (< 32) of a pair's super-block goes: calls piece(unit offset, block offset, bytes)
  // for each piece (rearranging and restoring run the same map in opposite directions).
  template <typename Piece>
  static void for_each_piece(size_t r, Piece&& piece) {
    const size_t vectors = r / kGroupRows * kVectors, lane = r % kGroupRows;
    for (size_t v = 0; v < 52; ++v) piece(vectors + 64 * v + 4 * lane, 4 * v, 4);
    piece(kD + 2 * r, 208, 2);
  }

  static void prepare(const uint8_t* x, size_t k, uint8_t* out) {
    std::memset(out, 0, records_offset(k) + k / kQK * kRecordBytes);
    uint8_t* records = out + records_offset(k);
    for (size_t sb = 0; sb < k / kQK; ++sb) {
      const uint8_t* block = x + sb * kQ8KBytes;
      std::memcpy(out + sb * kQK, block + 4, kQK);
      std::memcpy(records + sb * kRecordBytes, block + kQ8KSums, 32);  // the 16 bsums
      std::memcpy(records + sb * kRecordBytes + 32, block, 4);         // dx
    }
  }

  // G groups x C columns over all super-blocks, added to acc; each (row, column)'s arithmetic is
  // the same whatever G and C. Group i's super-block sb is unit_at(w, n_sb, g[i], sb).
  template <size_t G, size_t C>
  static void add_super_blocks(const uint8_t* w, size_t n_sb, const size_t (&g)[G],
                               const uint8_t* x, size_t x_stride, size_t records,
                               __m512 (&acc)[G][C]) {
    for (size_t sb = 0; sb < n_sb; ++sb) {
      Unit unit[G];
      __m512i scaled[G][C], offsets[G][C];
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        unit[i] = unit_at(w, n_sb, g[i], sb);
        _mm_prefetch(reinterpret_cast<const char*>(unit[i].d + kAhead), _MM_HINT_T0);
#pragma GCC unroll 4
        for (size_t j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(unit[i].vectors + kAhead + kSc + 64 * j),
                       _MM_HINT_T0);
        }
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) scaled[i][c] = _mm512_setzero_si512();
        bsum_terms<C>(unit[i].vectors, x, x_stride, records + sb * kRecordBytes, offsets[i]);
      }
      // Half n, then the sub-block parity: qh vector 8n + u (u = 4par .. 4par + 3) with ql vectors
      // 16n + u and 16n + 8 + u gives elements 128n + 4u + {0, 32, 64, 96} + 0..3, of sub-blocks
      // 8n + par + {0, 2, 4, 6}.
#pragma GCC unroll 2
      for (size_t n = 0; n < 2; ++n) {
#pragma GCC unroll 2
        for (size_t par = 0; par < 2; ++par) {
          __m512i scale[G][4];
#pragma GCC unroll 8
          for (size_t i = 0; i < G; ++i) {
            const __m512i lo = _mm512_loadu_si512(unit[i].vectors + kSc + 64 * (2 * n));
            const __m512i hi = _mm512_loadu_si512(unit[i].vectors + kSc + 64 * (2 * n + 1));
            const int t = static_cast<int>(par);
            scale[i][0] = byte_pairs(lo, t, t);
            scale[i][1] = byte_pairs(lo, t + 2, t + 2);
            scale[i][2] = byte_pairs(hi, t, t);
            scale[i][3] = byte_pairs(hi, t + 2, t + 2);
          }
#pragma GCC unroll 4
          for (size_t u4 = 0; u4 < 4; ++u4) {
            const size_t u = 4 * par + u4;
#pragma GCC unroll 8
            for (size_t i = 0; i < G; ++i) {
              __m512i q[4];
              six_bit_levels(unit[i].vectors, n, u, q);
#pragma GCC unroll 4
              for (size_t part = 0; part < 4; ++part) {
#pragma GCC unroll 8
                for (size_t c = 0; c < C; ++c) {
                  const uint8_t* xs = x + c * x_stride + sb * kQK + 128 * n + 32 * part + 4 * u;
                  const __m512i pairs = _mm512_maddubs_epi16(q[part], broadcast_i32(xs));
                  scaled[i][c] = _mm512_dpwssd_epi32(scaled[i][c], pairs, scale[i][part]);
                }
              }
            }
          }
        }
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        const __m512 d =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit[i].d)));
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          float dx_value;
          std::memcpy(&dx_value, x + c * x_stride + records + sb * kRecordBytes + 32, 4);
          const __m512i total = _mm512_sub_epi32(scaled[i][c], _mm512_slli_epi32(offsets[i][c], 5));
          acc[i][c] = _mm512_add_ps(
              acc[i][c],
              _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(dx_value)), _mm512_cvtepi32_ps(total)));
        }
      }
    }
  }
};

}  // namespace

void fill_interleaved_q6k_dots_vnni(KernelTable& table) { fill<Q6K>(table); }

}  // namespace synapse::avx512
