// SPDX-License-Identifier: Apache-2.0
// AVX-512 products of F32, F16 and BF16 weights with F32 activations, over rows as stored -- the
// matrices dot_interleaved_float.cc does not take (a row count not a multiple of 16, or
// SYNAPSE_INTERLEAVE=0): a register-tiled dot for decode and batched decode (and the streamed
// route's prefill), whose every (row, column) sum is the same operations in the same order
// whatever the tile; and for prefill a packed kernel that
// converts 32 weight rows to F32 once, stored k-major ([k][32]), and computes 32 rows x 12
// columns per register block: per k, two weight vectors and twelve broadcast activations feed
// 24 FMAs.
#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"
#include "kernels/avx512/float_elements.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

// --- Decode, batched decode and the streamed route ----------------------------------------

// Each (row, column) product is two chains of 16-lane FMAs in element order -- elements
// [32j, 32j + 16) into the first, [32j + 16, 32j + 32) into the second --, the elements past the
// last 32 in masked steps of 16 into the first, and the sum of the two chains added across its
// lanes. Every tile shape below does exactly these operations per (row, column), so a result
// never depends on the tile, the batch, the prefill chunk or the threads: one kernel serves
// decode, batched decode and the service's prefill. An R x C tile keeps 2RC chains in flight (an
// FMA waits 4 cycles) and loads R weight vectors and C activation vectors per RC FMAs: at 16
// columns 1.6x the former one-row-at-a-time dot, at 512 ~0.7x the packed tile below (each FMA
// reads two full vectors where the tile's reads one and a broadcast, and each (row, column) ends
// in a horizontal sum).
//
// Rows of a tile are side by side in memory, so the hardware prefetcher, which follows each of
// the R streams into the next row (already read), does not fetch the next tiles: a tile of R > 1
// rows fetches the rows two tiles ahead itself (1.3-1.6x at 2-4 columns out of cache; a prefetch
// past the matrix's end does not fault).
constexpr size_t kAhead = 2;
template <typename W, size_t R, size_t C>
void float_kernel(const uint8_t* w, size_t w_stride, const uint8_t* x, size_t x_stride, size_t k,
                  float* y, size_t y_stride) {
  __m512 acc0[R][C], acc1[R][C];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) acc0[r][c] = acc1[r][c] = _mm512_setzero_ps();
  }
  // One half (16 elements at i) of every (row, column) into `acc`.
  auto half = [&](__m512(&acc)[R][C], size_t i, __mmask16 mask) {
    __m512 xv[C];
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) {
      xv[c] = _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(x + c * x_stride) + i);
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      if constexpr (R > 1) {
        _mm_prefetch(reinterpret_cast<const char*>(w + (r + kAhead * R) * w_stride + i * W::kBytes),
                     _MM_HINT_T0);
      }
      const __m512 wv = W::load16(w + r * w_stride + i * W::kBytes, mask);
#pragma GCC unroll 8
      for (size_t c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  };
  constexpr auto kAll = static_cast<__mmask16>(0xFFFF);
  size_t i = 0;
  for (; i + 32 <= k; i += 32) {
    half(acc0, i, kAll);
    half(acc1, i + 16, kAll);
  }
  for (; i < k; i += 16) {
    const size_t n = k - i < 16 ? k - i : 16;
    half(acc0, i, static_cast<__mmask16>((1u << n) - 1));
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) {
      y[c * y_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[r][c], acc1[r][c]));
    }
  }
}

// R x C tiles over rows [r0, r1) of columns [c, c + C), single rows for what is left.
template <typename W, size_t R, size_t C>
void cover_rows(const DotTile& t, size_t r0, size_t r1, size_t c) {
  const uint8_t* x = t.x + c * t.x_stride;
  float* y = t.y + c * t.y_stride;
  size_t r = r0;
  for (; r + R <= r1; r += R) {
    float_kernel<W, R, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, t.k, y + r, t.y_stride);
  }
  for (; r < r1; ++r) {
    float_kernel<W, 1, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, t.k, y + r, t.y_stride);
  }
}

// Rows this many at a time against every column: the chunk's weights stay in L2 while the
// columns pass (a task of the streamed route may span megabytes of rows, which many columns
// would otherwise read from memory once per column block). A multiple of every tile's R.
constexpr size_t kRowChunk = 48;

// Columns four at a time in 3 x 4 tiles (one weight conversion feeds four columns), a remainder
// of three or two columns in 4 x 3 or 6 x 2 (24 chains each), and a last single column (decode)
// one row at a time: one sequential weight stream, which the hardware prefetcher follows best
// (eight rows side by side measured 5-10% slower at one column).
template <typename W>
void dot(const DotTile& t) {
  for (size_t r0 = 0; r0 < t.n_rows; r0 += kRowChunk) {
    const size_t r1 = t.n_rows - r0 < kRowChunk ? t.n_rows : r0 + kRowChunk;
    size_t c = 0;
    for (; c + 4 <= t.n_cols; c += 4) cover_rows<W, 3, 4>(t, r0, r1, c);
    switch (t.n_cols - c) {
      case 3:
        cover_rows<W, 4, 3>(t, r0, r1, c);
        break;
      case 2:
        cover_rows<W, 6, 2>(t, r0, r1, c);
        break;
      case 1:
        cover_rows<W, 1, 1>(t, r0, r1, c);
        break;
      default:
        break;
    }
  }
}

// --- Prefill --------------------------------------------------------------------------------

constexpr size_t kTileRows = 32;
constexpr size_t kBlockColumns = 12;

// Rows [0, n_rows) of W as F32, k-major: packed[i * 32 + r]; rows past n_rows are zero.
template <typename W>
void pack(const DotTile& t, float* packed) {
  for (size_t i = 0; i < t.k; i += 16) {
    const size_t n = t.k - i < 16 ? t.k - i : 16;
    const auto mask = static_cast<__mmask16>((1u << n) - 1);
    // Transpose 32 rows x 16 elements through a small staging area.
    alignas(64) float stage[kTileRows][16];
    for (size_t r = 0; r < kTileRows; ++r) {
      const __m512 v = r < t.n_rows ? W::load16(t.w + r * t.w_stride + i * W::kBytes, mask)
                                    : _mm512_setzero_ps();
      _mm512_store_ps(stage[r], v);
    }
    // Scalar transposition: a few percent of the tile's work (gathers are slower here).
    for (size_t j = 0; j < n; ++j) {
      for (size_t r = 0; r < kTileRows; ++r) packed[(i + j) * kTileRows + r] = stage[r][j];
    }
  }
}

template <size_t C>
void micro_kernel(const float* packed, size_t n_rows, const uint8_t* x, size_t x_stride, size_t k,
                  float* y, size_t y_stride) {
  __m512 acc0[C], acc1[C];
#pragma GCC unroll 12
  for (size_t c = 0; c < C; ++c) acc0[c] = acc1[c] = _mm512_setzero_ps();
  const float* xc[C];
#pragma GCC unroll 12
  for (size_t c = 0; c < C; ++c) xc[c] = reinterpret_cast<const float*>(x + c * x_stride);
  for (size_t i = 0; i < k; ++i) {
    const __m512 w0 = _mm512_load_ps(packed + i * kTileRows);
    const __m512 w1 = _mm512_load_ps(packed + i * kTileRows + 16);
#pragma GCC unroll 12
    for (size_t c = 0; c < C; ++c) {
      const __m512 xv = _mm512_set1_ps(xc[c][i]);
      acc0[c] = _mm512_fmadd_ps(w0, xv, acc0[c]);
      acc1[c] = _mm512_fmadd_ps(w1, xv, acc1[c]);
    }
  }
  const auto mask0 = static_cast<__mmask16>(n_rows >= 16 ? 0xFFFFu : (1u << n_rows) - 1);
  const auto mask1 = static_cast<__mmask16>(n_rows <= 16 ? 0u : (1u << (n_rows - 16)) - 1);
#pragma GCC unroll 12
  for (size_t c = 0; c < C; ++c) {
    _mm512_mask_storeu_ps(y + c * y_stride, mask0, acc0[c]);
    _mm512_mask_storeu_ps(y + c * y_stride + 16, mask1, acc1[c]);
  }
}

size_t tile_scratch_bytes(size_t k) { return k * kTileRows * sizeof(float); }

template <typename W>
void tile(const DotTile& t, uint8_t* scratch) {
  auto* packed = reinterpret_cast<float*>(scratch);
  pack<W>(t, packed);
  size_t c = 0;
  for (; c + kBlockColumns <= t.n_cols; c += kBlockColumns) {
    micro_kernel<kBlockColumns>(packed, t.n_rows, t.x + c * t.x_stride, t.x_stride, t.k,
                                t.y + c * t.y_stride, t.y_stride);
  }
  for (; c + 4 <= t.n_cols; c += 4) {
    micro_kernel<4>(packed, t.n_rows, t.x + c * t.x_stride, t.x_stride, t.k, t.y + c * t.y_stride,
                    t.y_stride);
  }
  for (; c < t.n_cols; ++c) {
    micro_kernel<1>(packed, t.n_rows, t.x + c * t.x_stride, t.x_stride, t.k, t.y + c * t.y_stride,
                    t.y_stride);
  }
}

template <typename W>
void set(KernelTable& table, TensorType type) {
  WeightKernels& k = table.weights[static_cast<uint32_t>(type)];
  k.dot = dot<W>;
  k.dot_f32 = dot<W>;
  k.matmul.tile = tile<W>;
  k.matmul.rows_per_tile = kTileRows;
  k.matmul.tile_scratch_bytes = tile_scratch_bytes;
  k.matmul.prepare = nullptr;
  k.matmul.prepared_bytes = nullptr;
  // The 32 x 12 tiles sum each (row, column) in one scalar chain per lane, `dot` in two 16-lane
  // chains: the tile is the faster prefill (~1.4x at 512 columns), so MatmulRoute::kAuto keeps
  // it, and the streamed route (the service: batch invariance) runs `dot` on every step.
  k.matmul.equals_dot = false;
}

}  // namespace

void fill_float_kernels(KernelTable& table) {
  set<F32>(table, TensorType::kF32);
  set<F16>(table, TensorType::kF16);
  set<BF16>(table, TensorType::kBF16);
}

}  // namespace synapse::avx512
