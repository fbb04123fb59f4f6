// SPDX-License-Identifier: Apache-2.0
// What the logits parity tests share: reading the fixtures' float32 logits, running a model over
// input ids (all positions' logits, then a greedy continuation), and distances between logits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul.h"

namespace synapse::testing {

std::vector<float> read_f32(const std::string& path);

struct ModelRun {
  std::vector<float> logits;    // [n][n_vocab]
  std::vector<int32_t> greedy;  // continuation
  uint32_t n_vocab = 0;
};

// The logits of every position of `ids` in one batch, then n_greedy greedy tokens (the first
// from the last position's logits, each next one decoded alone), with a KV cache of `kv_type`.
// Failures are test failures.
ModelRun run_model(const std::string& path, const std::vector<int32_t>& ids, size_t n_greedy,
                   int threads, const KernelTable& kernels, DotPath dot_path,
                   TensorType kv_type = TensorType::kF32);

struct Distance {
  double max_abs = 0.0, rms = 0.0;
};
Distance distance(const std::vector<float>& a, const std::vector<float>& b);
// The same over the rows (of width n_vocab) marked in `rows`.
Distance distance_over_rows(const std::vector<float>& a, const std::vector<float>& b,
                            size_t n_vocab, const std::vector<bool>& rows);

}  // namespace synapse::testing
