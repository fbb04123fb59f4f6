// SPDX-License-Identifier: Apache-2.0
// Matrix products of a weight matrix (any type, as stored in the file) with F32 activation rows,
// split over output rows on a ThreadPool: few columns (decode, batched decode) stream the
// weights once through the `dot` tiles; many columns (prefill) go through the ISA's cache-tiled
// `matmul` kernel when it has one. Activations are quantized on the fly to the weight type's dot
// partner, or used as F32 with DotPath::kF32. No allocation: the caller passes scratch of
// matmul_scratch_bytes().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "kernels/kernel_table.h"

namespace synapse {

// n_rows rows of k elements of `type`; row r starts at data + r * row_stride bytes.
struct WeightMatrix {
  TensorType type;
  const uint8_t* data;
  size_t row_stride;
  size_t n_rows;
  size_t k;
};

enum class DotPath : uint8_t {
  kQuantized,  // activations quantized to activation_type(w.type) (F32 weights: F32)
  kF32,        // activations kept in F32: slower for quantized weights, no activation rounding
};

// Below this many columns the product streams weights through `dot` tiles even where the ISA
// has a packed matmul kernel (packing a tile costs about as much as a few columns' work).
inline constexpr size_t kMatmulMinColumns = 16;

size_t matmul_scratch_bytes(const KernelTable& kernels, const WeightMatrix& w, size_t n_cols,
                            int n_threads, DotPath path = DotPath::kQuantized);

// y[c * y_stride + r] = dot(W row r, x + c * x_stride) for every row r and c < n_cols. The
// weight type must have kernels (is_weight_type); k must be a multiple of its block size.
void matmul(const KernelTable& kernels, const WeightMatrix& w, const float* x, size_t x_stride,
            size_t n_cols, float* y, size_t y_stride, std::span<uint8_t> scratch, ThreadPool& pool,
            DotPath path = DotPath::kQuantized);

// Dequantizes row `row` of the matrix into y (k floats): embedding lookup.
void embedding_row(const KernelTable& kernels, const WeightMatrix& w, size_t row, float* y);

}  // namespace synapse
