// SPDX-License-Identifier: Apache-2.0
// The drivers: threading does not change results (each output is computed by one task), scratch
// sizing, embedding lookup, and attention's causal masking over pages.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "kernels/attention.h"
#include "kernels/kernel_selection.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

std::vector<float> wave(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase) * 2.0f;
  return v;
}

struct Quantized {
  TensorType type;
  std::vector<uint32_t> words;
  size_t stride;
  Quantized(TensorType t, size_t rows, size_t k)
      : type(t), words((rows * row_bytes(t, k) + 3) / 4), stride(row_bytes(t, k)) {
    for (size_t r = 0; r < rows; ++r) {
      const std::vector<float> row = wave(k, static_cast<float>(r));
      quantize_row(t, row, {reinterpret_cast<uint8_t*>(words.data()) + r * stride, stride});
    }
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(words.data()); }
};

// InterleavedKernels::Bits::kFmaChain written out: each row's dequantized values against each
// F32 column, acc = fma(w, x, acc) in element order (std::fma rounds once, as the instruction).
std::vector<float> fma_chains(const Quantized& q, size_t rows, size_t k,
                              const std::vector<float>& x, size_t n_cols) {
  std::vector<float> y(rows * n_cols), w(k);
  for (size_t r = 0; r < rows; ++r) {
    dequantize_row(q.type, {q.data() + r * q.stride, q.stride}, w);
    for (size_t c = 0; c < n_cols; ++c) {
      float acc = 0.0f;
      for (size_t i = 0; i < k; ++i) acc = std::fma(w[i], x[c * k + i], acc);
      y[c * rows + r] = acc;
    }
  }
  return y;
}

// Every weight type at each row length its blocks divide.
std::vector<std::pair<TensorType, size_t>> types_with_row_lengths(
    std::initializer_list<size_t> ks) {
  std::vector<std::pair<TensorType, size_t>> out;
  for (TensorType type : weight_types()) {
    for (size_t k : ks) {
      if (k % block_elements(type) == 0) out.emplace_back(type, k);
    }
  }
  return out;
}

std::vector<float> run(const KernelTable& kernels, const WeightMatrix& w, const float* x,
                       size_t n_cols, int threads, DotPath path = DotPath::kQuantized) {
  ThreadPool pool(threads);
  std::vector<uint8_t> scratch(matmul_scratch_bytes(kernels, w, n_cols, threads, path));
  std::vector<float> y(w.n_rows * n_cols, NAN);
  matmul(kernels, w, x, w.k, n_cols, y.data(), w.n_rows, scratch, pool, path);
  return y;
}

TEST(Matmul, ThreadCountDoesNotChangeBits) {
  const KernelTable& kernels = selected_kernels();
  for (TensorType type : {TensorType::kQ4_K, TensorType::kQ8_0, TensorType::kF16}) {
    const size_t rows = 150, k = 512;
    const Quantized q(type, rows, k);
    const WeightMatrix w{type, q.data(), q.stride, rows, k};
    for (size_t cols : {size_t{1}, size_t{5}, kMatmulMinColumns + 2}) {
      std::vector<float> x;
      for (size_t c = 0; c < cols; ++c) {
        const auto col = wave(k, 100.0f + static_cast<float>(c));
        x.insert(x.end(), col.begin(), col.end());
      }
      const std::vector<float> one = run(kernels, w, x.data(), cols, 1);
      const std::vector<float> three = run(kernels, w, x.data(), cols, 3);
      ASSERT_EQ(one.size(), three.size());
      EXPECT_EQ(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)), 0)
          << tensor_type_name(type) << " cols=" << cols;
      for (float v : one) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

// A column's bits depend only on the route and path: not on how many other columns share the
// call (batched decode equals single decode; chunked prefill equals whole prefill), nor on the
// thread count. Checked for every weight type on every kernel table this CPU runs; the float
// types also at a row length with a tail past the last full vector (k = 530).
TEST(Matmul, ColumnBitsDoNotDependOnColumnCountOrThreads) {
  const size_t rows = 67;
  for (const KernelTable* kernels : runnable_kernel_tables()) {
    for (const auto& type_and_k : types_with_row_lengths({512, 530})) {
      // Named copies: clang 14 cannot capture a structured binding in the lambda below.
      const TensorType type = type_and_k.first;
      const size_t k = type_and_k.second;
      const Quantized q(type, rows, k);
      const WeightMatrix w{type, q.data(), q.stride, rows, k};
      for (DotPath path : {DotPath::kQuantized, DotPath::kF32}) {
        for (MatmulRoute route : {MatmulRoute::kStream, MatmulRoute::kTiled}) {
          const size_t max_cols = 19;
          std::vector<float> x;
          for (size_t c = 0; c < max_cols; ++c) {
            const auto col = wave(k, 10.0f + 3.0f * static_cast<float>(c));
            x.insert(x.end(), col.begin(), col.end());
          }
          auto run_cols = [&](size_t first, size_t n_cols, int threads) {
            ThreadPool pool(threads);
            std::vector<uint8_t> scratch(
                matmul_scratch_bytes(*kernels, w, n_cols, threads, path, route));
            std::vector<float> y(rows * n_cols, NAN);
            matmul(*kernels, w, x.data() + first * k, k, n_cols, y.data(), rows, scratch, pool,
                   path, route);
            return y;
          };
          const std::vector<float> all = run_cols(0, max_cols, 2);
          for (size_t n_cols : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{9}}) {
            for (size_t first : {size_t{0}, max_cols - n_cols}) {
              const std::vector<float> part = run_cols(first, n_cols, n_cols % 2 == 0 ? 1 : 3);
              EXPECT_EQ(
                  std::memcmp(part.data(), all.data() + first * rows, part.size() * sizeof(float)),
                  0)
                  << kernels->variant << " " << tensor_type_name(type) << " k " << k
                  << (path == DotPath::kF32 ? " f32" : " quantized")
                  << (route == MatmulRoute::kTiled ? " tiled" : " stream") << " cols " << first
                  << "+" << n_cols;
            }
          }
        }
      }
    }
  }
}

// A tile marked equals_dot does each (row, column)'s arithmetic exactly as the decode stream
// does (it only unpacks its rows once), so a prompt's logits equal the ones the same tokens get
// decoded one at a time -- and MatmulRoute::kStream, the service's route, may run it. Checked on
// every table this CPU runs, for every type whose tile says so: many columns tiled against each
// column alone; a tile that reorders a sum or rounds a scale one ulp off fails here. The AVX2
// level's 32-element block types must say so (the service's prefill speed there depends on it).
TEST(Matmul, TilesMarkedEqualToTheDotGiveTheDecodeBits) {
  const size_t rows = 53, k = 320, n_cols = 23;
  std::vector<float> x;
  for (size_t c = 0; c < n_cols; ++c) {
    const auto col = wave(k, 7.0f + 1.3f * static_cast<float>(c));
    x.insert(x.end(), col.begin(), col.end());
  }
  if (const KernelTable* avx2 = kernel_table_for(IsaLevel::kAvx2); avx2 != nullptr) {
    for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
                            TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kIQ4_NL}) {
      EXPECT_TRUE(avx2->weight(type).matmul.tile != nullptr && avx2->weight(type).matmul.equals_dot)
          << tensor_type_name(type);
    }
  }
  size_t checked = 0;
  for (const KernelTable* kernels : runnable_kernel_tables()) {
    for (TensorType type : weight_types()) {
      const MatmulKernel& tile = kernels->weight(type).matmul;
      if (tile.tile == nullptr || !tile.equals_dot) continue;
      ++checked;
      const Quantized q(type, rows, k);
      const WeightMatrix w{type, q.data(), q.stride, rows, k};
      auto product = [&](size_t first, size_t cols, MatmulRoute route) {
        ThreadPool pool(2);
        std::vector<uint8_t> scratch(
            matmul_scratch_bytes(*kernels, w, cols, 2, DotPath::kQuantized, route));
        std::vector<float> y(rows * cols, NAN);
        matmul(*kernels, w, x.data() + first * k, k, cols, y.data(), rows, scratch, pool,
               DotPath::kQuantized, route);
        return y;
      };
      for (MatmulRoute route : {MatmulRoute::kTiled, MatmulRoute::kStream}) {
        const std::vector<float> tiled = product(0, n_cols, route);
        for (size_t c = 0; c < n_cols; ++c) {
          const std::vector<float> alone = product(c, 1, MatmulRoute::kStream);
          // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): the bits are what is compared
          EXPECT_EQ(std::memcmp(alone.data(), tiled.data() + c * rows, rows * sizeof(float)), 0)
              << kernels->variant << " " << tensor_type_name(type) << " column " << c
              << (route == MatmulRoute::kTiled ? " tiled" : " streamed");
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel table this CPU runs has a tile equal to its dot";
}

TEST(Matmul, GroupEqualsSeparateProducts) {
  const KernelTable& kernels = selected_kernels();
  const size_t k = 256;
  const Quantized a(TensorType::kQ4_K, 40, k), b(TensorType::kQ6_K, 70, k),
      c(TensorType::kQ8_0, 33, k);
  const WeightMatrix ws[] = {{TensorType::kQ4_K, a.data(), a.stride, 40, k},
                             {TensorType::kQ6_K, b.data(), b.stride, 70, k},
                             {TensorType::kQ8_0, c.data(), c.stride, 33, k}};
  for (size_t n_cols : {size_t{1}, size_t{4}, size_t{20}}) {
    std::vector<float> x;
    for (size_t col = 0; col < n_cols; ++col) {
      const auto v = wave(k, static_cast<float>(col));
      x.insert(x.end(), v.begin(), v.end());
    }
    ThreadPool pool(2);
    std::vector<std::vector<float>> group_out(3), single_out(3);
    std::vector<MatmulOutput> outs;
    for (size_t i = 0; i < 3; ++i) {
      group_out[i].assign(ws[i].n_rows * n_cols, NAN);
      outs.push_back({ws[i], group_out[i].data(), ws[i].n_rows});
    }
    std::vector<uint8_t> scratch(matmul_group_scratch_bytes(
        kernels, ws, n_cols, pool.size(), DotPath::kQuantized, MatmulRoute::kAuto));
    matmul_group(kernels, outs, x.data(), k, n_cols, scratch, pool, DotPath::kQuantized,
                 MatmulRoute::kAuto);
    for (size_t i = 0; i < 3; ++i) {
      single_out[i] = run(kernels, ws[i], x.data(), n_cols, 2);
      EXPECT_EQ(std::memcmp(single_out[i].data(), group_out[i].data(),
                            single_out[i].size() * sizeof(float)),
                0)
          << "matrix " << i << " cols " << n_cols;
    }
  }
}

// Interleaved weights (InterleavedKernels): on every table that rearranges a type, the product
// over the rearranged rows equals, bit for bit on every route, column count and thread count,
// what the layout's `bits` names: the reference table's product over the rows as stored (the
// interleaved quantized kernels do the reference's steps in the reference's order; see
// kernels/avx2/dot_interleaved.cc), or each row's FMA chain (the float types). The F32 path equals
// the same table's F32 path over the stored rows; an embedding row is the dequantized stored row. A
// table that reorders a block sum, misplaces a row, a scale or a Q5 fifth bit fails here.
TEST(Matmul, RearrangedWeightsEqualTheStoredRowsBitForBit) {
  const size_t rows = 96, max_cols = 21;
  size_t checked = 0;
  for (const KernelTable* kernels : runnable_kernel_tables()) {
    for (TensorType type : weight_types()) {
      const InterleavedKernels& ik = kernels->weight(type).interleaved;
      if (ik.rows == 0) continue;
      ++checked;
      // 11 blocks (352 elements of a 32-element type, 2816 of a K-quant): a short last run; 353
      // elements of a float type.
      const size_t k = block_elements(type) == 1 ? 353 : 11 * block_elements(type);
      std::vector<float> x;
      for (size_t c = 0; c < max_cols; ++c) {
        const auto col = wave(k, 5.0f + 2.1f * static_cast<float>(c));
        x.insert(x.end(), col.begin(), col.end());
      }
      // The first block of every column constant: quantized, all 32 activations are 127.
      for (size_t c = 0; c < max_cols; ++c) std::fill_n(x.data() + c * k, 32, 0.5f);
      Quantized q(type, rows, k);
      // Hostile-looking but legal levels: -128 in the first block of every row.
      for (size_t r = 0; r < rows && type == TensorType::kQ8_0; ++r) {
        reinterpret_cast<uint8_t*>(q.words.data())[r * q.stride + 2 + r % 32] = 0x80;
      }
      // The four- and five-bit types' largest level everywhere in the first block of every
      // row (all payload bits set): against those activations, the largest sums a block makes.
      const size_t head = type == TensorType::kQ4_1 || type == TensorType::kQ5_1 ? 4 : 2;
      const bool max_levels = type == TensorType::kQ4_0 || type == TensorType::kQ4_1 ||
                              type == TensorType::kQ5_0 || type == TensorType::kQ5_1;
      for (size_t r = 0; r < rows && max_levels; ++r) {
        uint8_t* block = reinterpret_cast<uint8_t*>(q.words.data()) + r * q.stride;
        std::fill(block + head, block + row_bytes(type, 32), uint8_t{0xFF});
      }
      const WeightMatrix stored{type, q.data(), q.stride, rows, k, false};
      std::vector<uint8_t> rearranged(rows * q.stride);
      ik.interleave(q.data(), q.stride, rows, k, rearranged.data());
      const WeightMatrix interleaved{type, rearranged.data(), q.stride, rows, k, true};
      auto product = [&](const KernelTable& table, const WeightMatrix& w, size_t first,
                         size_t n_cols, int threads, DotPath path, MatmulRoute route) {
        ThreadPool pool(threads);
        std::vector<uint8_t> scratch(matmul_scratch_bytes(table, w, n_cols, threads, path, route));
        std::vector<float> y(rows * n_cols, NAN);
        matmul(table, w, x.data() + first * k, k, n_cols, y.data(), rows, scratch, pool, path,
               route);
        return y;
      };
      const std::vector<float> want = ik.bits == InterleavedKernels::Bits::kFmaChain
                                          ? fma_chains(q, rows, k, x, max_cols)
                                          : product(reference_kernels(), stored, 0, max_cols, 1,
                                                    DotPath::kQuantized, MatmulRoute::kStream);
      for (MatmulRoute route : {MatmulRoute::kAuto, MatmulRoute::kStream, MatmulRoute::kTiled}) {
        for (size_t n_cols :
             {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{7}, size_t{16}, max_cols}) {
          for (int threads : {1, 3}) {
            const size_t first = max_cols - n_cols;
            const std::vector<float> got =
                product(*kernels, interleaved, first, n_cols, threads, DotPath::kQuantized, route);
            EXPECT_EQ(
                std::memcmp(got.data(), want.data() + first * rows, got.size() * sizeof(float)), 0)
                << kernels->variant << " " << tensor_type_name(type) << " cols " << first << "+"
                << n_cols << " threads " << threads;
          }
        }
      }
      // The F32 path: a quantized type's gives the stored rows' bits interleaved or not; a float
      // type's activations are F32 on both paths, so its F32 path is the product above.
      const std::vector<float> f32_stored =
          activation_type(type) == TensorType::kF32
              ? std::vector<float>(want.begin(), want.begin() + 5 * rows)
              : product(*kernels, stored, 0, 5, 2, DotPath::kF32, MatmulRoute::kAuto);
      const std::vector<float> f32_interleaved =
          product(*kernels, interleaved, 0, 5, 2, DotPath::kF32, MatmulRoute::kAuto);
      EXPECT_EQ(
          std::memcmp(f32_stored.data(), f32_interleaved.data(), f32_stored.size() * sizeof(float)),
          0)
          << kernels->variant << " " << tensor_type_name(type) << " f32 path";
      std::vector<float> row(k), want_row(k);
      for (size_t r : {size_t{0}, size_t{5}, size_t{8}, rows - 1}) {
        embedding_row(*kernels, interleaved, r, row.data());
        kernels->weight(type).dequantize(q.data() + r * q.stride, want_row.data(), k);
        EXPECT_EQ(row, want_row) << kernels->variant << " row " << r;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel table this CPU runs interleaves a weight type";
}

TEST(Matmul, EmbeddingRowIsTheDequantizedRow) {
  const KernelTable& kernels = selected_kernels();
  const Quantized q(TensorType::kQ6_K, 5, 256);
  const WeightMatrix w{TensorType::kQ6_K, q.data(), q.stride, 5, 256};
  std::vector<float> got(256), want(256);
  embedding_row(kernels, w, 3, got.data());
  dequantize_row(TensorType::kQ6_K, {q.data() + 3 * q.stride, q.stride}, want);
  // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): the bits are what is compared
  EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * 256), 0);
}

TEST(Matmul, ScratchGrowsWithColumnsAndThreads) {
  const KernelTable& kernels = selected_kernels();
  const WeightMatrix w{TensorType::kQ4_0, nullptr, row_bytes(TensorType::kQ4_0, 896), 896, 896};
  EXPECT_LT(matmul_scratch_bytes(kernels, w, 1, 1), matmul_scratch_bytes(kernels, w, 64, 1));
  EXPECT_LE(matmul_scratch_bytes(kernels, w, 64, 1), matmul_scratch_bytes(kernels, w, 64, 4));
}

TEST(Attention, CausalQueriesSeeTheirPrefix) {
  const KernelTable& kernels = selected_kernels();
  const size_t heads = 4, kv_heads = 2, dim = 32, tokens = 23, page = 8;
  std::vector<std::vector<float>> k_pages, v_pages;
  std::vector<const uint8_t*> kp, vp;
  for (size_t p = 0; p < (tokens + page - 1) / page; ++p) {
    k_pages.push_back(wave(page * kv_heads * dim, static_cast<float>(p)));
    v_pages.push_back(wave(page * kv_heads * dim, 50.0f + static_cast<float>(p)));
  }
  for (size_t p = 0; p < k_pages.size(); ++p) {
    kp.push_back(reinterpret_cast<const uint8_t*>(k_pages[p].data()));
    vp.push_back(reinterpret_cast<const uint8_t*>(v_pages[p].data()));
  }
  const KvPages kv{kp.data(), vp.data(), page, tokens, TensorType::kF32};
  const AttentionParams params{heads, kv_heads, dim, 0.2f, 0.0f};
  const size_t n_q = 5;
  const std::vector<float> q = wave(n_q * heads * dim, 7.0f);
  const std::vector<int64_t> positions = {0, 3, 9, 21, 40};  // the last sees every token
  std::vector<float> out(q.size());
  ThreadPool pool(2);
  attention(kernels, params, kv,
            AttentionBatch{q.data(), heads * dim, positions.data(), n_q, out.data(), heads * dim},
            pool);
  for (size_t i = 0; i < n_q; ++i) {
    const size_t n_keys = std::min<size_t>(static_cast<size_t>(positions[i]) + 1, tokens);
    for (size_t h = 0; h < kv_heads; ++h) {
      std::vector<float> want(2 * dim);
      kernels.attend(q.data() + i * heads * dim + h * 2 * dim, 2, kv, h, n_keys, params,
                     want.data());
      EXPECT_EQ(std::memcmp(want.data(), out.data() + i * heads * dim + h * 2 * dim,
                            want.size() * sizeof(float)),
                0)
          << "query " << i << " kv head " << h;
    }
  }
  // Position 0 sees only token 0: the output is its value row.
  for (size_t d = 0; d < dim; ++d) EXPECT_NEAR(out[d], v_pages[0][d], 1e-6f);
}

}  // namespace
}  // namespace synapse
