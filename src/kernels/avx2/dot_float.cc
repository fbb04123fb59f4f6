// SPDX-License-Identifier: Apache-2.0
// AVX2 dot products with F32 activations: F32, F16 (vcvtph2ps) and BF16 (a 16-bit shift) weight
// rows with FMA into 8-lane accumulators, one chain per (row, column) in tiles of eight or
// twelve; and the
// exact path for quantized weights, which dequantizes each 256-element chunk of a row with the
// reference dequantizer (bit-exact) once and multiplies it into every column.
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/simd_avx2.h"
#include "kernels/ref/ref_kernels.h"
#include "tensor/quant.h"

namespace synapse::avx2 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

struct F32 {
  static constexpr size_t kElementBytes = 4;
  static __m256 load8(const uint8_t* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
  static float load1(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
};
struct F16 {
  static constexpr size_t kElementBytes = 2;
  static __m256 load8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float load1(const uint8_t* p) { return f16_to_f32(load_u16(p)); }
};
struct BF16 {
  static constexpr size_t kElementBytes = 2;
  static __m256 load8(const uint8_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float load1(const uint8_t* p) {
    const uint32_t bits = static_cast<uint32_t>(load_u16(p)) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
};

// Each (row, column) product is one chain of 8-lane FMAs in element order, added horizontally,
// then the elements past the last 8 one by one. Every tile shape below does exactly these
// operations per (row, column), so a result never depends on the tile, the batch or the threads.
// A chain waits 4 cycles per FMA on Zen 3, so the tiles keep eight or twelve chains in flight: one
// row against one column at a time held F16 decode at half the memory bandwidth.
template <typename W, size_t R, size_t C>
void float_kernel(const uint8_t* w, size_t w_stride, const uint8_t* x, size_t x_stride, size_t k,
                  float* y, size_t y_stride) {
  __m256 acc[R][C];
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  size_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 xv[C];
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) {
      xv[c] = _mm256_loadu_ps(reinterpret_cast<const float*>(x + c * x_stride) + i);
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const __m256 wv = W::load8(w + r * w_stride + i * W::kElementBytes);
#pragma GCC unroll 8
      for (size_t c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) {
      float sum = hsum(acc[r][c]);
      const auto* xc = reinterpret_cast<const float*>(x + c * x_stride);
      for (size_t j = i; j < k; ++j) {
        sum += W::load1(w + r * w_stride + j * W::kElementBytes) * xc[j];
      }
      y[c * y_stride + r] = sum;
    }
  }
}

// R x C tiles over every row of columns [c, c + C), single rows for what is left.
template <typename W, size_t R, size_t C>
void cover_rows(const DotTile& t, size_t c) {
  const uint8_t* x = t.x + c * t.x_stride;
  float* y = t.y + c * t.y_stride;
  size_t r = 0;
  for (; r + R <= t.n_rows; r += R) {
    float_kernel<W, R, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, t.k, y + r, t.y_stride);
  }
  for (; r < t.n_rows; ++r) {
    float_kernel<W, 1, C>(t.w + r * t.w_stride, t.w_stride, x, t.x_stride, t.k, y + r, t.y_stride);
  }
}

// Columns four at a time in 3 x 4 tiles (one weight conversion feeds four columns), a remainder
// of three or two columns in 4 x 3 or 6 x 2 (twelve chains each), and a last single column
// (decode) eight rows at a time: eight chains, eight weight streams.
template <typename W>
void dot_float(const DotTile& t) {
  size_t c = 0;
  for (; c + 4 <= t.n_cols; c += 4) cover_rows<W, 3, 4>(t, c);
  switch (t.n_cols - c) {
    case 3:
      cover_rows<W, 4, 3>(t, c);
      break;
    case 2:
      cover_rows<W, 6, 2>(t, c);
      break;
    case 1:
      cover_rows<W, 8, 1>(t, c);
      break;
    default:
      break;
  }
}

// Quantized weights against F32 activations: 256 elements at a time, dequantized once per row
// and multiplied into up to kMaxColumns columns.
constexpr size_t kChunk = 256;
constexpr size_t kMaxColumns = 8;

template <TensorType kType>
void dot_dequantized(const DotTile& t) {
  const size_t block = block_elements(kType);
  const size_t chunk = kChunk / block * block;
  const size_t chunk_bytes = chunk / block * block_bytes(kType);
  alignas(32) float values[kChunk];
  for (size_t c0 = 0; c0 < t.n_cols; c0 += kMaxColumns) {
    const size_t n_cols = t.n_cols - c0 < kMaxColumns ? t.n_cols - c0 : kMaxColumns;
    for (size_t r = 0; r < t.n_rows; ++r) {
      __m256 acc[kMaxColumns];
      for (size_t c = 0; c < n_cols; ++c) acc[c] = _mm256_setzero_ps();
      const uint8_t* row = t.w + r * t.w_stride;
      for (size_t i = 0; i < t.k; i += chunk) {
        const size_t n = t.k - i < chunk ? t.k - i : chunk;
        ref::dequantize(kType, row + i / chunk * chunk_bytes, values, n);
        for (size_t c = 0; c < n_cols; ++c) {
          const auto* x = reinterpret_cast<const float*>(t.x + (c0 + c) * t.x_stride) + i;
          for (size_t j = 0; j < n; j += 8) {
            acc[c] = _mm256_fmadd_ps(_mm256_load_ps(values + j), _mm256_loadu_ps(x + j), acc[c]);
          }
        }
      }
      for (size_t c = 0; c < n_cols; ++c) t.y[(c0 + c) * t.y_stride + r] = hsum(acc[c]);
    }
  }
}

}  // namespace

void fill_float_dots(KernelTable& table) {
  using T = TensorType;
  auto set = [&table](T type, DotTileFn dot, DotTileFn dot_f32) {
    table.weights[static_cast<uint32_t>(type)].dot = dot;
    table.weights[static_cast<uint32_t>(type)].dot_f32 = dot_f32;
  };
  set(T::kF32, dot_float<F32>, dot_float<F32>);
  set(T::kF16, dot_float<F16>, dot_float<F16>);
  set(T::kBF16, dot_float<BF16>, dot_float<BF16>);
  auto set_f32 = [&table](T type, DotTileFn dot_f32) {
    table.weights[static_cast<uint32_t>(type)].dot_f32 = dot_f32;
  };
  set_f32(T::kQ8_0, dot_dequantized<T::kQ8_0>);
  set_f32(T::kQ4_0, dot_dequantized<T::kQ4_0>);
  set_f32(T::kQ4_1, dot_dequantized<T::kQ4_1>);
  set_f32(T::kQ5_0, dot_dequantized<T::kQ5_0>);
  set_f32(T::kQ5_1, dot_dequantized<T::kQ5_1>);
  set_f32(T::kQ2_K, dot_dequantized<T::kQ2_K>);
  set_f32(T::kQ3_K, dot_dequantized<T::kQ3_K>);
  set_f32(T::kQ4_K, dot_dequantized<T::kQ4_K>);
  set_f32(T::kQ5_K, dot_dequantized<T::kQ5_K>);
  set_f32(T::kQ6_K, dot_dequantized<T::kQ6_K>);
  set_f32(T::kIQ4_NL, dot_dequantized<T::kIQ4_NL>);
  set_f32(T::kIQ4_XS, dot_dequantized<T::kIQ4_XS>);
}

}  // namespace synapse::avx2
