// SPDX-License-Identifier: Apache-2.0
// IQ4_XS weights interleaved sixteen rows to a vector for the AVX-512 VNNI level
// (InterleavedKernels, kernels/kernel_table.h): one kernel for decode, batched decode and prefill,
// equal to the scalar reference bit for bit (as dot_interleaved_q4k_vnni.cc is for Q4_K).
//
// Why: over the rows as stored, this level's IQ4_XS decode (dot_k_vnni.cc) scales each lane's
// partial sums and its prefill tile (matmul_vnni.cc) scales each sub-block in float: the routes
// round differently, so the service ran prefill and batched decode of IQ4_XS matrices on the
// decode kernel (issue 17, item 1), and an IQ4_XS file is nearly all IQ4_XS.
//
// Arithmetic: each lane is one row and computes the reference's integer for a super-block
// exactly, scaled = sum_s (ls_s - 32) * sum(value * x) over its eight 32-element sub-blocks. The
// index nibbles are looked up (vpshufb) as value + 128, unsigned as vpdpbusd multiplies them; each
// sub-block's chain starts at -128 * sum(x), prepared per column, which makes the sum signed again
// exactly. Super-blocks combine
// as the reference does: acc += (d * dx) * float(scaled), in order, no FMA (the reference's
// "- dmin * dx * mins" is 0 here, which leaves acc's bits as they are).
//
// Layout: a group of sixteen rows keeps each super-block's bytes together (16 x 136 = 2176 =
// 34 cache lines, so every 64-byte load stays in one line):
//   32 vectors of indices: vector v, lane l = row l's qs bytes 4v..4v+3 (sub-block v / 4: the
//      low nibbles are its elements 4(v%4).., the high nibbles 16 + 4(v%4)..);
//   1 vector of scales_l: lane l = row l's four bytes;
//   16 x 2 bytes scales_h, then 16 F16 d.
// Activations (Q8_K) are prepared once per column: the int8 values, then per super-block a
// 48-byte record of the eight chain starts -128 * sum(x of sub-block s) (int32) and dx.
#include <cstring>

#include "kernels/avx512/avx512_internal.h"
#include "kernels/avx512/interleaved_k_driver.h"

namespace synapse::avx512 {
namespace {

using namespace simd;           // NOLINT(google-build-using-namespace): the helpers of this ISA
using namespace interleaved_k;  // NOLINT(google-build-using-namespace): the shared driver

constexpr size_t kBlockBytes = 136;                 // BlockIQ4_XS
constexpr size_t kUnit = kGroupRows * kBlockBytes;  // a group's super-block: 2176 bytes
constexpr size_t kScalesLow = size_t{32} * 64;      // offsets within a unit
constexpr size_t kScalesHigh = kScalesLow + 64;
constexpr size_t kD = kScalesHigh + 2 * kGroupRows;
constexpr size_t kRecordBytes = 48;  // per prepared super-block: 8 int32 chain starts, dx, padding
constexpr size_t kDx = 32;           // dx's offset in a record
constexpr int kLevelOffset = 128;    // iq4_levels_table() = kIq4Values + 128

// The six-bit scales minus 32 of sub-block s, one int32 per lane, from the unit's scales_l (as
// loaded: the low nibble at bit 4s) and scales_h zero-extended to int32 lanes and shifted left by
// 4 once per unit (`high`: the high bits at 4 + 2s..5 + 2s).
inline __m512i sub_block_scale(__m512i low, __m512i high, unsigned s) {
  const __m512i low_bits = _mm512_and_si512(_mm512_srli_epi32(low, 4 * s), _mm512_set1_epi32(0x0F));
  const __m512i high_bits =
      _mm512_and_si512(_mm512_srli_epi32(high, 2 * s), _mm512_set1_epi32(0x30));
  return _mm512_sub_epi32(_mm512_or_si512(low_bits, high_bits), _mm512_set1_epi32(32));
}

// The layout, as interleaved_k_driver.h reads it.
// NOLINTNEXTLINE(readability-identifier-naming): named as the GGUF type
struct IQ4XS {
  static constexpr TensorType kType = TensorType::kIQ4_XS;
  static constexpr size_t kRows = kGroupRows;
  static constexpr size_t kBlockBytes = avx512::kBlockBytes;
  static constexpr size_t kRecordBytes = avx512::kRecordBytes;
  static constexpr size_t kMaxColumns = 8;
  // One stream: two far-apart groups side by side decoded a 1024 x 151936 matrix on two threads
  // ~10% slower here (kernels_bench medians of 6, alternated), one stream level with the rows as
  // stored.
  static constexpr size_t kStreams = 1;

  // Where row `lane`'s bytes of a super-block go in its group's unit: calls
  // piece(unit offset, block offset, bytes) for each piece (rearranging and restoring run the
  // same map in opposite directions).
  template <typename Piece>
  static void for_each_piece(size_t lane, Piece&& piece) {
    piece(kD + 2 * lane, 0, 2);
    piece(kScalesHigh + 2 * lane, 2, 2);
    piece(kScalesLow + 4 * lane, 4, 4);
    for (size_t v = 0; v < 32; ++v) piece(64 * v + 4 * lane, 8 + 4 * v, 4);
  }

  static void prepare(const uint8_t* x, size_t k, uint8_t* out) {
    std::memset(out, 0, records_offset(k) + k / kQK * kRecordBytes);
    uint8_t* records = out + records_offset(k);
    for (size_t sb = 0; sb < k / kQK; ++sb) {
      const uint8_t* block = x + sb * kQ8KBytes;
      std::memcpy(out + sb * kQK, block + 4, kQK);
      int32_t starts[8];
      for (size_t s = 0; s < 8; ++s) {  // Q8_K's sums of sixteen elements, two per sub-block
        const int32_t sum = static_cast<int16_t>(load_u16(block + kQ8KSums + 4 * s)) +
                            static_cast<int16_t>(load_u16(block + kQ8KSums + 4 * s + 2));
        starts[s] = -kLevelOffset * sum;
      }
      std::memcpy(records + sb * kRecordBytes, starts, sizeof starts);
      std::memcpy(records + sb * kRecordBytes + kDx, block, 4);  // dx
    }
  }

  // G groups (group i's units at w + (groups[i] * n_sb + sb) * kUnit) x C columns over all
  // super-blocks, added to acc. Each (row, column)'s arithmetic is the same whatever G and C; the
  // groups' work (G > 1) is interleaved load by load, so far-apart streams are read side by side.
  template <size_t G, size_t C>
  static void add_super_blocks(const uint8_t* w, size_t n_sb, const size_t (&groups)[G],
                               const uint8_t* x, size_t x_stride, size_t records,
                               __m512 (&acc)[G][C]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i table = _mm512_broadcast_i32x4(iq4_levels_table());
    for (size_t sb = 0; sb < n_sb; ++sb) {
      const uint8_t* unit[G];
      __m512i low[G], high[G], scaled[G][C];
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        unit[i] = w + (groups[i] * n_sb + sb) * kUnit;
        _mm_prefetch(reinterpret_cast<const char*>(unit[i] + kPrefetchBytes + kScalesLow),
                     _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(unit[i] + kPrefetchBytes + kScalesHigh),
                     _MM_HINT_T0);
        low[i] = _mm512_loadu_si512(unit[i] + kScalesLow);
        high[i] = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                        reinterpret_cast<const __m256i*>(unit[i] + kScalesHigh))),
                                    4);
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) scaled[i][c] = _mm512_setzero_si512();
      }
      // Not unrolled: unrolled, GCC interleaved the eight sub-blocks and spilled their sums to the
      // stack (prefill 25% and decode ~10% slower than the rows as stored; rolled, level or ahead).
#pragma GCC unroll 1
      for (size_t s = 0; s < 8; ++s) {
        // Each sub-block's chain starts at the correction. A few columns (decode) sum the low
        // nibbles and the high ones in two chains, so the out-of-order window has independent
        // work; wide blocks have that across columns and keep one chain (registers). Integer
        // sums: the same result either way.
        constexpr size_t kChains = C >= 4 ? 1 : 2;
        __m512i sum[G][kChains][C];
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          const __m512i start =
              broadcast_i32(x + c * x_stride + records + sb * kRecordBytes + 4 * s);
#pragma GCC unroll 8
          for (size_t i = 0; i < G; ++i) {
            sum[i][0][c] = start;
            if constexpr (kChains == 2) sum[i][1][c] = _mm512_setzero_si512();
          }
        }
#pragma GCC unroll 4
        for (size_t j = 0; j < 4; ++j) {
#pragma GCC unroll 8
          for (size_t i = 0; i < G; ++i) {
            const size_t at = 64 * (4 * s + j);
            _mm_prefetch(reinterpret_cast<const char*>(unit[i] + kPrefetchBytes + at), _MM_HINT_T0);
            const __m512i packed = _mm512_loadu_si512(unit[i] + at);
            const __m512i q[2] = {
                _mm512_shuffle_epi8(table, _mm512_and_si512(packed, nibble)),
                _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble))};
#pragma GCC unroll 2
            for (size_t h = 0; h < 2; ++h) {
#pragma GCC unroll 8
              for (size_t c = 0; c < C; ++c) {
                const uint8_t* xs = x + c * x_stride + sb * kQK + 32 * s + 16 * h + 4 * j;
                sum[i][h % kChains][c] =
                    _mm512_dpbusd_epi32(sum[i][h % kChains][c], q[h], broadcast_i32(xs));
              }
            }
          }
        }
#pragma GCC unroll 8
        for (size_t i = 0; i < G; ++i) {
          const __m512i scale = sub_block_scale(low[i], high[i], static_cast<unsigned>(s));
#pragma GCC unroll 8
          for (size_t c = 0; c < C; ++c) {
            __m512i sub_block = sum[i][0][c];
            if constexpr (kChains == 2) sub_block = _mm512_add_epi32(sub_block, sum[i][1][c]);
            scaled[i][c] = _mm512_add_epi32(scaled[i][c], _mm512_mullo_epi32(sub_block, scale));
          }
        }
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        const __m512 d =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit[i] + kD)));
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          float dx_value;
          std::memcpy(&dx_value, x + c * x_stride + records + sb * kRecordBytes + kDx, 4);
          acc[i][c] =
              _mm512_add_ps(acc[i][c], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(dx_value)),
                                                     _mm512_cvtepi32_ps(scaled[i][c])));
        }
      }
    }
  }
};

}  // namespace

void fill_interleaved_iq4xs_dots_vnni(KernelTable& table) { fill<IQ4XS>(table); }

}  // namespace synapse::avx512
