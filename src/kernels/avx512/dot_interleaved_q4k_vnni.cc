// SPDX-License-Identifier: Apache-2.0
// Q4_K weights interleaved sixteen rows to a vector for the AVX-512 VNNI level
// (InterleavedKernels, kernels/kernel_table.h): one kernel for decode, batched decode and prefill,
// equal to the scalar reference bit for bit (as dot_interleaved_vnni.cc is for Q8_0).
//
// Why: over the rows as stored, this level's Q4_K decode (dot_k_vnni.cc) scales each lane's
// partial sums and its prefill tile (matmul_vnni.cc) scales each sub-block in float: the routes
// round differently, so the service, which keeps a sequence's output independent of its batch,
// ran prefill and batched decode of Q4_K matrices on the decode kernel (issue 17, item 1). Here
// each lane is one row and computes the reference's integers for a super-block exactly --
// scaled = sum_s scale_s * sum(q * x) and mins = sum_s min_s * sum(x) over its eight 32-element
// sub-blocks -- and the super-blocks are combined as the reference does:
// acc += (d * dx) * float(scaled), then acc -= (dmin * dx) * float(mins), in order, no FMA.
//
// Layout: a group of sixteen rows keeps each super-block's bytes together (16 x 144 = 2304 =
// 36 cache lines, so every 64-byte load stays in one line):
//   32 vectors of levels: vector v, lane l = row l's quant bytes 4v..4v+3 (the low nibbles are
//      elements 64(v/8) + 4(v%8).., sub-block 2(v/8); the high nibbles the next sub-block's);
//   3 vectors of packed six-bit scales and mins: vector j, lane l = row l's scale bytes 4j..4j+3;
//   16 F16 d, then 16 F16 dmin.
// Activations (Q8_K) are prepared once per column: the int8 values, then per super-block a
// 32-byte record of the four int16 pairs of 32-element sums (sum_x of sub-blocks 2t, 2t+1: the
// operands of vpdpwssd against the rows' min pairs) and the scale dx as a float.
#include <cstring>

#include "kernels/avx512/avx512_internal.h"
#include "kernels/avx512/interleaved_k_driver.h"

namespace synapse::avx512 {
namespace {

using namespace simd;           // NOLINT(google-build-using-namespace): the helpers of this ISA
using namespace interleaved_k;  // NOLINT(google-build-using-namespace): the shared driver

constexpr size_t kBlockBytes = 144;                 // BlockQ4_K
constexpr size_t kUnit = kGroupRows * kBlockBytes;  // a group's super-block: 2304 bytes
constexpr size_t kScales = size_t{32} * 64;         // offsets within a unit
constexpr size_t kD = kScales + size_t{3} * 64;
constexpr size_t kDmin = kD + 2 * kGroupRows;
constexpr size_t kRecordBytes = 32;  // per prepared super-block: 4 int16 pairs, dx, padding

// The rows' scales and mins of one unit, a byte per sub-block: lane l of sc_lo holds row l's
// scales of sub-blocks 0-3, sc_hi of 4-7, and m_lo, m_hi the mins (k4_scale_min's unpacking).
struct Scales {
  __m512i sc_lo, sc_hi, m_lo, m_hi;
};

inline Scales unpack_scales(const uint8_t* unit) {
  const __m512i a = _mm512_loadu_si512(unit + kScales);
  const __m512i b = _mm512_loadu_si512(unit + kScales + 64);
  const __m512i c = _mm512_loadu_si512(unit + kScales + 128);
  const __m512i six = _mm512_set1_epi8(0x3F), four = _mm512_set1_epi8(0x0F);
  const __m512i top = _mm512_set1_epi8(0x30);  // bits 6-7 of a byte, moved to 4-5
  Scales s;
  s.sc_lo = _mm512_and_si512(a, six);
  s.m_lo = _mm512_and_si512(b, six);
  s.sc_hi =
      _mm512_or_si512(_mm512_and_si512(c, four), _mm512_and_si512(_mm512_srli_epi16(a, 2), top));
  s.m_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(c, 4), four),
                           _mm512_and_si512(_mm512_srli_epi16(b, 2), top));
  return s;
}

// Byte `i` of each lane as an int32.
inline __m512i lane_byte(__m512i v, unsigned i) {
  return _mm512_and_si512(_mm512_srli_epi32(v, 8 * i), _mm512_set1_epi32(0xFF));
}

// Bytes 2t' and 2t'+1 (t' = t % 2) of each lane as the two int16 halves of an int32.
inline __m512i lane_byte_pair(__m512i v, size_t t) {
  const __m512i w = t % 2 == 0 ? v : _mm512_srli_epi32(v, 16);
  return _mm512_or_si512(_mm512_and_si512(w, _mm512_set1_epi32(0xFF)),
                         _mm512_and_si512(_mm512_slli_epi32(w, 8), _mm512_set1_epi32(0xFF0000)));
}

// The layout, as interleaved_k_driver.h reads it.
struct Q4K {
  static constexpr TensorType kType = TensorType::kQ4_K;
  static constexpr size_t kRows = kGroupRows;
  static constexpr size_t kBlockBytes = avx512::kBlockBytes;
  static constexpr size_t kRecordBytes = avx512::kRecordBytes;
  static constexpr size_t kMaxColumns = 4;
  static constexpr size_t kStreams = 2;

  // Where row `lane`'s bytes of a super-block go in its group's unit: calls
  // piece(unit offset, block offset, bytes) for each piece (rearranging and restoring run the
  // same map in opposite directions).
  template <typename Piece>
  static void for_each_piece(size_t lane, Piece&& piece) {
    piece(kD + 2 * lane, 0, 2);
    piece(kDmin + 2 * lane, 2, 2);
    for (size_t j = 0; j < 3; ++j) piece(kScales + 64 * j + 4 * lane, 4 + 4 * j, 4);
    for (size_t v = 0; v < 32; ++v) piece(64 * v + 4 * lane, 16 + 4 * v, 4);
  }

  static void prepare(const uint8_t* x, size_t k, uint8_t* out) {
    std::memset(out, 0, records_offset(k) + k / kQK * kRecordBytes);
    uint8_t* records = out + records_offset(k);
    for (size_t sb = 0; sb < k / kQK; ++sb) {
      const uint8_t* block = x + sb * kQ8KBytes;
      std::memcpy(out + sb * kQK, block + 4, kQK);
      // The block's sums of 16 elements, added in pairs (|sum| <= 32 * 127: an int16).
      int16_t sums[8];
      for (size_t s = 0; s < 8; ++s) {
        sums[s] =
            static_cast<int16_t>(static_cast<int16_t>(load_u16(block + kQ8KSums + 4 * s)) +
                                 static_cast<int16_t>(load_u16(block + kQ8KSums + 4 * s + 2)));
      }
      std::memcpy(records + sb * kRecordBytes, sums, sizeof sums);
      std::memcpy(records + sb * kRecordBytes + 16, block, 4);  // dx
    }
  }

  // G groups (group i's units at w + (groups[i] * n_sb + sb) * kUnit) x C columns over all
  // super-blocks, added to acc. Each (row, column)'s arithmetic is the same whatever G and C. The
  // groups' work is interleaved load by load, so the far-apart streams of decode are read side by
  // side (a unit is ~300 instructions: one after the other, the second stream's loads would start
  // only when the first unit's were done).
  template <size_t G, size_t C>
  static void add_super_blocks(const uint8_t* w, size_t n_sb, const size_t (&groups)[G],
                               const uint8_t* x, size_t x_stride, size_t records,
                               __m512 (&acc)[G][C]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (size_t sb = 0; sb < n_sb; ++sb) {
      const uint8_t* unit[G];
      Scales scales[G];
      __m512i scaled[G][C];
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        unit[i] = w + (groups[i] * n_sb + sb) * kUnit;
        // The scales' and d's lines here, the levels' one per load below: 36 prefetches in a
        // burst at the start of each unit measured slower (they queue behind each other).
#pragma GCC unroll 4
        for (size_t line = kScales; line < kUnit; line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(unit[i] + kPrefetchBytes + line), _MM_HINT_T0);
        }
        scales[i] = unpack_scales(unit[i]);
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) scaled[i][c] = _mm512_setzero_si512();
      }
      // Sub-blocks 2p and 2p + 1 share their quant bytes (low and high nibbles), each summed in
      // its own chain from one load. Not unrolled: unrolled, GCC interleaved the four pairs and
      // spilled their sums (74 stack operands in the 4-column kernel, 40 in decode; none now), and
      // the service's 8 streams ran 20-25% slower.
#pragma GCC unroll 1
      for (size_t p = 0; p < 4; ++p) {
        __m512i sum[G][2][C];
#pragma GCC unroll 8
        for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
          for (size_t c = 0; c < C; ++c) sum[i][0][c] = sum[i][1][c] = _mm512_setzero_si512();
        }
#pragma GCC unroll 8
        for (size_t j = 0; j < 8; ++j) {
#pragma GCC unroll 8
          for (size_t i = 0; i < G; ++i) {
            _mm_prefetch(reinterpret_cast<const char*>(unit[i] + kPrefetchBytes + 64 * (8 * p + j)),
                         _MM_HINT_T0);
            const __m512i packed = _mm512_loadu_si512(unit[i] + 64 * (8 * p + j));
            const __m512i q[2] = {_mm512_and_si512(packed, nibble),
                                  _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble)};
#pragma GCC unroll 2
            for (size_t h = 0; h < 2; ++h) {
#pragma GCC unroll 8
              for (size_t c = 0; c < C; ++c) {
                const uint8_t* xs = x + c * x_stride + sb * kQK + 32 * (2 * p + h) + 4 * j;
                sum[i][h][c] = _mm512_dpbusd_epi32(sum[i][h][c], q[h], broadcast_i32(xs));
              }
            }
          }
        }
#pragma GCC unroll 8
        for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 2
          for (size_t h = 0; h < 2; ++h) {
            const size_t s = 2 * p + h;
            const __m512i scale =
                lane_byte(s < 4 ? scales[i].sc_lo : scales[i].sc_hi, static_cast<unsigned>(s % 4));
#pragma GCC unroll 8
            for (size_t c = 0; c < C; ++c) {
              scaled[i][c] =
                  _mm512_add_epi32(scaled[i][c], _mm512_mullo_epi32(sum[i][h][c], scale));
            }
          }
        }
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        __m512i min_pairs[4];
#pragma GCC unroll 4
        for (size_t t = 0; t < 4; ++t) {
          min_pairs[t] = lane_byte_pair(t < 2 ? scales[i].m_lo : scales[i].m_hi, t);
        }
        const __m512 d =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit[i] + kD)));
        const __m512 dmin =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit[i] + kDmin)));
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          const uint8_t* record = x + c * x_stride + records + sb * kRecordBytes;
          __m512i mins = _mm512_setzero_si512();
#pragma GCC unroll 4
          for (size_t t = 0; t < 4; ++t) {
            mins = _mm512_dpwssd_epi32(mins, min_pairs[t], broadcast_i32(record + 4 * t));
          }
          float dx_value;
          std::memcpy(&dx_value, record + 16, 4);
          const __m512 dx = _mm512_set1_ps(dx_value);
          acc[i][c] = _mm512_add_ps(
              acc[i][c], _mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(scaled[i][c])));
          acc[i][c] = _mm512_sub_ps(
              acc[i][c], _mm512_mul_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(mins)));
        }
      }
    }
  }
};

}  // namespace

void fill_interleaved_q4k_dots_vnni(KernelTable& table) { fill<Q4K>(table); }

}  // namespace synapse::avx512
