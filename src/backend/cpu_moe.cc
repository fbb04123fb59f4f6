// SPDX-License-Identifier: Apache-2.0
// The CPU backend's mixture-of-experts op. Per call: the router's scores for every row, a
// softmax over all experts and each row's n_used best (ties: the lower expert id), renormalized
// when asked; then expert by expert, the rows that chose it are gathered and run through its
// SwiGLU feed-forward as one matrix product (prefill reads each chosen expert's weights once),
// and each result row, times its weight, is added to its row of y. Rows receive their experts
// in expert-id order whatever the batch, so a row's output does not depend on the other rows.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu_backend.h"

namespace synapse {
namespace {

constexpr size_t kAlign = 64;
// The largest expert count the op handles (Qwen3-MoE has 128, DeepSeek-V3 256); the IR
// verifier refuses more.
constexpr size_t kMaxExperts = kMaxMoeExperts;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Where each part of the scratch lives, for n_rows rows.
struct MoeScratch {
  size_t logits, choice, weight, offsets, rows, row_weights, x, gate_up, act, down, matmul, bytes;
  MoeScratch(const MoeWeights& w, size_t n_rows, size_t matmul_bytes) {
    const size_t n_expert = w.gate.size(), n_ff = w.gate.front().n_rows;
    const size_t width = w.router.k, out = w.down.front().n_rows;
    size_t at = 0;
    const auto take = [&at](size_t n_bytes) {
      const size_t start = at;
      at += aligned(n_bytes);
      return start;
    };
    logits = take(n_rows * n_expert * sizeof(float));
    choice = take(n_rows * w.n_used * sizeof(uint32_t));
    weight = take(n_rows * w.n_used * sizeof(float));
    offsets = take((n_expert + 1) * sizeof(uint32_t));
    rows = take(n_rows * w.n_used * sizeof(uint32_t));
    row_weights = take(n_rows * w.n_used * sizeof(float));
    x = take(n_rows * width * sizeof(float));
    gate_up = take(n_rows * 2 * n_ff * sizeof(float));
    act = take(n_rows * n_ff * sizeof(float));
    down = take(n_rows * out * sizeof(float));
    matmul = take(matmul_bytes);
    bytes = at;
  }
};

// Softmax over the scores, then the n_used largest probabilities (lower id first on ties).
void choose_experts(const float* scores, size_t n_expert, size_t n_used, bool normalize,
                    uint32_t* choice, float* weight) {
  float max = -INFINITY;
  for (size_t e = 0; e < n_expert; ++e) max = std::max(max, scores[e]);
  float probabilities[kMaxExperts];
  float sum = 0.0f;
  for (size_t e = 0; e < n_expert; ++e) {
    probabilities[e] = std::exp(scores[e] - max);
    sum += probabilities[e];
  }
  for (size_t e = 0; e < n_expert; ++e) probabilities[e] /= sum;
  uint32_t order[kMaxExperts];
  for (size_t e = 0; e < n_expert; ++e) order[e] = static_cast<uint32_t>(e);
  std::partial_sort(order, order + n_used, order + n_expert, [&](uint32_t a, uint32_t b) {
    return probabilities[a] > probabilities[b] || (probabilities[a] == probabilities[b] && a < b);
  });
  float chosen_sum = 0.0f;
  for (size_t k = 0; k < n_used; ++k) {
    choice[k] = order[k];
    weight[k] = probabilities[order[k]];
    chosen_sum += weight[k];
  }
  if (normalize) {
    for (size_t k = 0; k < n_used; ++k) weight[k] /= chosen_sum;
  }
}

}  // namespace

size_t CpuBackend::moe_matmul_bytes(const MoeWeights& w, size_t n_rows, MatmulMode mode) const {
  const WeightMatrix gate_up[2] = {w.gate.front(), w.up.front()};
  size_t bytes = matmul_scratch_bytes(std::span(&w.router, 1), n_rows, mode);
  // One type per tensor in GGUF, so every expert has the first one's shapes and types.
  bytes = std::max(bytes, matmul_scratch_bytes(gate_up, n_rows, mode));
  return std::max(bytes, matmul_scratch_bytes(w.down.subspan(0, 1), n_rows, mode));
}

size_t CpuBackend::moe_scratch_bytes(const MoeWeights& w, size_t n_rows, MatmulMode mode) const {
  return MoeScratch(w, n_rows, moe_matmul_bytes(w, n_rows, mode)).bytes;
}

void CpuBackend::moe(const MoeWeights& w, const float* x, size_t x_stride, size_t n_rows, float* y,
                     size_t y_stride, std::span<uint8_t> scratch, MatmulMode mode) {
  const size_t n_expert = w.gate.size(), n_ff = w.gate.front().n_rows;
  const size_t width = w.router.k, out = w.down.front().n_rows;
  const MoeScratch s(w, n_rows, moe_matmul_bytes(w, n_rows, mode));
  uint8_t* base = scratch.data();
  auto* logits = reinterpret_cast<float*>(base + s.logits);
  auto* choice = reinterpret_cast<uint32_t*>(base + s.choice);
  auto* weight = reinterpret_cast<float*>(base + s.weight);
  auto* offsets = reinterpret_cast<uint32_t*>(base + s.offsets);
  auto* rows = reinterpret_cast<uint32_t*>(base + s.rows);
  auto* row_weights = reinterpret_cast<float*>(base + s.row_weights);
  auto* xg = reinterpret_cast<float*>(base + s.x);
  auto* gate_up = reinterpret_cast<float*>(base + s.gate_up);
  auto* act = reinterpret_cast<float*>(base + s.act);
  auto* down = reinterpret_cast<float*>(base + s.down);
  const std::span<uint8_t> mm(base + s.matmul, scratch.size() - s.matmul);

  const MatmulOutput router{w.router, logits, n_expert};
  matmul(std::span(&router, 1), x, x_stride, n_rows, mm, mode);
  for (size_t r = 0; r < n_rows; ++r) {
    choose_experts(logits + r * n_expert, n_expert, w.n_used, w.normalize, choice + r * w.n_used,
                   weight + r * w.n_used);
    std::memset(y + r * y_stride, 0, out * sizeof(float));
  }
  // The (row, weight) pairs grouped by expert, rows increasing within each (a counting sort).
  std::fill(offsets, offsets + n_expert + 1, 0u);
  for (size_t i = 0; i < n_rows * w.n_used; ++i) ++offsets[choice[i] + 1];
  for (size_t e = 0; e < n_expert; ++e) offsets[e + 1] += offsets[e];
  for (size_t i = 0; i < n_rows * w.n_used; ++i) {
    const uint32_t at = offsets[choice[i]]++;
    rows[at] = static_cast<uint32_t>(i / w.n_used);
    row_weights[at] = weight[i];
  }
  // offsets[e] is now where expert e + 1's group starts: expert e's is [offsets[e-1], offsets[e]).
  for (size_t e = 0; e < n_expert; ++e) {
    const uint32_t first = e == 0 ? 0 : offsets[e - 1];
    const size_t n = offsets[e] - first;
    if (n == 0) continue;
    const std::span<const uint32_t> expert_rows(rows + first, n);
    copy_rows(x, x_stride, expert_rows, width, xg, width);
    const MatmulOutput gu[2] = {{w.gate[e], gate_up, 2 * n_ff},
                                {w.up[e], gate_up + n_ff, 2 * n_ff}};
    matmul(gu, xg, width, n, mm, mode);
    swiglu(gate_up, gate_up + n_ff, 2 * n_ff, n, n_ff, act, n_ff);
    const MatmulOutput d{w.down[e], down, out};
    matmul(std::span(&d, 1), act, n_ff, n, mm, mode);
    for (size_t i = 0; i < n; ++i) {
      float* yr = y + expert_rows[i] * y_stride;
      float* dr = down + i * out;
      kernels_.scale(dr, row_weights[first + i], dr, out);
      kernels_.add(yr, dr, yr, out);
    }
  }
}

}  // namespace synapse
