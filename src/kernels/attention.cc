// SPDX-License-Identifier: Apache-2.0
#include "kernels/attention.h"

#include <algorithm>

#include "base/check.h"

namespace synapse {
namespace {

void check_params(const AttentionParams& p, const KvPages& kv) {
  SYN_CHECK(p.n_kv_heads > 0 && p.n_heads % p.n_kv_heads == 0,
            "attention: n_heads must be a multiple of n_kv_heads");
  SYN_CHECK(kv.type == TensorType::kF32 || kv.type == TensorType::kF16,
            "attention: KV cache must be F32 or F16");
}

}  // namespace

void attend_query(const KernelTable& kernels, const AttentionParams& p, const KvPages& kv,
                  const AttentionBatch& batch, size_t i, size_t kv_head) {
  const size_t group = p.n_heads / p.n_kv_heads;
  size_t n_keys = kv.n_tokens;
  if (batch.positions != nullptr) {
    const int64_t pos = batch.positions[i];
    SYN_CHECK(pos >= 0, "attention: negative position");
    const auto visible = static_cast<size_t>(pos) + 1;
    if (visible < n_keys) n_keys = visible;
  }
  const size_t offset = kv_head * group * p.head_dim;
  kernels.attend(batch.q + i * batch.q_stride + offset, group, kv, kv_head, n_keys, p,
                 batch.out + i * batch.out_stride + offset);
}

void attention(const KernelTable& kernels, const AttentionParams& p, const KvPages& kv,
               const AttentionBatch& batch, ThreadPool& pool) {
  check_params(p, kv);
  pool.parallel_for(batch.n_queries * p.n_kv_heads, [&](size_t task, int /*thread*/) {
    attend_query(kernels, p, kv, batch, task / p.n_kv_heads, task % p.n_kv_heads);
  });
}

size_t whole_sequence_scratch_floats(size_t n_rows, size_t n_keys, size_t head_dim) {
  return n_rows * n_keys + head_dim * n_keys;
}

void attend_whole_sequence(const KernelTable& kernels, const AttentionParams& p, const KvPages& kv,
                           const float* q, size_t q_stride, size_t n_rows, size_t head, float* out,
                           size_t out_stride, float* scratch) {
  SYN_CHECK(kv.type == TensorType::kF32 && p.window == 0 && p.softcap == 0.0f,
            "whole-sequence attention: F32 cache, no window, no soft-cap");
  const size_t n_keys = kv.n_tokens;
  const size_t dim = p.head_dim;
  const size_t kv_head = head / (p.n_heads / p.n_kv_heads);
  const size_t row = kv_row_elements(kv, p.n_kv_heads, dim);
  const WeightKernels& f32 = kernels.weight(TensorType::kF32);
  float* scores = scratch;                // n_rows x n_keys: scores[c * n_keys + t] = K_t . Q_c
  float* vt = scratch + n_rows * n_keys;  // dim x n_keys: the values transposed
  for (size_t first = 0; first < n_keys; first += kv.page_tokens) {
    const size_t count = std::min(kv.page_tokens, n_keys - first);
    const auto* keys = reinterpret_cast<const float*>(kv.k_pages[first / kv.page_tokens]);
    const auto* values = reinterpret_cast<const float*>(kv.v_pages[first / kv.page_tokens]);
    f32.dot_f32({.w = reinterpret_cast<const uint8_t*>(keys + kv_head * dim),
                 .w_stride = row * sizeof(float),
                 .n_rows = count,
                 .x = reinterpret_cast<const uint8_t*>(q + head * dim),
                 .x_stride = q_stride * sizeof(float),
                 .n_cols = n_rows,
                 .k = dim,
                 .y = scores + first,
                 .y_stride = n_keys});
    for (size_t t = 0; t < count; ++t) {
      const float* v = values + t * row + kv_head * dim;
      for (size_t e = 0; e < dim; ++e) vt[e * n_keys + first + t] = v[e];
    }
  }
  const SoftmaxParams softmax{.scale = p.scale, .softcap = 0.0f, .mask = nullptr};
  for (size_t c = 0; c < n_rows; ++c) kernels.softmax(scores + c * n_keys, n_keys, softmax);
  // out[c][e] = V^T_e . P_c
  f32.dot_f32({.w = reinterpret_cast<const uint8_t*>(vt),
               .w_stride = n_keys * sizeof(float),
               .n_rows = dim,
               .x = reinterpret_cast<const uint8_t*>(scores),
               .x_stride = n_keys * sizeof(float),
               .n_cols = n_rows,
               .k = n_keys,
               .y = out + head * dim,
               .y_stride = out_stride});
}

}  // namespace synapse
