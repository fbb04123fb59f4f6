// SPDX-License-Identifier: Apache-2.0
// Matrix products of a weight matrix (any type, as stored in the file) with F32 activation rows,
// split over output rows on a ThreadPool: few columns (decode, batched decode) stream the
// weights once through the `dot` tiles; many columns (prefill) go through the ISA's cache-tiled
// `matmul` kernel when it has one. Activations are quantized on the fly to the weight type's dot
// partner, or used as F32 with DotPath::kF32. No allocation: the caller passes scratch of
// matmul_scratch_bytes().
//
// Reproducibility: an output element depends only on its weight row, its activation column,
// the DotPath and the route (streaming or tiled) -- never on the number of threads, on how the
// rows are split into tasks, or on how many other columns share the call. The forward pass
// relies on this to make logits bit-identical across thread counts and batch compositions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "kernels/kernel_table.h"

namespace synapse {

// Below this many columns kAuto streams weights through `dot` tiles even where the ISA has a
// packed matmul kernel (packing a tile costs about as much as a few columns' work).
inline constexpr size_t kMatmulMinColumns = 16;

size_t matmul_scratch_bytes(const KernelTable& kernels, const WeightMatrix& w, size_t n_cols,
                            int n_threads, DotPath path = DotPath::kQuantized,
                            MatmulRoute route = MatmulRoute::kAuto);

// y[c * y_stride + r] = dot(W row r, x + c * x_stride) for every row r and c < n_cols. The
// weight type must have kernels (is_weight_type); k must be a multiple of its block size.
void matmul(const KernelTable& kernels, const WeightMatrix& w, const float* x, size_t x_stride,
            size_t n_cols, float* y, size_t y_stride, std::span<uint8_t> scratch, ThreadPool& pool,
            DotPath path = DotPath::kQuantized, MatmulRoute route = MatmulRoute::kAuto);

// Several matrices applied to the same activations (q/k/v, gate/up) in one pass: each
// activation format is prepared once, and the row tasks of all matrices run as one job on the
// pool. Each output's bits equal those of matmul() of that matrix alone.
// (MatmulOutput and kMaxMatmulGroup: ops/op_params.h.)

size_t matmul_group_scratch_bytes(const KernelTable& kernels, std::span<const WeightMatrix> ws,
                                  size_t n_cols, int n_threads, DotPath path, MatmulRoute route);
void matmul_group(const KernelTable& kernels, std::span<const MatmulOutput> outputs, const float* x,
                  size_t x_stride, size_t n_cols, std::span<uint8_t> scratch, ThreadPool& pool,
                  DotPath path, MatmulRoute route);

// Dequantizes row `row` of the matrix into y (k floats): embedding lookup.
void embedding_row(const KernelTable& kernels, const WeightMatrix& w, size_t row, float* y);

}  // namespace synapse
