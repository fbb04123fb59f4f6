// SPDX-License-Identifier: Apache-2.0
// AVX-512 products of F32, F16 and BF16 weights with F32 activations: 16-lane dot products
// for decode (one row at a time, one sequential stream), and for prefill a packed kernel that
// converts 32 weight rows to F32 once, stored k-major ([k][32]), and computes 32 rows x 12
// columns per register block: per k, two weight vectors and twelve broadcast activations feed
// 24 FMAs.
#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

struct F32 {
  static constexpr size_t kElementBytes = 4;
  static __m512 load16(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static __m512 load16(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct F16 {
  static constexpr size_t kElementBytes = 2;
  static __m512 load16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load16(const uint8_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};
struct BF16 {
  static constexpr size_t kElementBytes = 2;
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load16(const uint8_t* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load16(const uint8_t* p, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, p));
  }
};

// --- Decode ---------------------------------------------------------------------------------

template <typename W, size_t C>
void row_dot(const uint8_t* w, const uint8_t* x, size_t x_stride, size_t k, float* y,
             size_t y_stride) {
  __m512 acc0[C], acc1[C];
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c) acc0[c] = acc1[c] = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512 w0 = W::load16(w + i * W::kElementBytes);
    const __m512 w1 = W::load16(w + (i + 16) * W::kElementBytes);
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      const auto* xc = reinterpret_cast<const float*>(x + c * x_stride);
      acc0[c] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xc + i), acc0[c]);
      acc1[c] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xc + i + 16), acc1[c]);
    }
  }
  for (; i < k; i += 16) {
    const size_t n = k - i < 16 ? k - i : 16;
    const auto mask = static_cast<__mmask16>((1u << n) - 1);
    const __m512 wv = W::load16(w + i * W::kElementBytes, mask);
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      const auto* xc = reinterpret_cast<const float*>(x + c * x_stride);
      acc0[c] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, xc + i), acc0[c]);
    }
  }
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c)
    y[c * y_stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[c], acc1[c]));
}

template <typename W>
void dot(const DotTile& t) {
  for_column_blocks<4>(t.n_cols, [&]<size_t C>(size_t c) {
    for (size_t r = 0; r < t.n_rows; ++r) {
      row_dot<W, C>(t.w + r * t.w_stride, t.x + c * t.x_stride, t.x_stride, t.k,
                    t.y + c * t.y_stride + r, t.y_stride);
    }
  });
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
      const __m512 v = r < t.n_rows ? W::load16(t.w + r * t.w_stride + i * W::kElementBytes, mask)
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
  k.matmul.equals_dot = false;  // 32 x 12 register tiles sum in another order than `dot`
}

}  // namespace

void fill_float_kernels(KernelTable& table) {
  set<F32>(table, TensorType::kF32);
  set<F16>(table, TensorType::kF16);
  set<BF16>(table, TensorType::kBF16);
}

}  // namespace synapse::avx512
