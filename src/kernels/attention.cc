// SPDX-License-Identifier: Apache-2.0
#include "kernels/attention.h"

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

}  // namespace synapse
