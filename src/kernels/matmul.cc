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

bool use_tiles(const WeightKernels& wk, bool f32_path, size_t n_cols, MatmulRoute route) {
  if (f32_path || wk.matmul.tile == nullptr) return false;
  switch (route) {
    case MatmulRoute::kStream:  // the streamed bits: a tile that gives them may run
      if (!wk.matmul.equals_dot) return false;
      break;
    case MatmulRoute::kTiled:
      return true;
    case MatmulRoute::kAuto:
      break;
  }
  return n_cols >= kMatmulMinColumns;
}

Plan make_plan(const KernelTable& kernels, const WeightMatrix& w, size_t n_cols, DotPath path,
               MatmulRoute route) {
  SYN_CHECK(is_weight_type(w.type), "matmul: no kernels for this weight type");
  SYN_CHECK(w.k % block_elements(w.type) == 0, "matmul: k is not a multiple of the block size");
  const WeightKernels& wk = kernels.weight(w.type);
  Plan plan{};
  plan.act_type = path == DotPath::kF32 ? TensorType::kF32 : activation_type(w.type);
  if (plan.act_type != TensorType::kF32) plan.act_bytes = align_up(row_bytes(plan.act_type, w.k));
  const bool f32_path = path == DotPath::kF32 && activation_type(w.type) != TensorType::kF32;
  if (w.interleaved) {
    // One kernel for every route: the interleaved dot tiles its columns itself.
    SYN_CHECK(wk.interleaved.rows != 0 && w.n_rows % wk.interleaved.rows == 0 &&
                  kDotRowsPerTask % wk.interleaved.rows == 0,
              "matmul: interleaved weights this kernel level does not read");
    if (!f32_path && wk.interleaved.prepare != nullptr) {
      plan.prepare = wk.interleaved.prepare;
      plan.prepared_bytes = align_up(wk.interleaved.prepared_bytes(w.k));
    }
    return plan;
  }
  plan.packed = use_tiles(wk, f32_path, n_cols, route);
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

// The activation columns one output reads: shared by every output of a group with the same
// quantized format and preparation.
struct Format {
  TensorType act_type;
  PrepareFn prepare;
  size_t act_bytes;
  size_t prepared_bytes;
  size_t k;
  uint8_t* act;       // n_cols quantized columns
  uint8_t* prepared;  // n_cols prepared columns
};

bool same_format(const Format& f, const Plan& p, size_t k) {
  return f.act_type == p.act_type && f.prepare == p.prepare && f.k == k;
}

// Output rows per streaming task: depends on the thread count, which only changes how rows are
// grouped, never what a row computes.
size_t stream_rows_per_task(size_t n_rows, int n_threads) {
  const size_t target = n_rows / (static_cast<size_t>(n_threads) * kDotTasksPerThread);
  if (target <= kDotRowsPerTask) return kDotRowsPerTask;
  return (target + kDotRowsPerTask - 1) / kDotRowsPerTask * kDotRowsPerTask;
}

struct GroupLayout {
  Plan plans[kMaxMatmulGroup];
  Format formats[kMaxMatmulGroup];
  size_t format_of[kMaxMatmulGroup];
  size_t n_formats = 0;
  size_t format_bytes = 0;  // all formats' columns
  size_t tile_scratch_bytes = 0;
};

GroupLayout make_layout(const KernelTable& kernels, std::span<const WeightMatrix> ws, size_t n_cols,
                        DotPath path, MatmulRoute route) {
  SYN_CHECK(!ws.empty() && ws.size() <= kMaxMatmulGroup, "matmul_group: 1..8 matrices");
  GroupLayout l;
  for (size_t i = 0; i < ws.size(); ++i) {
    const WeightMatrix& w = ws[i];
    SYN_CHECK(w.k == ws[0].k, "matmul_group: matrices must share k");
    const Plan p = make_plan(kernels, w, n_cols, path, route);
    l.plans[i] = p;
    if (p.tile_scratch_bytes > l.tile_scratch_bytes) l.tile_scratch_bytes = p.tile_scratch_bytes;
    size_t f = 0;
    while (f < l.n_formats && !same_format(l.formats[f], p, w.k)) ++f;
    if (f == l.n_formats) {
      l.formats[f] =
          Format{p.act_type, p.prepare, p.act_bytes, p.prepared_bytes, w.k, nullptr, nullptr};
      l.format_bytes += n_cols * (p.act_bytes + p.prepared_bytes);
      ++l.n_formats;
    }
    l.format_of[i] = f;
  }
  return l;
}

}  // namespace

size_t matmul_group_scratch_bytes(const KernelTable& kernels, std::span<const WeightMatrix> ws,
                                  size_t n_cols, int n_threads, DotPath path, MatmulRoute route) {
  const GroupLayout l = make_layout(kernels, ws, n_cols, path, route);
  return kScratchAlign + l.format_bytes + static_cast<size_t>(n_threads) * l.tile_scratch_bytes;
}

size_t matmul_scratch_bytes(const KernelTable& kernels, const WeightMatrix& w, size_t n_cols,
                            int n_threads, DotPath path, MatmulRoute route) {
  return matmul_group_scratch_bytes(kernels, {&w, 1}, n_cols, n_threads, path, route);
}

void matmul_group(const KernelTable& kernels, std::span<const MatmulOutput> outputs, const float* x,
                  size_t x_stride, size_t n_cols, std::span<uint8_t> scratch, ThreadPool& pool,
                  DotPath path, MatmulRoute route) {
  if (n_cols == 0 || outputs.empty()) return;
  WeightMatrix ws[kMaxMatmulGroup];
  SYN_CHECK(outputs.size() <= kMaxMatmulGroup, "matmul_group: at most 8 matrices");
  for (size_t i = 0; i < outputs.size(); ++i) ws[i] = outputs[i].w;
  const std::span<const WeightMatrix> weights(ws, outputs.size());
  GroupLayout l = make_layout(kernels, weights, n_cols, path, route);
  SYN_CHECK(scratch.size() >=
                matmul_group_scratch_bytes(kernels, weights, n_cols, pool.size(), path, route),
            "matmul: scratch too small");
  uint8_t* cursor =
      scratch.data() +
      (kScratchAlign - reinterpret_cast<uintptr_t>(scratch.data()) % kScratchAlign) % kScratchAlign;
  for (size_t f = 0; f < l.n_formats; ++f) {
    l.formats[f].act = cursor;
    cursor += n_cols * l.formats[f].act_bytes;
    l.formats[f].prepared = cursor;
    cursor += n_cols * l.formats[f].prepared_bytes;
  }
  uint8_t* tile_scratch = cursor;

  // 1. Activations in each dot partner's format, then in the kernels' layouts.
  auto quantize_column = [&](size_t task, int /*thread*/) {
    const Format& f = l.formats[task / n_cols];
    const size_t c = task % n_cols;
    if (f.act_bytes == 0) return;
    const QuantizeRowFn quantize =
        f.act_type == TensorType::kQ8_K ? kernels.quantize_q8_k : kernels.quantize_q8_0;
    quantize(x + c * x_stride, f.act + c * f.act_bytes, f.k);
    if (f.prepare != nullptr)
      f.prepare(f.act + c * f.act_bytes, f.k, f.prepared + c * f.prepared_bytes);
  };
  const size_t n_quantize = l.n_formats * n_cols;
  if (n_cols == 1) {
    for (size_t t = 0; t < n_quantize; ++t) quantize_column(t, 0);
  } else {
    pool.parallel_for(n_quantize, quantize_column);
  }

  // 2. Output rows of every matrix split over the pool as one job.
  size_t rows_per_task[kMaxMatmulGroup];
  size_t first_task[kMaxMatmulGroup + 1];
  first_task[0] = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const WeightMatrix& w = ws[i];
    // Streaming tasks are multiples of kDotRowsPerTask rows, which whole interleaved groups fill.
    rows_per_task[i] = l.plans[i].packed ? kernels.weight(w.type).matmul.rows_per_tile
                                         : stream_rows_per_task(w.n_rows, pool.size());
    first_task[i + 1] = first_task[i] + (w.n_rows + rows_per_task[i] - 1) / rows_per_task[i];
  }
  pool.parallel_for(first_task[outputs.size()], [&](size_t task, int thread) {
    size_t i = 0;
    while (task >= first_task[i + 1]) ++i;
    const MatmulOutput& out = outputs[i];
    const WeightMatrix& w = out.w;
    const Plan& plan = l.plans[i];
    const Format& f = l.formats[l.format_of[i]];
    const uint8_t* columns = reinterpret_cast<const uint8_t*>(x);
    size_t column_stride = x_stride * sizeof(float);
    if (f.act_bytes != 0) {
      columns = f.prepare != nullptr ? f.prepared : f.act;
      column_stride = f.prepare != nullptr ? f.prepared_bytes : f.act_bytes;
    }
    const size_t r0 = (task - first_task[i]) * rows_per_task[i];
    const size_t rows = w.n_rows - r0 < rows_per_task[i] ? w.n_rows - r0 : rows_per_task[i];
    const DotTile tile{w.data + r0 * w.row_stride,
                       w.row_stride,
                       rows,
                       columns,
                       column_stride,
                       n_cols,
                       w.k,
                       out.y + r0,
                       out.y_stride};
    const WeightKernels& wk = kernels.weight(w.type);
    if (w.interleaved) {
      (path == DotPath::kF32 ? wk.interleaved.dot_f32 : wk.interleaved.dot)(tile);
    } else if (plan.packed) {
      wk.matmul.tile(tile, tile_scratch + static_cast<size_t>(thread) * l.tile_scratch_bytes);
    } else if (path == DotPath::kF32) {
      wk.dot_f32(tile);
    } else {
      wk.dot(tile);
    }
  });
}

void matmul(const KernelTable& kernels, const WeightMatrix& w, const float* x, size_t x_stride,
            size_t n_cols, float* y, size_t y_stride, std::span<uint8_t> scratch, ThreadPool& pool,
            DotPath path, MatmulRoute route) {
  if (w.n_rows == 0) return;
  const MatmulOutput out{w, y, y_stride};
  matmul_group(kernels, {&out, 1}, x, x_stride, n_cols, scratch, pool, path, route);
}

void embedding_row(const KernelTable& kernels, const WeightMatrix& w, size_t row, float* y) {
  SYN_CHECK(row < w.n_rows, "embedding_row: row out of range");
  const WeightKernels& wk = kernels.weight(w.type);
  if (w.interleaved) {
    const size_t group_rows = wk.interleaved.rows;
    wk.interleaved.dequantize_row(w.data + row / group_rows * group_rows * w.row_stride,
                                  row % group_rows, w.k, y);
    return;
  }
  wk.dequantize(w.data + row * w.row_stride, y, w.k);
}

}  // namespace synapse
