// SPDX-License-Identifier: Apache-2.0
#include "backend/cpu_backend.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/gelu_table.h"
#include "tensor/half.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

// Rows below which element-wise ops run on the calling thread: waking the pool costs about as
// much as normalizing a few rows.
constexpr size_t kInlineRows = 8;
// Buffers from this size on are anonymous mappings: the OS commits their pages on first touch,
// so a KV pool sized for the configured limit costs memory only as it fills.
constexpr size_t kMapBytes = size_t{1} << 20;
constexpr size_t kAlign = 64;

void release_heap(uint8_t* p, size_t /*size*/) { std::free(p); }
void release_map(uint8_t* p, size_t size) { ::munmap(p, size); }

}  // namespace

CpuBackend::CpuBackend(const KernelTable& kernels, ThreadPool& pool)
    : kernels_(kernels),
      pool_(pool),
      name_("cpu (" + std::string(kernels.variant) + ", " + std::to_string(pool.size()) +
            (pool.size() == 1 ? " thread)" : " threads)")) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, while the backend is built
  const char* interleave = std::getenv("SYNAPSE_INTERLEAVE");
  interleave_ = interleave == nullptr || std::string_view(interleave) != "0";
}

bool CpuBackend::supports(BackendOp op, TensorType type) const {
  switch (op) {
    case BackendOp::kEmbed:
      return is_weight_type(type) && kernels_.weight(type).dequantize != nullptr;
    case BackendOp::kMatmul:
      return is_weight_type(type) && kernels_.weight(type).dot != nullptr &&
             kernels_.weight(type).dot_f32 != nullptr;
    case BackendOp::kKvStore:
    case BackendOp::kAttention:
      return type == TensorType::kF32 || type == TensorType::kF16 || is_block_kv_type(type);
    case BackendOp::kMoe:  // the expert matrices' type (the router is checked as a kMatmul)
      return supports(BackendOp::kMatmul, type);
    default:
      return type == TensorType::kF32;
  }
}

std::string CpuBackend::kernel_name(BackendOp op, TensorType type, MatmulMode mode) const {
  const std::string variant = kernels_.variant;
  const std::string type_name(tensor_type_name(type));
  switch (op) {
    case BackendOp::kEmbed:
      return variant + " dequantize." + type_name;
    case BackendOp::kMatmul: {
      const WeightKernels& wk = kernels_.weight(type);
      const bool quantized = activation_type(type) != TensorType::kF32;
      const bool f32_path = mode.path == DotPath::kF32 && quantized;
      std::string name = variant + " ";
      if (!f32_path && wk.matmul.tile != nullptr &&
          (mode.route != MatmulRoute::kStream || wk.matmul.equals_dot)) {
        name += "tile." + type_name;
      } else {
        name += (f32_path ? "dot_f32." : "dot.") + type_name;
      }
      name += " x ";
      name += f32_path || !quantized ? "F32" : std::string(tensor_type_name(activation_type(type)));
      return name;
    }
    case BackendOp::kAttention:
      return variant + " attend (" + type_name + " cache, online softmax)";
    case BackendOp::kMoe:
      return "rows grouped per expert, " + kernel_name(BackendOp::kMatmul, type, mode);
    default:
      return variant + " " + std::string(backend_op_name(op));
  }
}

Result<BackendBuffer> CpuBackend::allocate(size_t bytes) {
  const size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
  if (size == 0) return BackendBuffer();
  if (size >= kMapBytes) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return Status(ErrorCode::kResourceExhausted,
                    "cannot map " + std::to_string(size) + " bytes for a backend buffer");
    }
    // Transparent huge pages where the system leaves them to madvise (Debian's default): a
    // rearranged weight matrix of a gigabyte is otherwise ~260 000 page faults at load, and its
    // decode walks the TLB page by page. Advice only: a refusal changes nothing else.
    (void)::madvise(p, size, MADV_HUGEPAGE);
    return BackendBuffer(static_cast<uint8_t*>(p), size, release_map);
  }
  void* p = std::aligned_alloc(kAlign, size);
  if (p == nullptr) {
    return Status(ErrorCode::kResourceExhausted,
                  "cannot allocate " + std::to_string(size) + " bytes for a backend buffer");
  }
  return BackendBuffer(static_cast<uint8_t*>(p), size, release_heap);
}

void CpuBackend::copy(uint8_t* dst, const uint8_t* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

// The CPU reads weights where the file is mapped, without a copy -- unless the kernel level
// interleaves the type's rows (InterleavedKernels): then the matrix is rearranged once, here,
// into memory of its own (the same size as the rows; the mapped pages are not read again).
Result<WeightMatrix> CpuBackend::prepare_matrix(TensorType type, const uint8_t* data,
                                                size_t row_stride, size_t n_rows, size_t k) {
  const WeightMatrix as_stored{type, data, row_stride, n_rows, k, false};
  const InterleavedKernels& ik = kernels_.weight(type).interleaved;
  if (!interleave_ || ik.rows == 0 || n_rows == 0 || n_rows % ik.rows != 0) {
    return as_stored;
  }
  const auto key = std::make_pair(data, type);
  if (const auto it = interleaved_.find(key); it != interleaved_.end()) {
    if (it->second.n_rows == n_rows && it->second.k == k) return it->second;
  }
  const size_t stride = row_bytes(type, k);
  SYN_ASSIGN_OR_RETURN(BackendBuffer buffer, allocate(stride * n_rows));
  uint8_t* out = buffer.data();
  // On the calling thread: a model may be loaded while the pool runs another one's steps (the
  // pool takes one job at a time). Rearranging is a copy, ~0.3 s per GB.
  ik.interleave(data, row_stride, n_rows, k, out);
  interleaved_buffers_.push_back(std::move(buffer));
  const WeightMatrix interleaved{type, out, stride, n_rows, k, true};
  interleaved_[key] = interleaved;
  return interleaved;
}

Result<const float*> CpuBackend::prepare_vector(TensorType type, const uint8_t* data, size_t n) {
  if (type == TensorType::kF32 && reinterpret_cast<uintptr_t>(data) % alignof(float) == 0) {
    return reinterpret_cast<const float*>(data);
  }
  auto copy = std::make_unique<float[]>(n);
  if (type == TensorType::kF32) {
    std::memcpy(copy.get(), data, n * sizeof(float));
  } else {
    dequantize_row(type, {data, row_bytes(type, n)}, std::span<float>(copy.get(), n));
  }
  converted_vectors_.push_back(std::move(copy));
  return converted_vectors_.back().get();
}

template <typename Fn>
void CpuBackend::for_rows(size_t n_rows, Fn&& fn) {
  if (n_rows < kInlineRows) {
    for (size_t r = 0; r < n_rows; ++r) fn(r);
    return;
  }
  pool_.parallel_for(n_rows, [&](size_t r, int /*thread*/) { fn(r); });
}

size_t CpuBackend::matmul_scratch_bytes(std::span<const WeightMatrix> ws, size_t n_rows,
                                        MatmulMode mode) const {
  return matmul_group_scratch_bytes(kernels_, ws, n_rows, pool_.size(), mode.path, mode.route);
}

void CpuBackend::embed(const WeightMatrix& table, const int32_t* ids, size_t n_rows, float* y,
                       size_t y_stride) {
  for_rows(n_rows, [&](size_t r) {
    embedding_row(kernels_, table, static_cast<size_t>(ids[r]), y + r * y_stride);
  });
}

void CpuBackend::rms_norm(const float* x, size_t x_stride, size_t n_rows, size_t n_segments,
                          size_t width, const float* weight, float eps, float* y, size_t y_stride) {
  for_rows(n_rows, [&](size_t r) {
    for (size_t s = 0; s < n_segments; ++s) {
      kernels_.rms_norm(x + r * x_stride + s * width, weight, width, eps,
                        y + r * y_stride + s * width);
    }
  });
}

void CpuBackend::matmul(std::span<const MatmulOutput> outputs, const float* x, size_t x_stride,
                        size_t n_rows, std::span<uint8_t> scratch, MatmulMode mode) {
  matmul_group(kernels_, outputs, x, x_stride, n_rows, scratch, pool_, mode.path, mode.route);
}

void CpuBackend::add_bias(float* y, size_t y_stride, size_t n_rows, const float* bias,
                          size_t width) {
  for_rows(n_rows,
           [&](size_t r) { kernels_.add(y + r * y_stride, bias, y + r * y_stride, width); });
}

void CpuBackend::rope(float* x, size_t x_stride, size_t n_rows, size_t n_heads, size_t head_dim,
                      const int64_t* positions, const RopeParams& params) {
  for_rows(n_rows, [&](size_t r) {
    kernels_.rope(x + r * x_stride, n_heads, head_dim, positions[r], params);
  });
}

void CpuBackend::kv_store(const float* k, const float* v, size_t stride, size_t width,
                          std::span<const SequenceRows> sequences, const KvFormat& format) {
  const size_t token_bytes = format.token_bytes();
  for (const SequenceRows& s : sequences) {
    for (size_t i = 0; i < s.n_rows; ++i) {
      const size_t pos = s.n_past + i;
      const size_t slot = (pos % format.page_tokens) * token_bytes;
      uint8_t* k_dst = s.kv.k_pages[pos / format.page_tokens] + slot;
      uint8_t* v_dst = s.kv.v_pages[pos / format.page_tokens] + slot;
      const float* k_src = k + (s.first_row + i) * stride;
      const float* v_src = v + (s.first_row + i) * stride;
      if (format.type == TensorType::kF32) {
        std::memcpy(k_dst, k_src, width * sizeof(float));
        std::memcpy(v_dst, v_src, width * sizeof(float));
      } else {
        // The reference quantizers: the cache's bytes are the same on every ISA level.
        quantize_row(format.type, {k_src, width}, {k_dst, row_bytes(format.type, width)});
        quantize_row(format.type, {v_src, width}, {v_dst, row_bytes(format.type, width)});
      }
    }
  }
}

void CpuBackend::attention(const float* q, size_t q_stride, const int64_t* positions, float* out,
                           size_t out_stride, std::span<const SequenceRows> sequences,
                           const KvFormat& format, const AttentionParams& params) {
  if (!params.causal && format.type == TensorType::kF32 && params.window == 0 &&
      params.softcap == 0.0f) {
    return attention_whole_sequences(q, q_stride, out, out_stride, sequences, format, params);
  }
  const size_t heads = params.n_kv_heads;
  size_t n_tasks = 0;
  for (const SequenceRows& s : sequences) n_tasks += s.n_rows * heads;
  auto task_fn = [&](size_t task, int /*thread*/) {
    size_t i = 0;
    while (task >= sequences[i].n_rows * heads) {
      task -= sequences[i].n_rows * heads;
      ++i;
    }
    const SequenceRows& s = sequences[i];
    const KvPages kv{s.kv.k_pages,        s.kv.v_pages, format.page_tokens,
                     s.n_past + s.n_rows, format.type,  format.row_elements};
    // No positions: every query sees all the sequence's keys.
    const int64_t* limits = params.causal ? positions + s.first_row : nullptr;
    const AttentionBatch batch{q + s.first_row * q_stride,     q_stride,  limits, s.n_rows,
                               out + s.first_row * out_stride, out_stride};
    attend_query(kernels_, params, kv, batch, task / heads, task % heads);
  };
  if (n_tasks == 1) {
    task_fn(0, 0);
  } else {
    pool_.parallel_for(n_tasks, task_fn);
  }
}

// Each (sequence, query head) is one task: a sequence runs whole, so its result depends on it
// alone, whatever else the step holds.
void CpuBackend::attention_whole_sequences(const float* q, size_t q_stride, float* out,
                                           size_t out_stride,
                                           std::span<const SequenceRows> sequences,
                                           const KvFormat& format, const AttentionParams& params) {
  size_t per_task = 0;
  for (const SequenceRows& s : sequences) {
    per_task = std::max(
        per_task, whole_sequence_scratch_floats(s.n_rows, s.n_past + s.n_rows, params.head_dim));
  }
  const size_t threads = static_cast<size_t>(pool_.size());
  if (attention_scratch_.size() < per_task * threads) attention_scratch_.resize(per_task * threads);
  const size_t heads = params.n_heads;
  pool_.parallel_for(sequences.size() * heads, [&](size_t task, int thread) {
    const SequenceRows& s = sequences[task / heads];
    const KvPages kv{s.kv.k_pages,        s.kv.v_pages, format.page_tokens,
                     s.n_past + s.n_rows, format.type,  format.row_elements};
    attend_whole_sequence(kernels_, params, kv, q + s.first_row * q_stride, q_stride, s.n_rows,
                          task % heads, out + s.first_row * out_stride, out_stride,
                          attention_scratch_.data() + static_cast<size_t>(thread) * per_task);
  });
}

void CpuBackend::swiglu(const float* gate, const float* up, size_t stride, size_t n_rows,
                        size_t width, float* y, size_t y_stride) {
  for_rows(n_rows, [&](size_t r) {
    kernels_.swiglu(gate + r * stride, up + r * stride, y + r * y_stride, width);
  });
}

void CpuBackend::mul(const float* a, size_t a_stride, const float* b, size_t b_stride,
                     size_t n_rows, size_t width, float* y, size_t y_stride) {
  for_rows(n_rows, [&](size_t r) {
    kernels_.mul(a + r * a_stride, b + r * b_stride, y + r * y_stride, width);
  });
}

void CpuBackend::short_conv(std::span<const SequenceRows> sequences, const KvFormat& format,
                            const float* weight, size_t kernel, size_t width, float* y,
                            size_t y_stride) {
  // A few multiply-adds per element over rows the step has just stored: no kernel of its own.
  const size_t half = width / 2, token_bytes = format.token_bytes();
  const bool f16 = format.type == TensorType::kF16;
  const auto element = [&](const KvPageView& kv, size_t t, size_t c) {
    uint8_t* const* pages = c < half ? kv.k_pages : kv.v_pages;
    const uint8_t* slot = pages[t / format.page_tokens] + (t % format.page_tokens) * token_bytes;
    const size_t i = c < half ? c : c - half;
    return f16 ? f16_to_f32(reinterpret_cast<const uint16_t*>(slot)[i])
               : reinterpret_cast<const float*>(slot)[i];
  };
  for (const SequenceRows& s : sequences) {
    for_rows(s.n_rows, [&](size_t i) {
      const size_t p = s.n_past + i;
      float* out = y + (s.first_row + i) * y_stride;
      for (size_t c = 0; c < width; ++c) {
        float acc = 0.0f;
        for (size_t j = 0; j < kernel; ++j) {
          if (p + j + 1 < kernel) continue;  // before position 0
          acc += weight[c * kernel + j] * element(s.kv, p + j + 1 - kernel, c);
        }
        out[c] = acc;
      }
    });
  }
}

void CpuBackend::geglu(const float* gate, const float* up, size_t stride, size_t n_rows,
                       size_t width, float* y, size_t y_stride) {
  for_rows(n_rows, [&](size_t r) {
    float* yr = y + r * y_stride;
    kernels_.gelu_tanh(gate + r * stride, yr, width);
    kernels_.mul(yr, up + r * stride, yr, width);
  });
}

void CpuBackend::layer_norm(const float* x, size_t x_stride, size_t n_rows, size_t width,
                            const float* weight, const float* bias, float eps, float* y,
                            size_t y_stride) {
  for_rows(n_rows, [&](size_t r) {
    kernels_.layer_norm(x + r * x_stride, weight, bias, width, eps, y + r * y_stride);
  });
}

void CpuBackend::gelu(float* y, size_t y_stride, size_t n_rows, size_t width, GeluForm form) {
  for_rows(n_rows, [&](size_t r) {
    float* row = y + r * y_stride;
    if (form == GeluForm::kTanhF16Table) {
      gelu_tanh_f16_table(row, row, width);
    } else {
      kernels_.gelu_tanh(row, row, width);
    }
  });
}

void CpuBackend::scale(float* y, size_t y_stride, size_t n_rows, size_t width, float s) {
  for_rows(n_rows, [&](size_t r) { kernels_.scale(y + r * y_stride, s, y + r * y_stride, width); });
}

void CpuBackend::softcap(float* y, size_t y_stride, size_t n_rows, size_t width, float cap) {
  for_rows(n_rows,
           [&](size_t r) { kernels_.softcap(y + r * y_stride, cap, y + r * y_stride, width); });
}

void CpuBackend::add(const float* x, size_t x_stride, size_t n_rows, size_t width, float* y,
                     size_t y_stride) {
  for_rows(n_rows, [&](size_t r) {
    kernels_.add(y + r * y_stride, x + r * x_stride, y + r * y_stride, width);
  });
}

void CpuBackend::copy_rows(const float* x, size_t x_stride, std::span<const uint32_t> rows,
                           size_t width, float* y, size_t y_stride) {
  for (size_t j = 0; j < rows.size(); ++j) {
    std::memcpy(y + j * y_stride, x + rows[j] * x_stride, width * sizeof(float));
  }
}

}  // namespace synapse
