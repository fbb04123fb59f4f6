// SPDX-License-Identifier: Apache-2.0
// Reference dot products of weight rows of any type with F32 activations: each weight block is
// dequantized with the reference dequantizer (bit-exact with ggml), then multiplied and summed
// in float, element by element, in order. This is the exact path: the only rounding is the
// float arithmetic itself, no activation quantization.
#include <cmath>

#include "kernels/ref/ref_kernels.h"
#include "tensor/quant.h"

namespace synapse::ref {

DotTileFn quant_dot_kernel_exact(TensorType type);
DotTileFn quant_dot_kernel_magnitude(TensorType type);

namespace {

template <bool kMagnitude>
float dot_f32_row(TensorType type, const uint8_t* w, const float* x, size_t k) {
  const size_t block = block_elements(type) == 1 ? 256 : block_elements(type);
  const size_t block_size = row_bytes(type, block);
  float values[256];
  float acc = 0.0f;
  for (size_t i = 0; i < k; i += block) {
    const size_t n = k - i < block ? k - i : block;
    dequantize_row(type, {w + i / block * block_size, row_bytes(type, n)}, {values, n});
    for (size_t j = 0; j < n; ++j) {
      acc += kMagnitude ? std::fabs(values[j]) * std::fabs(x[i + j]) : values[j] * x[i + j];
    }
  }
  return acc;
}

template <TensorType kType, bool kMagnitude>
void dot_f32_tile(const DotTile& t) {
  for (size_t c = 0; c < t.n_cols; ++c) {
    const auto* x = reinterpret_cast<const float*>(t.x + c * t.x_stride);
    for (size_t r = 0; r < t.n_rows; ++r) {
      t.y[c * t.y_stride + r] = dot_f32_row<kMagnitude>(kType, t.w + r * t.w_stride, x, t.k);
    }
  }
}

template <bool kMagnitude>
DotTileFn f32_kernel(TensorType type) {
  using T = TensorType;
  switch (type) {
    case T::kF32:
      return dot_f32_tile<T::kF32, kMagnitude>;
    case T::kF16:
      return dot_f32_tile<T::kF16, kMagnitude>;
    case T::kBF16:
      return dot_f32_tile<T::kBF16, kMagnitude>;
    case T::kQ8_0:
      return dot_f32_tile<T::kQ8_0, kMagnitude>;
    case T::kQ4_0:
      return dot_f32_tile<T::kQ4_0, kMagnitude>;
    case T::kQ4_1:
      return dot_f32_tile<T::kQ4_1, kMagnitude>;
    case T::kQ5_0:
      return dot_f32_tile<T::kQ5_0, kMagnitude>;
    case T::kQ5_1:
      return dot_f32_tile<T::kQ5_1, kMagnitude>;
    case T::kQ2_K:
      return dot_f32_tile<T::kQ2_K, kMagnitude>;
    case T::kQ3_K:
      return dot_f32_tile<T::kQ3_K, kMagnitude>;
    case T::kQ4_K:
      return dot_f32_tile<T::kQ4_K, kMagnitude>;
    case T::kQ5_K:
      return dot_f32_tile<T::kQ5_K, kMagnitude>;
    case T::kQ6_K:
      return dot_f32_tile<T::kQ6_K, kMagnitude>;
    case T::kIQ4_NL:
      return dot_f32_tile<T::kIQ4_NL, kMagnitude>;
    case T::kIQ4_XS:
      return dot_f32_tile<T::kIQ4_XS, kMagnitude>;
    default:
      return nullptr;
  }
}

bool is_float_type(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16;
}

}  // namespace

DotTileFn dot_kernel(TensorType type) {
  return is_float_type(type) ? f32_kernel<false>(type) : quant_dot_kernel_exact(type);
}
DotTileFn dot_magnitude_kernel(TensorType type) {
  return is_float_type(type) ? f32_kernel<true>(type) : quant_dot_kernel_magnitude(type);
}
DotTileFn dot_f32_kernel(TensorType type) { return f32_kernel<false>(type); }
DotTileFn dot_f32_magnitude_kernel(TensorType type) { return f32_kernel<true>(type); }

void dequantize(TensorType type, const uint8_t* w, float* y, size_t n) {
  dequantize_row(type, {w, row_bytes(type, n)}, {y, n});
}

void quantize_q8_0(const float* x, uint8_t* y, size_t n) {
  quantize_row(TensorType::kQ8_0, {x, n}, {y, row_bytes(TensorType::kQ8_0, n)});
}

void quantize_q8_k(const float* x, uint8_t* y, size_t n) {
  quantize_row(TensorType::kQ8_K, {x, n}, {y, row_bytes(TensorType::kQ8_K, n)});
}

}  // namespace synapse::ref
