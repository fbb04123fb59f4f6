// SPDX-License-Identifier: Apache-2.0
// The CPU backend: what it supports, its buffers, and that its batched ops (several sequences
// in one job, segments per row) compute exactly what the kernels compute one piece at a time.
#include "backend/cpu_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention.h"
#include "kernels/kernel_selection.h"
#include "tensor/half.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

std::vector<float> wave(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.41f * static_cast<float>(i) + phase);
  return v;
}

TEST(CpuBackend, SupportsEveryWeightTypeAndF32Activations) {
  ThreadPool pool(1);
  CpuBackend backend(selected_kernels(), pool);
  for (TensorType t :
       {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0, TensorType::kQ4_0,
        TensorType::kQ5_1, TensorType::kQ2_K, TensorType::kQ6_K}) {
    EXPECT_TRUE(backend.supports(BackendOp::kMatmul, t)) << tensor_type_name(t);
    EXPECT_TRUE(backend.supports(BackendOp::kEmbed, t)) << tensor_type_name(t);
  }
  EXPECT_FALSE(backend.supports(BackendOp::kMatmul, TensorType::kIQ2_XXS));
  EXPECT_FALSE(backend.supports(BackendOp::kMatmul, TensorType::kQ8_K));
  EXPECT_TRUE(backend.supports(BackendOp::kAttention, TensorType::kF16));
  EXPECT_TRUE(backend.supports(BackendOp::kAttention, TensorType::kQ8_0));
  EXPECT_TRUE(backend.supports(BackendOp::kKvStore, TensorType::kQ4_0));
  EXPECT_FALSE(backend.supports(BackendOp::kAttention, TensorType::kQ4_1));
  EXPECT_TRUE(backend.supports(BackendOp::kRmsNorm, TensorType::kF32));
  EXPECT_FALSE(backend.supports(BackendOp::kRmsNorm, TensorType::kF16));
  EXPECT_NE(backend.kernel_name(BackendOp::kMatmul, TensorType::kQ8_0, {}).find("Q8_0"),
            std::string::npos);
  EXPECT_NE(backend.name().find("1 thread"), std::string_view::npos);
}

TEST(CpuBackend, BuffersAreAlignedAndWritable) {
  ThreadPool pool(1);
  CpuBackend backend(selected_kernels(), pool);
  for (size_t bytes : {size_t{100}, size_t{3} << 20}) {
    auto buffer = backend.allocate(bytes);
    ASSERT_TRUE(buffer.ok());
    EXPECT_GE(buffer->size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
    std::memset(buffer->data(), 1, buffer->size());
  }
}

TEST(CpuBackend, RmsNormSegmentsEqualKernelCalls) {
  ThreadPool pool(2);
  const KernelTable& k = selected_kernels();
  CpuBackend backend(k, pool);
  const size_t rows = 11, segments = 3, width = 16, stride = 64;
  const auto x = wave(rows * stride, 1.0f);
  const auto w = wave(width, 2.0f);
  std::vector<float> y(rows * stride, 0.0f);
  backend.rms_norm(x.data(), stride, rows, segments, width, w.data(), 1e-6f, y.data(), stride);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t s = 0; s < segments; ++s) {
      float want[width];
      k.rms_norm(x.data() + r * stride + s * width, w.data(), width, 1e-6f, want);
      EXPECT_EQ(std::memcmp(want, y.data() + r * stride + s * width, sizeof(want)), 0);
    }
  }
}

// Two sequences stored and attended in one call give the bits of attention() run on each
// sequence alone.
TEST(CpuBackend, BatchedAttentionEqualsPerSequenceAttention) {
  ThreadPool pool(2);
  const KernelTable& kernels = selected_kernels();
  CpuBackend backend(kernels, pool);
  const size_t heads = 4, kv_heads = 2, dim = 16, page = 4, max_pages = 4;
  const KvFormat format{page, kv_heads, dim, TensorType::kF32};
  const AttentionParams params{heads, kv_heads, dim, 0.25f, 0.0f};
  struct Seq {
    std::vector<std::vector<float>> k, v;
    std::vector<uint8_t*> kp, vp;
  };
  Seq seqs[2];
  for (Seq& s : seqs) {
    s.k.assign(max_pages, std::vector<float>(page * kv_heads * dim));
    s.v.assign(max_pages, std::vector<float>(page * kv_heads * dim));
    for (size_t p = 0; p < max_pages; ++p) {
      s.kp.push_back(reinterpret_cast<uint8_t*>(s.k[p].data()));
      s.vp.push_back(reinterpret_cast<uint8_t*>(s.v[p].data()));
    }
  }
  // Sequence 0: 7 new rows from position 0; sequence 1: 1 row at position 9 (9 cached).
  const size_t width = heads * dim + 2 * kv_heads * dim;  // q | k | v
  const size_t n_rows = 8;
  const auto rows = wave(n_rows * width, 3.0f);
  const auto history = wave(9 * 2 * kv_heads * dim, 5.0f);
  const SequenceRows history_rows[] = {{0, 9, 0, {seqs[1].kp.data(), seqs[1].vp.data(), 4}}};
  backend.kv_store(history.data(), history.data() + kv_heads * dim, 2 * kv_heads * dim,
                   kv_heads * dim, history_rows, format);
  const SequenceRows step[] = {{0, 7, 0, {seqs[0].kp.data(), seqs[0].vp.data(), 4}},
                               {7, 1, 9, {seqs[1].kp.data(), seqs[1].vp.data(), 4}}};
  backend.kv_store(rows.data() + heads * dim, rows.data() + heads * dim + kv_heads * dim, width,
                   kv_heads * dim, step, format);
  const std::vector<int64_t> positions = {0, 1, 2, 3, 4, 5, 6, 9};
  std::vector<float> out(n_rows * heads * dim, NAN);
  backend.attention(rows.data(), width, positions.data(), out.data(), heads * dim, step, format,
                    params);
  for (size_t s = 0; s < 2; ++s) {
    const SequenceRows& r = step[s];
    std::vector<float> want(r.n_rows * heads * dim);
    const KvPages kv{r.kv.k_pages, r.kv.v_pages, page, r.n_past + r.n_rows, TensorType::kF32};
    attention(kernels, params, kv,
              AttentionBatch{rows.data() + r.first_row * width, width,
                             positions.data() + r.first_row, r.n_rows, want.data(), heads * dim},
              pool);
    EXPECT_EQ(std::memcmp(want.data(), out.data() + r.first_row * heads * dim,
                          want.size() * sizeof(float)),
              0)
        << "sequence " << s;
  }
}

// Non-causal attention: every row of a whole sequence sees all its keys, later ones included.
// Both routes — the score tiles (F32 cache) and the per-query kernel (F16, Q8_0 and Q4_0
// caches) — against a float64 softmax over the keys and values as the cache stores them.
TEST(CpuBackend, BidirectionalAttentionSeesTheWholeSequence) {
  ThreadPool pool(2);
  CpuBackend backend(selected_kernels(), pool);
  const size_t heads = 4, kv_heads = 2, dim = 32, page = 4, n = 7;
  const AttentionParams params{heads, kv_heads, dim, 0.18f, 0.0f, 0, /*causal=*/false};
  const size_t width = heads * dim + 2 * kv_heads * dim;  // q | k | v
  const auto rows = wave(n * width, 3.0f);
  for (const TensorType type :
       {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    const KvFormat format{page, kv_heads, dim, type};
    std::vector<std::vector<uint8_t>> k(2, std::vector<uint8_t>(page * format.token_bytes()));
    std::vector<std::vector<uint8_t>> v = k;
    uint8_t* kp[] = {k[0].data(), k[1].data()};
    uint8_t* vp[] = {v[0].data(), v[1].data()};
    const SequenceRows step[] = {{0, n, 0, {kp, vp, 2}}};
    backend.kv_store(rows.data() + heads * dim, rows.data() + heads * dim + kv_heads * dim, width,
                     kv_heads * dim, step, format);
    // The stored values as the cache holds them (F16: rounded; Q8_0, Q4_0: quantized), and
    // they are what was written, to the format's precision.
    const auto stored = [&](const std::vector<std::vector<uint8_t>>& pages, size_t t, size_t i) {
      const uint8_t* slot = pages[t / page].data() + (t % page) * format.token_bytes();
      std::vector<float> values(format.token_elements());
      dequantize_row(type, {slot, format.token_bytes()}, values);
      return static_cast<double>(values[i]);
    };
    for (size_t t = 0; t < n; ++t) {
      for (size_t i = 0; i < kv_heads * dim; ++i) {
        // Values in [-1, 1]: Q4_0 steps by at most 1/8 (its top value is clamped: up to a
        // step of error), Q8_0 by 1/127 (half a step, plus its scale's rounding to F16), F16
        // rounds to 2^-11; F32 is exact.
        const double bound = type == TensorType::kQ4_0   ? 0.126
                             : type == TensorType::kQ8_0 ? 0.0045
                             : type == TensorType::kF16  ? 5e-4
                                                         : 0.0;
        EXPECT_NEAR(stored(k, t, i), rows[t * width + heads * dim + i], bound)
            << tensor_type_name(type) << " key " << t << " element " << i;
      }
    }
    const std::vector<int64_t> positions = {0, 1, 2, 3, 4, 5, 6};
    std::vector<float> out(n * heads * dim, NAN);
    backend.attention(rows.data(), width, positions.data(), out.data(), heads * dim, step, format,
                      params);
    for (size_t r = 0; r < n; ++r) {
      for (size_t h = 0; h < heads; ++h) {
        const size_t kv_h = h / (heads / kv_heads);
        std::vector<double> score(n);
        double max = -INFINITY, sum = 0.0;
        for (size_t t = 0; t < n; ++t) {
          double dot = 0.0;
          for (size_t e = 0; e < dim; ++e) {
            dot +=
                static_cast<double>(rows[r * width + h * dim + e]) * stored(k, t, kv_h * dim + e);
          }
          score[t] = dot * static_cast<double>(params.scale);
          max = std::max(max, score[t]);
        }
        for (double& x : score) sum += (x = std::exp(x - max));
        for (size_t e = 0; e < dim; ++e) {
          double want = 0.0;
          for (size_t t = 0; t < n; ++t) want += score[t] / sum * stored(v, t, kv_h * dim + e);
          // F32 accumulation over 7 keys of 16 products: far below 1e-5 on values of O(1).
          EXPECT_NEAR(out[r * heads * dim + h * dim + e], want, 1e-5)
              << tensor_type_name(type) << " row " << r << " head " << h;
        }
      }
    }
  }
}

}  // namespace
}  // namespace synapse
