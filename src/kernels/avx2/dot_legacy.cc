// SPDX-License-Identifier: Apache-2.0
// AVX2 dot products of the 32-element block types (IQ4_NL included) with Q8_0 activations. Each
// block's integer dot product is exact (vpmaddubsw on unsigned levels and signed activations cannot
// saturate: at most 31 * 127 * 2 < 2^15, and 128 * 127 * 2 for Q8_0 through the sign trick); blocks
// are scaled and accumulated in float lanes, eight per (row, column), one block after another.
// Decode reads four far-apart rows as prefetched streams (rows_kernel); batched columns run in
// 3 x 4 register tiles (block_kernel; a remainder of 3 or 2 columns in 4 x 3 or 6 x 2, a last
// single column as a decode stream); prefill unpacks a tile's rows once (tile). All three do
// each (row, column)'s arithmetic in the same order, so a result never depends on the route,
// the batch or the threads.
#include <utility>

#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/simd_avx2.h"

namespace synapse::avx2 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 32;
constexpr size_t kQ8Bytes = 34;  // BlockQ8_0: F16 d, 32 int8
inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Decode streams and their prefetch distance (see rows_kernel). Four rows side by side, not
// AVX-512's two: each row is one chain of dependent multiply-adds, and four chains measured
// 8-12% faster than two on Q8_0 and Q4_0 out of cache with two threads (unpacking two blocks
// per load was also tried and measured no gain).
constexpr size_t kStreams = 4;
constexpr size_t kPrefetchBytes = 2048;
// Register tile of batched columns.
constexpr size_t kTileRows = 3;
constexpr size_t kTileCols = 4;
// Rows a prefill tile unpacks at once (a multiple of kTileRows): 24 rows of k = 4864 unpack
// to 146 KiB, which stays in L2 while the columns stream past.
constexpr size_t kRowsPerTile = 24;

// The unsigned levels of one weight block as 32 bytes in element order, its scale and (for the
// types with a min) its offset value, and the level that represents zero (kOffset).
// Q8_0 weights are signed: |w| is the unsigned operand and the activation takes w's sign.
struct Q8_0 {
  static float scale(const uint8_t* b) { return f16_to_f32(load_u16(b)); }
  static constexpr size_t kBytes = 34;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = true;
  static __m256i levels(const uint8_t* b) { return load_256(b + 2); }
  static float min(const uint8_t* /*b*/) { return 0.0f; }
};
struct Q4_0 {
  static float scale(const uint8_t* b) { return f16_to_f32(load_u16(b)); }
  static constexpr bool kSigned = false;
  static constexpr size_t kBytes = 18;
  static constexpr int kOffset = 8;
  static constexpr bool kHasMin = false;
  static __m256i levels(const uint8_t* b) { return unpack_nibbles_16(b + 2); }
  static float min(const uint8_t* /*b*/) { return 0.0f; }
};
struct Q4_1 {
  static float scale(const uint8_t* b) { return f16_to_f32(load_u16(b)); }
  static constexpr bool kSigned = false;
  static constexpr size_t kBytes = 20;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static __m256i levels(const uint8_t* b) { return unpack_nibbles_16(b + 4); }
  static float min(const uint8_t* b) { return f16_to_f32(load_u16(b + 2)); }
};
struct Q5_0 {
  static float scale(const uint8_t* b) { return f16_to_f32(load_u16(b)); }
  static constexpr bool kSigned = false;
  static constexpr size_t kBytes = 22;
  static constexpr int kOffset = 16;
  static constexpr bool kHasMin = false;
  static __m256i levels(const uint8_t* b) {
    const __m256i high = _mm256_and_si256(expand_bits_32(load_u32(b + 2)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(unpack_nibbles_16(b + 6), high);
  }
  static float min(const uint8_t* /*b*/) { return 0.0f; }
};
struct Q5_1 {
  static float scale(const uint8_t* b) { return f16_to_f32(load_u16(b)); }
  static constexpr bool kSigned = false;
  static constexpr size_t kBytes = 24;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static __m256i levels(const uint8_t* b) {
    const __m256i high = _mm256_and_si256(expand_bits_32(load_u32(b + 4)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(unpack_nibbles_16(b + 8), high);
  }
  static float min(const uint8_t* b) { return f16_to_f32(load_u16(b + 2)); }
};

// IQ4_NL: the nibbles index a table of sixteen signed values (vpshufb looks them up in each
// 128-bit lane), used like Q8_0's signed weights; |value| <= 127 keeps vpmaddubsw exact.
struct IQ4_NL {
  static float scale(const uint8_t* b) { return f16_to_f32(load_u16(b)); }
  static constexpr bool kSigned = true;
  static constexpr size_t kBytes = 18;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = false;
  static __m256i levels(const uint8_t* b) {
    const __m256i table = _mm256_broadcastsi128_si256(iq4_values_table());
    return _mm256_shuffle_epi8(table, unpack_nibbles_16(b + 2));
  }
  static float min(const uint8_t* /*b*/) { return 0.0f; }
};

// The F16 scales of block b of C columns in the low words (the lane index must be a constant,
// hence the index sequence).
template <size_t... I>
inline __m128i gather_scales(const uint8_t* block, size_t x_stride, std::index_sequence<I...>) {
  __m128i v = _mm_setzero_si128();
  ((v = _mm_insert_epi16(v, static_cast<int16_t>(load_u16(block + I * x_stride)), I)), ...);
  return v;
}

// R rows x C columns (C <= 4). Per block, the R x C scale products dw * dx (and min * dx) are
// formed four at a time and stored, and each multiply-add takes its scale as a broadcast load:
// the float products are the very ones a scalar dw * dx gives, and the vector ports keep their
// cycles for the integer dot products.
template <typename W, size_t R, size_t C>
void block_kernel(const uint8_t* w, size_t w_stride, const uint8_t* x, size_t x_stride,
                  size_t n_blocks, float* y, size_t y_stride) {
  static_assert(C <= 4, "four scale products per row at a time");
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  const __m256i ones16 = _mm256_set1_epi16(1);
  alignas(16) float scale[R][4];
  alignas(16) float min_scale[R][4];
  for (size_t b = 0; b < n_blocks; ++b) {
    __m256i xq[C], x_offset[C];
    __m256 x_sum[C];
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) {
      const uint8_t* xb = x + c * x_stride + b * kQ8Bytes;
      xq[c] = load_256(xb + 2);
      if constexpr (W::kOffset != 0) {
        x_offset[c] = _mm256_maddubs_epi16(_mm256_set1_epi8(W::kOffset), xq[c]);
      }
      if constexpr (W::kHasMin) {
        x_sum[c] = _mm256_cvtepi32_ps(madd_u8_s8(_mm256_set1_epi8(1), xq[c]));
      }
    }
    const __m128 dx =
        _mm_cvtph_ps(gather_scales(x + b * kQ8Bytes, x_stride, std::make_index_sequence<C>()));
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const uint8_t* wb = w + r * w_stride + b * W::kBytes;
      // Batched decode reads its rows from memory once, like the decode streams.
      _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchBytes), _MM_HINT_T0);
      _mm_store_ps(scale[r], _mm_mul_ps(_mm_set1_ps(W::scale(wb)), dx));
      if constexpr (W::kHasMin) _mm_store_ps(min_scale[r], _mm_mul_ps(_mm_set1_ps(W::min(wb)), dx));
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const uint8_t* wb = w + r * w_stride + b * W::kBytes;
      const __m256i q = W::levels(wb);
      const __m256i q_unsigned = W::kSigned ? _mm256_abs_epi8(q) : q;
#pragma GCC unroll 8
      for (size_t c = 0; c < C; ++c) {
        __m256i pairs =
            _mm256_maddubs_epi16(q_unsigned, W::kSigned ? _mm256_sign_epi8(xq[c], q) : xq[c]);
        if constexpr (W::kOffset != 0) pairs = _mm256_sub_epi16(pairs, x_offset[c]);
        const __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones16));
        acc[r][c] = _mm256_fmadd_ps(sum, _mm256_broadcast_ss(&scale[r][c]), acc[r][c]);
        if constexpr (W::kHasMin) {
          acc[r][c] = _mm256_fmadd_ps(x_sum[c], _mm256_broadcast_ss(&min_scale[r][c]), acc[r][c]);
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
// arithmetic is block_kernel<W, 1, 1>'s, step for step, so its result is bit-identical.
template <typename W, size_t R>
void rows_kernel(const uint8_t* const* w, const uint8_t* x, size_t n_blocks, float* const* y) {
  __m256 acc[R];
  for (size_t r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* xb = x + b * kQ8Bytes;
    const float dx = f16_to_f32(load_u16(xb));
    const __m256i xq = load_256(xb + 2);
    __m256i x_offset = _mm256_setzero_si256();
    if constexpr (W::kOffset != 0)
      x_offset = _mm256_maddubs_epi16(_mm256_set1_epi8(W::kOffset), xq);
    __m256 x_sum = _mm256_setzero_ps();
    if constexpr (W::kHasMin) x_sum = _mm256_cvtepi32_ps(madd_u8_s8(_mm256_set1_epi8(1), xq));
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const uint8_t* wb = w[r] + b * W::kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchBytes), _MM_HINT_T0);
      const __m256i q = W::levels(wb);
      const __m256i q_unsigned = W::kSigned ? _mm256_abs_epi8(q) : q;
      const float dw = W::scale(wb);
      __m256i pairs = _mm256_maddubs_epi16(q_unsigned, W::kSigned ? _mm256_sign_epi8(xq, q) : xq);
      if constexpr (W::kOffset != 0) pairs = _mm256_sub_epi16(pairs, x_offset);
      const __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones16));
      acc[r] = _mm256_fmadd_ps(sum, _mm256_set1_ps(dw * dx), acc[r]);
      if constexpr (W::kHasMin) {
        acc[r] = _mm256_fmadd_ps(x_sum, _mm256_set1_ps(W::min(wb) * dx), acc[r]);
      }
    }
  }
  for (size_t r = 0; r < R; ++r) *y[r] = hsum(acc[r]);
}

// Covers rows [0, n_rows) of columns [c, c + C) with R x C register tiles, then single rows for
// what is left (run_tiles picks kTileRows x kTileCols, then narrower column blocks). Every register
// tile does each (row, column)'s arithmetic in the same order, so the tiling never changes a
// result.
template <typename W, size_t R, size_t C>
void cover_rows(const DotTile& t, size_t c, size_t n_blocks) {
  const uint8_t* x = t.x + c * t.x_stride;
  size_t r = 0;
  for (; r + R <= t.n_rows; r += R) {
    block_kernel<W, R, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, n_blocks,
                          t.y + c * t.y_stride + r, t.y_stride);
  }
  for (; r < t.n_rows; ++r) {
    block_kernel<W, 1, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, n_blocks,
                          t.y + c * t.y_stride + r, t.y_stride);
  }
}

// One column over all the tile's rows: four far-apart rows side by side (rows_kernel), then the
// rows left over.
template <typename W>
void stream_column(const DotTile& t, size_t c, size_t n_blocks) {
  DotTile column = t;
  column.x = t.x + c * t.x_stride;
  column.n_cols = 1;
  column.y = t.y + c * t.y_stride;
  for_row_streams<kStreams>(
      column,
      [&](const uint8_t* const(&w)[kStreams], float* const(&y)[kStreams]) {
        rows_kernel<W, kStreams>(w, column.x, n_blocks, y);
      },
      [&](const uint8_t* w, float* y) {
        block_kernel<W, 1, 1>(w, t.w_stride, column.x, t.x_stride, n_blocks, y, t.y_stride);
      });
}

// Columns in groups of four (3 x 4 tiles); a remainder of three or two columns gets a tile of
// its own width (4 x 3, 6 x 2: twelve accumulators each, like 3 x 4) and a last single column
// the decode streams. Batched decode steps have any column count -- 3, 5, 7 sequences -- and a
// remainder run one row at a time measured a quarter of the step's time at three columns.
// The rows go kRowsPerTile at a time through every column group, so the groups after the first
// read them from L2 rather than fetching a whole task's rows (hundreds of rows of 4864
// elements, more than L2) again for every four columns. (On the Zen 3 this was written on, the
// difference at 8 and 16 columns was within the run-to-run noise: the tiles are compute-bound.)
template <typename W>
void run_tiles(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  for (size_t r0 = 0; r0 < t.n_rows; r0 += kRowsPerTile) {
    DotTile rows = t;
    rows.w = t.w + r0 * t.w_stride;
    rows.n_rows = t.n_rows - r0 < kRowsPerTile ? t.n_rows - r0 : kRowsPerTile;
    rows.y = t.y + r0;
    size_t c = 0;
    for (; c + kTileCols <= t.n_cols; c += kTileCols)
      cover_rows<W, kTileRows, kTileCols>(rows, c, n_blocks);
    switch (t.n_cols - c) {
      case 3:
        cover_rows<W, 4, 3>(rows, c, n_blocks);
        break;
      case 2:
        cover_rows<W, 6, 2>(rows, c, n_blocks);
        break;
      case 1:
        stream_column<W>(rows, c, n_blocks);
        break;
      default:
        break;
    }
  }
}

// Prefill: the tile's rows unpacked once into scratch -- per block the 32 levels, the scale and
// the min as floats (Unpacked<W>, a block format of its own) -- then every column group runs
// against them, so the unpacking is paid once per tile instead of once per column group. The
// values are the ones W's blocks give, and block_kernel does the same arithmetic on them: a
// tiled product equals the streamed one bit for bit.
template <typename W>
struct Unpacked {
  static constexpr size_t kBytes = 40;  // float scale, float min, 32 levels
  static constexpr int kOffset = W::kOffset;
  static constexpr bool kHasMin = W::kHasMin;
  static constexpr bool kSigned = W::kSigned;
  static __m256i levels(const uint8_t* b) { return load_256(b + 8); }
  static float scale(const uint8_t* b) { return load_f32(b); }
  static float min(const uint8_t* b) { return load_f32(b + 4); }

  static void pack_row(const uint8_t* w, size_t n_blocks, uint8_t* out) {
    for (size_t b = 0; b < n_blocks; ++b, w += W::kBytes, out += kBytes) {
      const float d = W::scale(w), m = W::min(w);
      std::memcpy(out, &d, sizeof(d));
      std::memcpy(out + 4, &m, sizeof(m));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), W::levels(w));
    }
  }
};

template <typename W>
size_t tile_scratch_bytes(size_t k) {
  return kRowsPerTile * (k / kQK) * Unpacked<W>::kBytes;
}

template <typename W>
void tile(const DotTile& t, uint8_t* scratch) {
  const size_t n_blocks = t.k / kQK;
  const size_t row_bytes = n_blocks * Unpacked<W>::kBytes;
  for (size_t r = 0; r < t.n_rows; ++r) {
    Unpacked<W>::pack_row(t.w + r * t.w_stride, n_blocks, scratch + r * row_bytes);
  }
  DotTile unpacked = t;
  unpacked.w = scratch;
  unpacked.w_stride = row_bytes;
  run_tiles<Unpacked<W>>(unpacked);
}

template <typename W>
void dot(const DotTile& t) {
  if (t.n_cols == 1) {
    stream_column<W>(t, 0, t.k / kQK);
    return;
  }
  run_tiles<W>(t);
}

template <typename W>
void set(KernelTable& table, TensorType type) {
  WeightKernels& k = table.weights[static_cast<uint32_t>(type)];
  k.dot = dot<W>;
  k.matmul.tile = tile<W>;
  k.matmul.rows_per_tile = kRowsPerTile;
  k.matmul.tile_scratch_bytes = tile_scratch_bytes<W>;
}

}  // namespace

void fill_legacy_dots(KernelTable& table) {
  set<Q8_0>(table, TensorType::kQ8_0);
  set<Q4_0>(table, TensorType::kQ4_0);
  set<Q4_1>(table, TensorType::kQ4_1);
  set<Q5_0>(table, TensorType::kQ5_0);
  set<Q5_1>(table, TensorType::kQ5_1);
  set<IQ4_NL>(table, TensorType::kIQ4_NL);
}

}  // namespace synapse::avx2
