// SPDX-License-Identifier: Apache-2.0
// Kernel micro-benchmarks at the shapes of a 0.5B-parameter model (Qwen2.5-0.5B: embedding 896,
// feed-forward 4864, vocabulary 151936), written ggml-style as row length x rows:
//   896x896 (attention q/o), 896x4864 (ffn up/gate), 4864x896 (ffn down), 896x151936 (output).
// K-quants run only where the row length is a multiple of 256 (4864x896), and have an output of
// their own, 1024x151936: the head of the 0.5B-shaped K-quant files (embedding 1024) the notes
// measure, where the weights stream from memory at decode as nowhere else in the model.
//
// Matrix-vector (decode): weight bytes streamed per second (weight_GBps), next to the memory
// read bandwidth (mem_GBps) measured right after each benchmark by streaming the same buffer
// with the same number of threads through the kernels' read probe, and the ratio (pct_of_mem).
// The matrices are out of cache: each benchmark cycles through enough copies of its matrix to
// cover 256 MiB, eight times the L3 of the machines we measure on. The start-up context also
// reports the bandwidth of a 1 GiB buffer.
// Batched decode: 2 to 16 columns on the streamed route (what a service step runs), out of
// cache; tokens per second and the weight stream's fraction of the memory bandwidth.
// Matrix-matrix (prefill): 512 tokens, GFLOP/s (2 * rows * k * 512 per product).
// Attention: one decode query over 512 or 4096 cached tokens per KV cache type (Attend/...).
//
//   build/release/bench/kernels_bench [--benchmark_filter=Matvec/Q8_0] [--benchmark_format=json]
//   SYNAPSE_ISA=avx2 build/release/bench/kernels_bench      # another kernel level
//   SYNAPSE_BENCH_IN_CACHE=1 build/release/bench/kernels_bench  # decode without cache misses
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/cpu_info.h"
#include "kernels/attention.h"
#include "kernels/kernel_selection.h"
#include "kernels/matmul.h"
#include "kernels/memory_bandwidth.h"
#include "tensor/quant.h"
#include "tensor/quant_common.h"

namespace synapse {
namespace {

struct Shape {
  size_t k;  // row length
  size_t rows;
  const char* name;
  bool k_quants_only = false;  // the K-quant files' own shape, not run for the other types
};
constexpr Shape kShapes[] = {{896, 896, "896x896"},
                             {896, 4864, "896x4864"},
                             {4864, 896, "4864x896"},
                             {896, 151936, "896x151936"},
                             {1024, 151936, "1024x151936", true}};
// Decode figures cycle through copies of a matrix spanning at least this much, and at least
// twice the last-level cache: some servers report an L3 of hundreds of MiB, where 256 MiB of
// copies would be measured from cache.
constexpr size_t kOutOfCacheBytes = size_t{256} << 20;
size_t out_of_cache_bytes() {
  static const size_t bytes = std::max(kOutOfCacheBytes, 2 * CpuInfo::detect().l3_cache_bytes);
  return bytes;
}
constexpr size_t kPrefillTokens = 512;
constexpr int kMaxThreads = 2;

double g_memory_gb_per_s[kMaxThreads + 1] = {};

// Random weights: 64 distinct rows quantized by the reference quantizer, repeated, in a
// page-aligned buffer (also the memory the bandwidth probe reads).
std::unique_ptr<BandwidthBuffer> make_weights(TensorType type, size_t k, size_t rows,
                                              size_t copies) {
  const size_t stride = row_bytes(type, k);
  constexpr size_t kDistinct = 64;
  std::vector<uint32_t> distinct((kDistinct * stride + 3) / 4);
  uint64_t state = 12345;
  std::vector<float> row(k);
  for (size_t r = 0; r < kDistinct; ++r) {
    for (float& v : row) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      v = (static_cast<float>(state >> 40) / 16777216.0f - 0.5f) * 0.2f;
    }
    quantize_row(type, row, {reinterpret_cast<uint8_t*>(distinct.data()) + r * stride, stride});
  }
  auto bytes = std::make_unique<BandwidthBuffer>(copies * rows * stride);
  for (size_t r = 0; r < copies * rows; ++r) {
    std::memcpy(bytes->data() + r * stride,
                reinterpret_cast<const uint8_t*>(distinct.data()) + (r % kDistinct) * stride,
                stride);
  }
  return bytes;
}

// The weights as the CPU backend holds them: interleaved where the kernel level interleaves the
// type (CpuBackend::prepare_matrix; SYNAPSE_INTERLEAVE=0 keeps the rows as stored there and here).
// `w` describes the first copy; the caller moves w.data from copy to copy.
std::unique_ptr<BandwidthBuffer> as_backend_holds(const KernelTable& kernels,
                                                  std::unique_ptr<BandwidthBuffer> weights,
                                                  size_t copies, WeightMatrix& w) {
  const InterleavedKernels& ik = kernels.weight(w.type).interleaved;
  // Nothing in this program sets the environment, so reading it cannot race.
  const char* env = std::getenv("SYNAPSE_INTERLEAVE");  // NOLINT(concurrency-mt-unsafe)
  if (ik.rows == 0 || w.n_rows % ik.rows != 0 || (env != nullptr && std::string_view(env) == "0")) {
    w.data = weights->data();
    return weights;
  }
  auto out = std::make_unique<BandwidthBuffer>(weights->size());
  const size_t matrix_bytes = w.row_stride * w.n_rows;
  for (size_t c = 0; c < copies; ++c) {
    ik.interleave(weights->data() + c * matrix_bytes, w.row_stride, w.n_rows, w.k,
                  out->data() + c * matrix_bytes);
  }
  w.data = out->data();
  w.interleaved = true;
  return out;
}

std::vector<float> make_activations(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.1f * static_cast<float>(i)) * 3.0f;
  return x;
}

// Decode: `cols` sequences' next tokens against one matrix on the streamed route (the service's
// route; one column is the matrix-vector product), the weights out of cache. tokens_per_s
// counts columns; pct_of_mem says how close one weight pass per step stays to the memory
// bandwidth as the batch grows.
void decode(benchmark::State& state, TensorType type, Shape shape, int threads, size_t cols) {
  const KernelTable& kernels = selected_kernels();
  const size_t matrix_bytes = row_bytes(type, shape.k) * shape.rows;
  // SYNAPSE_BENCH_IN_CACHE=1: one copy, to see the kernel's compute bound on small shapes.
  const bool in_cache =
      std::getenv("SYNAPSE_BENCH_IN_CACHE") != nullptr;  // NOLINT(concurrency-mt-unsafe): as above
  const size_t copies = in_cache ? 1 : (out_of_cache_bytes() + matrix_bytes - 1) / matrix_bytes;
  WeightMatrix w{type, nullptr, row_bytes(type, shape.k), shape.rows, shape.k};
  const auto weights =
      as_backend_holds(kernels, make_weights(type, shape.k, shape.rows, copies), copies, w);
  const std::vector<float> x = make_activations(shape.k * cols);
  std::vector<float> y(shape.rows * cols);
  ThreadPool pool(threads);
  std::vector<uint8_t> scratch(
      matmul_scratch_bytes(kernels, w, cols, threads, DotPath::kQuantized, MatmulRoute::kStream));
  size_t copy = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    w.data = weights->data() + copy * matrix_bytes;
    copy = copy + 1 == copies ? 0 : copy + 1;
    matmul(kernels, w, x.data(), shape.k, cols, y.data(), shape.rows, scratch, pool,
           DotPath::kQuantized, MatmulRoute::kStream);
    benchmark::DoNotOptimize(y.data());
  }
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  const double per_s = static_cast<double>(state.iterations()) / seconds.count();
  const double gb_per_s = static_cast<double>(matrix_bytes) * per_s / 1e9;
  // The yardstick, measured right after on the very same bytes with the same threads: the
  // machine's bandwidth drifts (other tenants), so the ratio is what to quote.
  const double memory =
      in_cache ? g_memory_gb_per_s[threads]
               : measure_read_bandwidth(kernels, weights->data(), weights->size(), pool, 3)
                     .best_gb_per_s;
  state.SetBytesProcessed(static_cast<int64_t>(matrix_bytes) * state.iterations());
  state.counters["weight_GBps"] = gb_per_s;
  state.counters["mem_GBps"] = memory;
  state.counters["pct_of_mem"] = 100.0 * gb_per_s / memory;
  state.counters["tokens_per_s"] = per_s * static_cast<double>(cols);
}

void matmul_prefill(benchmark::State& state, TensorType type, Shape shape, int threads) {
  const KernelTable& kernels = selected_kernels();
  WeightMatrix w{type, nullptr, row_bytes(type, shape.k), shape.rows, shape.k};
  const auto weights = as_backend_holds(kernels, make_weights(type, shape.k, shape.rows, 1), 1, w);
  const std::vector<float> x = make_activations(shape.k * kPrefillTokens);
  std::vector<float> y(shape.rows * kPrefillTokens);
  ThreadPool pool(threads);
  std::vector<uint8_t> scratch(matmul_scratch_bytes(kernels, w, kPrefillTokens, threads));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    matmul(kernels, w, x.data(), shape.k, kPrefillTokens, y.data(), shape.rows, scratch, pool);
    benchmark::DoNotOptimize(y.data());
  }
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  const double flops = 2.0 * static_cast<double>(shape.rows * shape.k * kPrefillTokens);
  state.counters["GFLOPs"] =
      flops * static_cast<double>(state.iterations()) / seconds.count() / 1e9;
  state.counters["tokens_per_s"] = static_cast<double>(kPrefillTokens) *
                                   static_cast<double>(state.iterations()) / seconds.count();
}

// Attention of one decode query of the 0.5B shape (14 heads sharing 2 KV heads of 64) over
// n_keys cached tokens of one layer, per KV cache type, one thread: what a decode step spends per
// layer and sequence at that depth. kv_GBps counts the cache bytes read (K and V once per KV
// head); at 4096 keys an F32 layer is 4 MiB, so this measures the kernel from cache.
void attend(benchmark::State& state, TensorType kv_type, size_t n_keys) {
  const KernelTable& kernels = selected_kernels();
  constexpr size_t kHeads = 14, kKvHeads = 2, kHeadDim = 64;
  const size_t token_elements = kKvHeads * kHeadDim;
  const size_t token_bytes = row_bytes(kv_type, token_elements);
  BandwidthBuffer k(n_keys * token_bytes + 4096), v(n_keys * token_bytes + 4096);
  const std::vector<float> values = make_activations(token_elements * 7 + 1);
  for (size_t t = 0; t < n_keys; ++t) {
    const std::span<const float> row(values.data() + (t % 7) * token_elements, token_elements);
    quantize_row(kv_type, row, {k.data() + t * token_bytes, token_bytes});
    quantize_row(kv_type, row, {v.data() + t * token_bytes, token_bytes});
  }
  const uint8_t* k_page = k.data();
  const uint8_t* v_page = v.data();
  const KvPages kv{&k_page, &v_page, n_keys, n_keys, kv_type, 0};
  const AttentionParams params{kHeads, kKvHeads, kHeadDim, 0.125f, 0.0f, 0};
  const std::vector<float> q = make_activations(kHeads * kHeadDim);
  std::vector<float> out(kHeads * kHeadDim);
  const size_t group = kHeads / kKvHeads;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (size_t h = 0; h < kKvHeads; ++h) {
      kernels.attend(q.data() + h * group * kHeadDim, group, kv, h, n_keys, params,
                     out.data() + h * group * kHeadDim);
    }
    benchmark::DoNotOptimize(out.data());
  }
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  const double per_s = static_cast<double>(state.iterations()) / seconds.count();
  state.counters["queries_per_s"] = per_s;
  state.counters["kv_GBps"] = per_s * 2.0 * static_cast<double>(n_keys * token_bytes) / 1e9;
}

bool fits(TensorType type, const Shape& shape) {
  if (shape.k_quants_only && block_elements(type) != kSuperBlockElements) return false;
  return shape.k % block_elements(type) == 0;
}

void register_benchmarks() {
  for (TensorType kv_type :
       {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    for (size_t n_keys : {size_t{512}, size_t{4096}}) {
      benchmark::RegisterBenchmark(
          ("Attend/" + std::string(tensor_type_name(kv_type)) + "/keys:" + std::to_string(n_keys))
              .c_str(),
          attend, kv_type, n_keys)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (TensorType type : weight_types()) {
    const std::string name(tensor_type_name(type));
    for (const Shape& shape : kShapes) {
      if (!fits(type, shape)) continue;
      for (int threads = 1; threads <= kMaxThreads; ++threads) {
        benchmark::RegisterBenchmark(
            ("Matvec/" + name + "/" + shape.name + "/threads:" + std::to_string(threads)).c_str(),
            decode, type, shape, threads, size_t{1})
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
      for (size_t cols : {size_t{2}, size_t{3}, size_t{4}, size_t{8}, size_t{16}}) {
        benchmark::RegisterBenchmark(
            ("BatchedDecode/" + name + "/" + shape.name + "/cols:" + std::to_string(cols) +
             "/threads:" + std::to_string(kMaxThreads))
                .c_str(),
            decode, type, shape, kMaxThreads, cols)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
      benchmark::RegisterBenchmark(
          ("Matmul512/" + name + "/" + shape.name + "/threads:" + std::to_string(kMaxThreads))
              .c_str(),
          matmul_prefill, type, shape, kMaxThreads)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace synapse

int main(int argc, char** argv) {
  using namespace synapse;
  benchmark::Initialize(&argc, argv);
  const KernelTable& kernels = selected_kernels();
  benchmark::AddCustomContext("kernels", kernels.variant);
  {
    const BandwidthBuffer buffer(size_t{1} << 30);
    for (int threads = 1; threads <= kMaxThreads; ++threads) {
      ThreadPool pool(threads);
      const BandwidthSample s = measure_read_bandwidth(kernels, buffer, pool, 5);
      g_memory_gb_per_s[threads] = s.best_gb_per_s;
      benchmark::AddCustomContext("memory_read_GBps_threads_" + std::to_string(threads),
                                  std::to_string(s.best_gb_per_s));
    }
  }
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
