// SPDX-License-Identifier: Apache-2.0
// Attention of a batch of query tokens of one sequence over that sequence's paged KV cache,
// split over (query, KV head) pairs on a ThreadPool. Heads that share a KV head (GQA) are
// processed together so each key and value row is read once per group. Causal: a query at
// position p sees the cached tokens 0..p. No allocation and no score matrix: the kernels use an
// online softmax.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/kernel_table.h"

namespace synapse {

struct AttentionBatch {
  const float* q;            // n_queries rows of n_heads * head_dim floats, q_stride apart
  size_t q_stride;           // in floats
  const int64_t* positions;  // position of each query; nullptr: all see every cached token
  size_t n_queries;
  float* out;         // same layout as q
  size_t out_stride;  // in floats
};

void attention(const KernelTable& kernels, const AttentionParams& params, const KvPages& kv,
               const AttentionBatch& batch, ThreadPool& pool);

// One unit of that work: query i of `batch` against KV head `kv_head` (its GQA group of query
// heads). Backends that schedule several sequences in one job call it per (query, KV head).
void attend_query(const KernelTable& kernels, const AttentionParams& params, const KvPages& kv,
                  const AttentionBatch& batch, size_t i, size_t kv_head);

// Bidirectional attention of one whole sequence (an encoder's), for one query head: every row
// sees all n_keys cached tokens (F32 cache, no window, no soft-cap). The scores are a matrix
// computed with the F32 dot tiles (keys as weight rows, queries as columns), then a softmax per
// query, then the values, transposed into rows, give the weighted sums through the same tiles:
// many queries share each key row, which the online-softmax kernel cannot exploit. `scratch`
// holds whole_sequence_scratch_floats(n_rows, n_keys, head_dim) floats.
size_t whole_sequence_scratch_floats(size_t n_rows, size_t n_keys, size_t head_dim);
void attend_whole_sequence(const KernelTable& kernels, const AttentionParams& params,
                           const KvPages& kv, const float* q, size_t q_stride, size_t n_rows,
                           size_t head, float* out, size_t out_stride, float* scratch);

}  // namespace synapse
