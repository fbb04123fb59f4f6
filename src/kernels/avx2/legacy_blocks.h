// SPDX-License-Identifier: Apache-2.0
// AVX2 dot products of the 32-element block types (IQ4_NL included) with Q8_0 activations. Each
// block's integer dot product is exact (vpmaddubsw on unsigned levels and signed activations cannot
// saturate: at most 31 * 127 * 2 < 2^15, and 128 * 127 * 2 for Q8_0 through the sign trick); blocks
// are scaled and accumulated in float lanes, eight per (row, column), one block after another.
// Decode reads four far-apart rows as prefetched streams (rows_kernel); batched columns run in
// register tiles (block_kernel; rows x columns per width from tile_rows, a last single column
// as a decode stream); prefill unpacks a tile's rows once (tile). All three do
// each (row, column)'s arithmetic in the same order, so a result never depends on the route,
// the batch or the threads.
//
// The AVX2 kernels of the 32-element block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) against
// Q8_0 activations over the rows as stored (dot_legacy.cc): the block types' accessors, the
// decode streams (rows_kernel), the register tiles of batched columns (block_kernel, run_tiles)
// and prefill's unpacked rows (Unpacked, tile). Internal linkage, like simd_avx2.h: no copy
// compiled with ISA flags can be picked by the linker for other code.
#pragma once

#include <cstring>
#include <utility>

#include "kernels/avx2/simd_avx2.h"

namespace synapse::avx2::legacy {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 32;
constexpr size_t kQ8Bytes = 34;  // BlockQ8_0: F16 d, 32 int8

// Decode streams and their prefetch distance (see rows_kernel). Four rows side by side, not
// AVX-512's two: each row is one chain of dependent multiply-adds, and four chains measured
// 8-12% faster than two on Q8_0 and Q4_0 out of cache with two threads (unpacking two blocks
// per load was also tried and measured no gain).
constexpr size_t kStreams = 4;
constexpr size_t kPrefetchBytes = 2048;
// Register tiles of batched columns: rows x columns per width, four columns at a time, then a
// remainder of three or two. AVX2 has sixteen vector registers, and a tile holds rows x columns
// accumulators, the columns' activations (and, for the types whose zero is an offset level, the
// columns' offset sums), the row's levels and two temporaries. The signed types (Q8_0, IQ4_NL:
// |w| and w both live) run 2 x 4, 3 x 3 and 4 x 2: 3 x 4 left five accumulators on the stack,
// each block a load-add-store chain through memory (kernels_bench BatchedDecode, SYNAPSE_ISA=avx2
// on Zen 5: 8 columns of 896 x 4864 and of the 896 x 151936 head 15-20% faster). The unsigned
// types measured faster with more rows per tile at four and three columns (their spills sit in
// the column operands, read once per block), and faster at 4 x 2 than 6 x 2 at two.
constexpr size_t kTileCols = 4;
template <typename W>
constexpr size_t tile_rows(size_t columns) {
  if (columns == 2) return 4;
  if (columns == 3) return W::kSigned ? 3 : 4;
  return W::kSigned ? 2 : 3;
}
// Rows a prefill tile unpacks at once (a multiple of every tile's rows, so no row runs alone):
// 24 rows of k = 4864 unpack to 146 KiB, which stays in L2 while the columns stream past.
constexpr size_t kRowsPerTile = 24;
template <typename W>
constexpr bool tiles_divide_rows_per_tile() {
  return kRowsPerTile % tile_rows<W>(4) == 0 && kRowsPerTile % tile_rows<W>(3) == 0 &&
         kRowsPerTile % tile_rows<W>(2) == 0;
}
// Blocks whose scales are converted and multiplied by the activations' scales together: eight
// F16 scales are one vcvtph2ps and eight products one vmulps, where one block at a time costs
// a conversion, a multiply and a broadcast per (row, column, block).
constexpr size_t kGroup = 8;

// The block types: bytes per block, the bytes in front of the levels (kHeader: the F16 scale,
// then for the types with a min its F16 offset value), the level that represents zero
// (kOffset), and the unsigned levels of the bytes after the header (the payload) as 32 bytes in
// element order. Q8_0 and IQ4_NL weights are signed: |w| is the unsigned operand and the
// activation takes w's sign.
struct Q8_0 {
  static constexpr size_t kBytes = 34;
  static constexpr size_t kHeader = 2;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = true;
  static __m256i levels(const uint8_t* p) { return load_256(p); }
};
struct Q4_0 {
  static constexpr size_t kBytes = 18;
  static constexpr size_t kHeader = 2;
  static constexpr int kOffset = 8;
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = false;
  static __m256i levels(const uint8_t* p) { return unpack_nibbles_16(p); }
};
struct Q4_1 {
  static constexpr size_t kBytes = 20;
  static constexpr size_t kHeader = 4;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kSigned = false;
  static __m256i levels(const uint8_t* p) { return unpack_nibbles_16(p); }
};

// Q5's fifth bits as 0x10 in the bytes of the elements that have it: bit j of the 32-bit qh is
// element j's, so each byte needs its own bit picked out (a byte shuffle, a test and a mask).
inline __m256i q5_high_bits(const uint8_t* qh) {
  return _mm256_and_si256(expand_bits_32(load_u32(qh)), _mm256_set1_epi8(0x10));
}

struct Q5_0 {
  static constexpr size_t kBytes = 22;
  static constexpr size_t kHeader = 2;
  static constexpr int kOffset = 16;
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = false;
  static __m256i levels(const uint8_t* p) {
    return _mm256_or_si256(unpack_nibbles_16(p + 4), q5_high_bits(p));
  }
};
struct Q5_1 {
  static constexpr size_t kBytes = 24;
  static constexpr size_t kHeader = 4;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kSigned = false;
  static __m256i levels(const uint8_t* p) { return Q5_0::levels(p); }
};

// IQ4_NL: the nibbles index a table of sixteen signed values (vpshufb looks them up in each
// 128-bit lane), used like Q8_0's signed weights; |value| <= 127 keeps vpmaddubsw exact.
struct IQ4_NL {
  static constexpr size_t kBytes = 18;
  static constexpr size_t kHeader = 2;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = true;
  static __m256i levels(const uint8_t* p) {
    const __m256i table = _mm256_broadcastsi128_si256(iq4_values_table());
    return _mm256_shuffle_epi8(table, unpack_nibbles_16(p));
  }
};

// Eight F16 values, `stride` bytes apart from p, as floats; lanes from m on are zero. (Whole
// groups insert at constant lanes: a store of each half-word and a vector load of them would
// stall on store forwarding.)
inline __m256 gather_f16(const uint8_t* p, size_t stride, size_t m) {
  if (m == kGroup) {
    __m128i v = _mm_cvtsi32_si128(load_u16(p));
    v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(p + stride)), 1);
    v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(p + 2 * stride)), 2);
    v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(p + 3 * stride)), 3);
    v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(p + 4 * stride)), 4);
    v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(p + 5 * stride)), 5);
    v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(p + 6 * stride)), 6);
    v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(p + 7 * stride)), 7);
    return _mm256_cvtph_ps(v);
  }
  alignas(16) uint16_t h[kGroup] = {};
  for (size_t j = 0; j < m; ++j) h[j] = load_u16(p + j * stride);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// The scales of activation blocks [b0, b0 + m) of a Q8_0 column.
inline __m256 activation_scales(const uint8_t* x, size_t b0, size_t m) {
  return gather_f16(x + b0 * kQ8Bytes, kQ8Bytes, m);
}

// Where a row's blocks are: a layout gives, for the group of m blocks from b0 of a row, the
// blocks' scales and mins as floats (lanes from m on: don't care) and block j's payload.
//
// Rows as stored: each block's scale and min in front of its levels.
template <typename W>
struct StoredRows {
  using Type = W;
  // Gathering eight blocks' scales from as many places cost more than it saved: one at a time.
  static constexpr bool kGroupedScales = false;
  static float scale(const uint8_t* payload) { return f16_to_f32(load_u16(payload - W::kHeader)); }
  static float min(const uint8_t* payload) {
    return f16_to_f32(load_u16(payload - W::kHeader + 2));
  }
  static __m256 scales(const uint8_t* row, size_t b0, size_t m) {
    return gather_f16(row + b0 * W::kBytes, W::kBytes, m);
  }
  static __m256 mins(const uint8_t* row, size_t b0, size_t m) {
    return gather_f16(row + b0 * W::kBytes + 2, W::kBytes, m);
  }
  static const uint8_t* payload(const uint8_t* row, size_t b0, size_t /*m*/, size_t j) {
    return row + (b0 + j) * W::kBytes + W::kHeader;
  }
  static __m256i levels(const uint8_t* payload) { return W::levels(payload); }
};

// Prefill's unpacked rows (tile): a group of m blocks is m float scales, m float mins and the
// m blocks' 32 levels, 40 bytes a block. The values are the ones W's blocks give, so a product
// over them equals the product over the packed rows bit for bit.
template <typename W>
struct UnpackedRows {
  using Type = W;
  static constexpr bool kGroupedScales = true;
  static constexpr size_t kBytes = 40;
  static __m256 scales(const uint8_t* row, size_t b0, size_t /*m*/) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row + b0 * kBytes));
  }
  static __m256 mins(const uint8_t* row, size_t b0, size_t m) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row + b0 * kBytes + 4 * m));
  }
  static const uint8_t* payload(const uint8_t* row, size_t b0, size_t m, size_t j) {
    return row + b0 * kBytes + 8 * m + j * kQK;
  }
  static __m256i levels(const uint8_t* payload) { return load_256(payload); }

  // Row `row` of layout L (n_blocks blocks) into `out`, n_blocks * kBytes bytes.
  template <typename L>
  static void pack_row(const uint8_t* row, size_t n_blocks, uint8_t* out) {
    alignas(32) float values[kGroup];
    for (size_t b0 = 0; b0 < n_blocks; b0 += kGroup) {
      const size_t m = n_blocks - b0 < kGroup ? n_blocks - b0 : kGroup;
      uint8_t* group = out + b0 * kBytes;
      _mm256_store_ps(values, L::scales(row, b0, m));
      std::memcpy(group, values, 4 * m);
      _mm256_store_ps(values, W::kHasMin ? L::mins(row, b0, m) : _mm256_setzero_ps());
      std::memcpy(group + 4 * m, values, 4 * m);
      for (size_t j = 0; j < m; ++j) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(group + 8 * m + j * kQK),
                            L::levels(L::payload(row, b0, m, j)));
      }
    }
  }
};

// The F16 scales of block b of C columns in the low words (the lane index must be a constant,
// hence the index sequence).
template <size_t... I>
inline __m128i gather_scales(const uint8_t* block, size_t x_stride, std::index_sequence<I...>) {
  __m128i v = _mm_setzero_si128();
  ((v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(block + I * x_stride)), I)), ...);
  return v;
}

// R rows x C columns (C <= 4) of layout L. Per group of blocks, the R x C x m scale products
// dw * dx (and min * dx) are formed eight blocks at a time and stored, and each multiply-add
// takes its product as a broadcast load: the products are the very ones a scalar dw * dx gives,
// and the vector ports keep their cycles for the integer dot products.
template <typename L, size_t R, size_t C>
void block_kernel(const uint8_t* w, size_t w_stride, const uint8_t* x, size_t x_stride,
                  size_t n_blocks, float* y, size_t y_stride) {
  using W = typename L::Type;
  static_assert(C <= 4, "at most four columns");
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  const __m256i ones16 = _mm256_set1_epi16(1);
  // Grouped: the products of a whole group, [r][c][j]; else one block's, [r][c].
  alignas(32) float products[R][C][kGroup];
  alignas(32) float min_products[W::kHasMin ? R : 1][C][kGroup];
  alignas(16) float scale[R][4];
  alignas(16) float min_scale[W::kHasMin ? R : 1][4];
  for (size_t b0 = 0; b0 < n_blocks; b0 += kGroup) {
    const size_t m = n_blocks - b0 < kGroup ? n_blocks - b0 : kGroup;
    if constexpr (L::kGroupedScales) {
      __m256 dx[C];
#pragma GCC unroll 8
      for (size_t c = 0; c < C; ++c) dx[c] = activation_scales(x + c * x_stride, b0, m);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const __m256 dw = L::scales(w + r * w_stride, b0, m);
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) _mm256_store_ps(products[r][c], _mm256_mul_ps(dw, dx[c]));
        if constexpr (W::kHasMin) {
          const __m256 mw = L::mins(w + r * w_stride, b0, m);
#pragma GCC unroll 8
          for (size_t c = 0; c < C; ++c) {
            _mm256_store_ps(min_products[r][c], _mm256_mul_ps(mw, dx[c]));
          }
        }
      }
    }
    for (size_t j = 0; j < m; ++j) {
      const size_t b = b0 + j;
      __m256i xq[C], x_offset[C];
      __m256 x_sum[C];
#pragma GCC unroll 8
      for (size_t c = 0; c < C; ++c) {
        xq[c] = load_256(x + c * x_stride + b * kQ8Bytes + 2);
        if constexpr (W::kOffset != 0) {
          x_offset[c] = _mm256_maddubs_epi16(_mm256_set1_epi8(W::kOffset), xq[c]);
        }
        if constexpr (W::kHasMin) {
          x_sum[c] = _mm256_cvtepi32_ps(madd_u8_s8(_mm256_set1_epi8(1), xq[c]));
        }
      }
      if constexpr (!L::kGroupedScales) {
        // Four scale products at a time (the column scales in the low words).
        const __m128 dx =
            _mm_cvtph_ps(gather_scales(x + b * kQ8Bytes, x_stride, std::make_index_sequence<C>()));
#pragma GCC unroll 8
        for (size_t r = 0; r < R; ++r) {
          const uint8_t* p = L::payload(w + r * w_stride, b0, m, j);
          _mm_store_ps(scale[r], _mm_mul_ps(_mm_set1_ps(L::scale(p)), dx));
          if constexpr (W::kHasMin)
            _mm_store_ps(min_scale[r], _mm_mul_ps(_mm_set1_ps(L::min(p)), dx));
        }
      }
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const uint8_t* p = L::payload(w + r * w_stride, b0, m, j);
        // Batched decode reads its rows from memory once, like the decode streams.
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
        const __m256i q = L::levels(p);
        const __m256i q_unsigned = W::kSigned ? _mm256_abs_epi8(q) : q;
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          __m256i pairs =
              _mm256_maddubs_epi16(q_unsigned, W::kSigned ? _mm256_sign_epi8(xq[c], q) : xq[c]);
          if constexpr (W::kOffset != 0) pairs = _mm256_sub_epi16(pairs, x_offset[c]);
          const __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones16));
          const float* product = L::kGroupedScales ? &products[r][c][j] : &scale[r][c];
          acc[r][c] = _mm256_fmadd_ps(sum, _mm256_broadcast_ss(product), acc[r][c]);
          if constexpr (W::kHasMin) {
            const float* min_product =
                L::kGroupedScales ? &min_products[r][c][j] : &min_scale[r][c];
            acc[r][c] = _mm256_fmadd_ps(x_sum[c], _mm256_broadcast_ss(min_product), acc[r][c]);
          }
        }
      }
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) y[c * y_stride + r] = hsum(acc[r][c]);
  }
}

// Decode: R rows from far apart against one column, each row one sequential stream prefetched
// kPrefetchBytes ahead -- several streams in the out-of-order window multiply the memory-level
// parallelism (one row at a time reached a third of the bandwidth out of cache). Each row's
// arithmetic is block_kernel<L, 1, 1>'s, step for step, so its result is bit-identical.
template <typename L, size_t R>
void rows_kernel(const uint8_t* const* w, const uint8_t* x, size_t n_blocks, float* const* y) {
  using W = typename L::Type;
  __m256 acc[R];
  for (size_t r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const __m256i ones16 = _mm256_set1_epi16(1);
  alignas(32) float scale[R][kGroup];
  alignas(32) float min_scale[W::kHasMin ? R : 1][kGroup];
  for (size_t b0 = 0; b0 < n_blocks; b0 += kGroup) {
    const size_t m = n_blocks - b0 < kGroup ? n_blocks - b0 : kGroup;
    if constexpr (L::kGroupedScales) {
      const __m256 dx = activation_scales(x, b0, m);
#pragma GCC unroll 4
      for (size_t r = 0; r < R; ++r) {
        _mm256_store_ps(scale[r], _mm256_mul_ps(L::scales(w[r], b0, m), dx));
        if constexpr (W::kHasMin) {
          _mm256_store_ps(min_scale[r], _mm256_mul_ps(L::mins(w[r], b0, m), dx));
        }
      }
    }
    for (size_t j = 0; j < m; ++j) {
      const uint8_t* xb = x + (b0 + j) * kQ8Bytes;
      const __m256i xq = load_256(xb + 2);
      __m256i x_offset = _mm256_setzero_si256();
      if constexpr (W::kOffset != 0)
        x_offset = _mm256_maddubs_epi16(_mm256_set1_epi8(W::kOffset), xq);
      __m256 x_sum = _mm256_setzero_ps();
      if constexpr (W::kHasMin) x_sum = _mm256_cvtepi32_ps(madd_u8_s8(_mm256_set1_epi8(1), xq));
#pragma GCC unroll 4
      for (size_t r = 0; r < R; ++r) {
        const uint8_t* p = L::payload(w[r], b0, m, j);
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
        const __m256i q = L::levels(p);
        const __m256i q_unsigned = W::kSigned ? _mm256_abs_epi8(q) : q;
        __m256i pairs = _mm256_maddubs_epi16(q_unsigned, W::kSigned ? _mm256_sign_epi8(xq, q) : xq);
        if constexpr (W::kOffset != 0) pairs = _mm256_sub_epi16(pairs, x_offset);
        const __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones16));
        if constexpr (L::kGroupedScales) {
          acc[r] = _mm256_fmadd_ps(sum, _mm256_broadcast_ss(&scale[r][j]), acc[r]);
          if constexpr (W::kHasMin) {
            acc[r] = _mm256_fmadd_ps(x_sum, _mm256_broadcast_ss(&min_scale[r][j]), acc[r]);
          }
        } else {
          const float dx = f16_to_f32(load_u16(xb));
          acc[r] = _mm256_fmadd_ps(sum, _mm256_set1_ps(L::scale(p) * dx), acc[r]);
          if constexpr (W::kHasMin) {
            acc[r] = _mm256_fmadd_ps(x_sum, _mm256_set1_ps(L::min(p) * dx), acc[r]);
          }
        }
      }
    }
  }
  for (size_t r = 0; r < R; ++r) *y[r] = hsum(acc[r]);
}

// Covers rows [0, n_rows) of columns [c, c + C) with R x C register tiles, then single rows for
// what is left (run_tiles picks the tiles: tile_rows). Every register tile does each (row,
// column)'s arithmetic in the same order, so the tiling never changes a result.
template <typename L, size_t R, size_t C>
void cover_rows(const DotTile& t, size_t c, size_t n_blocks) {
  const uint8_t* x = t.x + c * t.x_stride;
  size_t r = 0;
  for (; r + R <= t.n_rows; r += R) {
    block_kernel<L, R, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, n_blocks,
                          t.y + c * t.y_stride + r, t.y_stride);
  }
  for (; r < t.n_rows; ++r) {
    block_kernel<L, 1, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, n_blocks,
                          t.y + c * t.y_stride + r, t.y_stride);
  }
}

// One column over all the tile's rows: four far-apart rows side by side (rows_kernel), then the
// rows left over.
template <typename L>
void stream_column(const DotTile& t, size_t c, size_t n_blocks) {
  DotTile column = t;
  column.x = t.x + c * t.x_stride;
  column.n_cols = 1;
  column.y = t.y + c * t.y_stride;
  for_row_streams<kStreams>(
      column,
      [&](const uint8_t* const(&w)[kStreams], float* const(&y)[kStreams]) {
        rows_kernel<L, kStreams>(w, column.x, n_blocks, y);
      },
      [&](const uint8_t* w, float* y) {
        block_kernel<L, 1, 1>(w, t.w_stride, column.x, t.x_stride, n_blocks, y, t.y_stride);
      });
}

// Columns in groups of four; a remainder of three or two columns gets a tile of its own width
// (tile_rows) and a last single column the decode streams. Batched decode steps have any column
// count -- 3, 5, 7 sequences -- and a remainder run one row at a time measured a quarter of the
// step's time at three columns. The rows go kRowsPerTile at a time through every column group, so
// the groups after the first read them from L2 rather than fetching a whole task's rows (hundreds
// of rows of 4864 elements, more than L2) again for every four columns. (On the Zen 3 this was
// written on, the difference at 8 and 16 columns was within the run-to-run noise: the tiles are
// compute-bound.)
template <typename L>
void run_tiles(const DotTile& t) {
  using W = typename L::Type;
  static_assert(tiles_divide_rows_per_tile<W>(), "a tile's rows must divide kRowsPerTile");
  const size_t n_blocks = t.k / kQK;
  for (size_t r0 = 0; r0 < t.n_rows; r0 += kRowsPerTile) {
    DotTile rows = t;
    rows.w = t.w + r0 * t.w_stride;
    rows.n_rows = t.n_rows - r0 < kRowsPerTile ? t.n_rows - r0 : kRowsPerTile;
    rows.y = t.y + r0;
    size_t c = 0;
    for (; c + kTileCols <= t.n_cols; c += kTileCols)
      cover_rows<L, tile_rows<W>(kTileCols), kTileCols>(rows, c, n_blocks);
    switch (t.n_cols - c) {
      case 3:
        cover_rows<L, tile_rows<W>(3), 3>(rows, c, n_blocks);
        break;
      case 2:
        cover_rows<L, tile_rows<W>(2), 2>(rows, c, n_blocks);
        break;
      case 1:
        stream_column<L>(rows, c, n_blocks);
        break;
      default:
        break;
    }
  }
}

// Prefill: the tile's rows (layout L) unpacked once into scratch (UnpackedRows), then every
// column group runs against them, so the unpacking is paid once per tile instead of once per
// column group; the product equals the streamed one bit for bit.
template <typename L>
size_t tile_scratch_bytes(size_t k) {
  return kRowsPerTile * (k / kQK) * UnpackedRows<typename L::Type>::kBytes;
}

template <typename L>
void tile(const DotTile& t, uint8_t* scratch) {
  using Unpacked = UnpackedRows<typename L::Type>;
  const size_t n_blocks = t.k / kQK;
  const size_t row_bytes = n_blocks * Unpacked::kBytes;
  for (size_t r = 0; r < t.n_rows; ++r) {
    Unpacked::template pack_row<L>(t.w + r * t.w_stride, n_blocks, scratch + r * row_bytes);
  }
  DotTile unpacked = t;
  unpacked.w = scratch;
  unpacked.w_stride = row_bytes;
  run_tiles<Unpacked>(unpacked);
}

// Any number of columns: one column as decode streams, more in register tiles.
template <typename L>
void dot(const DotTile& t) {
  if (t.n_cols == 1) {
    stream_column<L>(t, 0, t.k / kQK);
    return;
  }
  run_tiles<L>(t);
}

}  // namespace
}  // namespace synapse::avx2::legacy
