// SPDX-License-Identifier: Apache-2.0
#include "kernels/matmul.h"

#include "base/check.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

constexpr size_t kScratchAlign = 64;
// Rows per task of the streaming path: a multiple of every kernel's row blocking, small enough
// to balance two to a few dozen threads on the smallest matrices (a few hundred rows).
constexpr size_t kDotRowsPerTask = 32;
// Large matrices get larger tasks (about this many per thread): each task is one contiguous run
// of the weight stream, and a new run restarts the hardware prefetcher.
constexpr size_t kDotTasksPerThread = 8;

size_t align_up(size_t n) { return (n + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

struct Plan {
  TensorType act_type;
  size_t act_bytes;           // one quantized column (0: the F32 input is used directly)
  bool packed;                // the matmul kernel's tiles
  PrepareFn prepare;          // nullptr: the kernel reads the quantized columns
  size_t prepared_bytes;      // one prepared column (0: none)
  size_t tile_scratch_bytes;  // per thread
};

Plan make_plan(const KernelTable& kernels, const WeightMatrix& w, size_t n_cols, DotPath path) {
  SYN_CHECK(is_weight_type(w.type), "matmul: no kernels for this weight type");
  SYN_CHECK(w.k % block_elements(w.type) == 0, "matmul: k is not a multiple of the block size");
  const WeightKernels& wk = kernels.weight(w.type);
  Plan plan{};
  plan.act_type = path == DotPath::kF32 ? TensorType::kF32 : activation_type(w.type);
  if (plan.act_type != TensorType::kF32) plan.act_bytes = align_up(row_bytes(plan.act_type, w.k));
  const bool f32_path = path == DotPath::kF32 && activation_type(w.type) != TensorType::kF32;
  plan.packed = !f32_path && wk.matmul.tile != nullptr && n_cols >= kMatmulMinColumns;
  if (plan.packed) {
    plan.prepare = wk.matmul.prepare;
    if (plan.prepare != nullptr) plan.prepared_bytes = align_up(wk.matmul.prepared_bytes(w.k));
    plan.tile_scratch_bytes = align_up(wk.matmul.tile_scratch_bytes(w.k));
  } else if (!f32_path && wk.dot_prepare != nullptr) {
    plan.prepare = wk.dot_prepare;
    plan.prepared_bytes = align_up(wk.dot_prepared_bytes(w.k));
  }
  return plan;
}

}  // namespace

size_t matmul_scratch_bytes(const KernelTable& kernels, const WeightMatrix& w, size_t n_cols,
                            int n_threads, DotPath path) {
  const Plan plan = make_plan(kernels, w, n_cols, path);
  return kScratchAlign + n_cols * (plan.act_bytes + plan.prepared_bytes) +
         static_cast<size_t>(n_threads) * plan.tile_scratch_bytes;
}

void matmul(const KernelTable& kernels, const WeightMatrix& w, const float* x, size_t x_stride,
            size_t n_cols, float* y, size_t y_stride, std::span<uint8_t> scratch, ThreadPool& pool,
            DotPath path) {
  if (n_cols == 0 || w.n_rows == 0) return;
  const Plan plan = make_plan(kernels, w, n_cols, path);
  SYN_CHECK(scratch.size() >= matmul_scratch_bytes(kernels, w, n_cols, pool.size(), path),
            "matmul: scratch too small");
  const WeightKernels& wk = kernels.weight(w.type);
  uint8_t* base =
      scratch.data() +
      (kScratchAlign - reinterpret_cast<uintptr_t>(scratch.data()) % kScratchAlign) % kScratchAlign;
  uint8_t* act = base;
  uint8_t* prepared = act + n_cols * plan.act_bytes;
  uint8_t* tile_scratch = prepared + n_cols * plan.prepared_bytes;

  // 1. Activations in the dot partner's format, then in the packed kernel's layout.
  const uint8_t* columns = reinterpret_cast<const uint8_t*>(x);
  size_t column_stride = x_stride * sizeof(float);
  if (plan.act_bytes != 0) {
    const QuantizeRowFn quantize =
        plan.act_type == TensorType::kQ8_K ? kernels.quantize_q8_k : kernels.quantize_q8_0;
    auto quantize_column = [&](size_t c, int /*thread*/) {
      quantize(x + c * x_stride, act + c * plan.act_bytes, w.k);
      if (plan.prepare != nullptr) {
        plan.prepare(act + c * plan.act_bytes, w.k, prepared + c * plan.prepared_bytes);
      }
    };
    if (n_cols == 1) {
      quantize_column(0, 0);
    } else {
      pool.parallel_for(n_cols, quantize_column);
    }
    columns = plan.prepare != nullptr ? prepared : act;
    column_stride = plan.prepare != nullptr ? plan.prepared_bytes : plan.act_bytes;
  }

  // 2. Output rows split over the pool.
  if (plan.packed) {
    const size_t rows_per_task = wk.matmul.rows_per_tile;
    const size_t n_tasks = (w.n_rows + rows_per_task - 1) / rows_per_task;
    pool.parallel_for(n_tasks, [&](size_t task, int thread) {
      const size_t r0 = task * rows_per_task;
      const size_t rows = w.n_rows - r0 < rows_per_task ? w.n_rows - r0 : rows_per_task;
      wk.matmul.tile(DotTile{w.data + r0 * w.row_stride, w.row_stride, rows, columns, column_stride,
                             n_cols, w.k, y + r0, y_stride},
                     tile_scratch + static_cast<size_t>(thread) * plan.tile_scratch_bytes);
    });
    return;
  }
  const DotTileFn dot = path == DotPath::kF32 ? wk.dot_f32 : wk.dot;
  const size_t target = w.n_rows / (static_cast<size_t>(pool.size()) * kDotTasksPerThread);
  const size_t rows_per_task = target <= kDotRowsPerTask ? kDotRowsPerTask
                                                         : (target + kDotRowsPerTask - 1) /
                                                               kDotRowsPerTask * kDotRowsPerTask;
  const size_t n_tasks = (w.n_rows + rows_per_task - 1) / rows_per_task;
  pool.parallel_for(n_tasks, [&](size_t task, int /*thread*/) {
    const size_t r0 = task * rows_per_task;
    const size_t rows = w.n_rows - r0 < rows_per_task ? w.n_rows - r0 : rows_per_task;
    dot(DotTile{w.data + r0 * w.row_stride, w.row_stride, rows, columns, column_stride, n_cols, w.k,
                y + r0, y_stride});
  });
}

void embedding_row(const KernelTable& kernels, const WeightMatrix& w, size_t row, float* y) {
  SYN_CHECK(row < w.n_rows, "embedding_row: row out of range");
  kernels.weight(w.type).dequantize(w.data + row * w.row_stride, y, w.k);
}

}  // namespace synapse
