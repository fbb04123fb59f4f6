// SPDX-License-Identifier: Apache-2.0
#include "kernels/kernel_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/tolerance.h"
#include "tensor/half.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// SplitMix64 and a bell-shaped variate (Irwin-Hall, n = 4): deterministic on every platform.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ULL + 1) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  float bell() {
    const double s = unit() + unit() + unit() + unit() - 2.0;
    return static_cast<float>(s * std::sqrt(3.0));
  }

 private:
  uint64_t state_;
};

// Row `r` of a test matrix: scales from 1e-3 to 1e3, a zero row, an all-positive row and rows
// with outliers, so every quantizer branch and every scale range is exercised.
std::vector<float> random_row(Random& random, size_t n, size_t r) {
  static constexpr float kScales[] = {1.0f, 1e-3f, 1e3f, 0.0f, 0.05f, 1.0f, 7.0f};
  const float scale = kScales[r % 7];
  std::vector<float> row(n);
  for (float& v : row) v = scale * random.bell();
  if (r % 7 == 4) {
    for (float& v : row) v = std::fabs(v) + 0.01f;
  }
  if (r % 7 == 5 && n > 0) row[random.next() % n] *= 60.0f;
  return row;
}

// Bytes with room for SIMD kernels' alignment assumptions (64) and the block types (4).
struct Buffer {
  std::vector<uint64_t> words;
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()); }
  explicit Buffer(size_t bytes) : words((bytes + 7) / 8 + 8, 0) {}
};

struct Matrix {
  Buffer bytes;
  size_t stride;
  Matrix(size_t n_rows, size_t stride_bytes) : bytes(n_rows * stride_bytes), stride(stride_bytes) {}
};

Matrix quantized_rows(TensorType type, size_t n_rows, size_t k, Random& random,
                      std::vector<std::vector<float>>* values = nullptr) {
  const size_t stride = row_bytes(type, k);
  Matrix m(n_rows, stride);
  for (size_t r = 0; r < n_rows; ++r) {
    std::vector<float> row = random_row(random, k, r);
    quantize_row(type, row, {m.bytes.data() + r * stride, stride});
    if (values != nullptr) values->push_back(std::move(row));
  }
  return m;
}

void note(CompareResult& result, double diff, double tolerance, const std::string& where) {
  ++result.n_compared;
  double ratio = 0.0;
  if (std::isnan(diff)) {
    ratio = kInfinity;
  } else if (diff > 0.0) {
    ratio = tolerance > 0.0 ? diff / tolerance : kInfinity;
  }
  if (ratio > result.worst_ratio || (std::isnan(ratio) && result.detail.empty())) {
    result.worst_ratio = ratio;
    char text[96];
    std::snprintf(text, sizeof(text), ": |diff| %.9g, tolerance %.9g", diff, tolerance);
    result.detail = where + text;
  }
}

// Both NaN, or equal bits, count as identical.
double float_diff(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0.0;
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0.0 : kInfinity;
  return std::fabs(static_cast<double>(a) - static_cast<double>(b));
}

// Products y[c * n_rows + r] against the reference within the sum-order tolerance of their
// magnitudes.
CompareResult compare_products(const std::vector<float>& got, const std::vector<float>& want,
                               const std::vector<float>& magnitude, size_t n_rows, size_t k,
                               bool f32) {
  const double roundings = f32 ? float_dot_roundings(k) : quantized_dot_roundings(k);
  CompareResult result;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tolerance =
        sum_order_tolerance(roundings, static_cast<double>(magnitude[i])) + kTinyAbsTolerance;
    note(result, float_diff(got[i], want[i]), tolerance,
         "row " + std::to_string(i % n_rows) + " col " + std::to_string(i / n_rows));
  }
  return result;
}

}  // namespace

CompareResult compare_dot(const KernelTable& kernels, TensorType type, size_t n_rows, size_t n_cols,
                          size_t k, uint64_t seed, DotPath path) {
  Random random(seed);
  const Matrix w = quantized_rows(type, n_rows, k, random);
  const bool f32 = path == DotPath::kF32 || activation_type(type) == TensorType::kF32;
  const TensorType act = f32 ? TensorType::kF32 : activation_type(type);
  const Matrix x = quantized_rows(act, n_cols, k, random);
  std::vector<float> got(n_rows * n_cols), want(n_rows * n_cols), magnitude(n_rows * n_cols);
  const WeightKernels& wk = kernels.weight(type);
  const auto* raw = reinterpret_cast<const uint8_t*>(x.bytes.words.data());
  // The kernel's own layout of the activations, when it has one.
  const bool prepare = !f32 && wk.dot_prepare != nullptr;
  const size_t prepared_stride = prepare ? (wk.dot_prepared_bytes(k) + 63) / 64 * 64 : 0;
  Buffer prepared(n_cols * prepared_stride + 64);
  const size_t skew = (64 - reinterpret_cast<uintptr_t>(prepared.data()) % 64) % 64;
  if (prepare) {
    for (size_t c = 0; c < n_cols; ++c) {
      wk.dot_prepare(raw + c * x.stride, k, prepared.data() + skew + c * prepared_stride);
    }
  }
  DotTile tile{reinterpret_cast<const uint8_t*>(w.bytes.words.data()),
               w.stride,
               n_rows,
               prepare ? prepared.data() + skew : raw,
               prepare ? prepared_stride : x.stride,
               n_cols,
               k,
               got.data(),
               n_rows};
  (f32 ? wk.dot_f32 : wk.dot)(tile);
  tile.x = raw;
  tile.x_stride = x.stride;
  tile.y = want.data();
  (f32 ? ref::dot_f32_kernel(type) : ref::dot_kernel(type))(tile);
  tile.y = magnitude.data();
  (f32 ? ref::dot_f32_magnitude_kernel(type) : ref::dot_magnitude_kernel(type))(tile);
  return compare_products(got, want, magnitude, n_rows, k, f32);
}

CompareResult compare_matmul(const KernelTable& kernels, TensorType type, size_t n_rows,
                             size_t n_cols, size_t k, uint64_t seed, DotPath path, int n_threads,
                             bool interleaved) {
  Random random(seed);
  const Matrix w = quantized_rows(type, n_rows, k, random);
  std::vector<float> x;
  for (size_t c = 0; c < n_cols; ++c) {
    const std::vector<float> row = random_row(random, k, c + 3);
    x.insert(x.end(), row.begin(), row.end());
  }
  const WeightMatrix matrix{type, reinterpret_cast<const uint8_t*>(w.bytes.words.data()), w.stride,
                            n_rows, k};
  ThreadPool pool(n_threads);
  std::vector<float> got(n_rows * n_cols), want(n_rows * n_cols), magnitude(n_rows * n_cols);
  WeightMatrix computed = matrix;
  Buffer rearranged(interleaved ? w.stride * n_rows : 0);
  if (interleaved) {
    kernels.weight(type).interleaved.interleave(matrix.data, w.stride, n_rows, k,
                                                rearranged.data());
    computed.data = rearranged.data();
    computed.interleaved = true;
  }
  Buffer scratch(matmul_scratch_bytes(kernels, computed, n_cols, n_threads, path));
  matmul(kernels, computed, x.data(), k, n_cols, got.data(), n_rows,
         {scratch.data(), scratch.words.size() * 8}, pool, path);
  const KernelTable& reference = reference_kernels();
  Buffer ref_scratch(matmul_scratch_bytes(reference, matrix, n_cols, n_threads, path));
  matmul(reference, matrix, x.data(), k, n_cols, want.data(), n_rows,
         {ref_scratch.data(), ref_scratch.words.size() * 8}, pool, path);
  // The magnitude of each output from the reference-quantized activations.
  const bool f32 = path == DotPath::kF32 || activation_type(type) == TensorType::kF32;
  const TensorType act = f32 ? TensorType::kF32 : activation_type(type);
  Matrix xq(n_cols, row_bytes(act, k));
  for (size_t c = 0; c < n_cols; ++c) {
    quantize_row(act, {x.data() + c * k, k}, {xq.bytes.data() + c * xq.stride, xq.stride});
  }
  const DotTile tile{
      matrix.data, w.stride, n_rows, reinterpret_cast<const uint8_t*>(xq.bytes.words.data()),
      xq.stride,   n_cols,   k,      magnitude.data(),
      n_rows};
  (f32 ? ref::dot_f32_magnitude_kernel(type) : ref::dot_magnitude_kernel(type))(tile);
  return compare_products(got, want, magnitude, n_rows, k, f32);
}

CompareResult compare_dequantize(const KernelTable& kernels, TensorType type, size_t k,
                                 uint64_t seed) {
  Random random(seed);
  constexpr size_t kRows = 7;
  const Matrix w = quantized_rows(type, kRows, k, random);
  CompareResult result;
  std::vector<float> got(k), want(k);
  for (size_t r = 0; r < kRows; ++r) {
    const uint8_t* row = reinterpret_cast<const uint8_t*>(w.bytes.words.data()) + r * w.stride;
    kernels.weight(type).dequantize(row, got.data(), k);
    ref::dequantize(type, row, want.data(), k);
    for (size_t i = 0; i < k; ++i) {
      const bool same = std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
      note(result, same ? 0.0 : kInfinity, 0.0,
           "row " + std::to_string(r) + " element " + std::to_string(i));
    }
  }
  return result;
}

CompareResult compare_quantize(const KernelTable& kernels, TensorType act_type, size_t k,
                               uint64_t seed) {
  SYN_CHECK(act_type == TensorType::kQ8_0 || act_type == TensorType::kQ8_K,
            "compare_quantize: not an activation type");
  Random random(seed);
  CompareResult result;
  const size_t bytes = row_bytes(act_type, k);
  Buffer got(bytes), want(bytes);
  for (size_t r = 0; r < 7; ++r) {
    const std::vector<float> row = random_row(random, k, r);
    (act_type == TensorType::kQ8_K ? kernels.quantize_q8_k : kernels.quantize_q8_0)(row.data(),
                                                                                    got.data(), k);
    quantize_row(act_type, row, {want.data(), bytes});
    for (size_t i = 0; i < bytes; ++i) {
      note(result, got.data()[i] == want.data()[i] ? 0.0 : kInfinity, 0.0,
           "row " + std::to_string(r) + " byte " + std::to_string(i));
    }
  }
  return result;
}

const char* op_name(OpKind op) {
  switch (op) {
    case OpKind::kRmsNorm:
      return "rms_norm";
    case OpKind::kLayerNorm:
      return "layer_norm";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kSoftmaxMasked:
      return "softmax_masked";
    case OpKind::kSoftmaxSoftcap:
      return "softmax_softcap";
    case OpKind::kExp:
      return "exp";
    case OpKind::kSilu:
      return "silu";
    case OpKind::kGeluTanh:
      return "gelu_tanh";
    case OpKind::kGeluErf:
      return "gelu_erf";
    case OpKind::kSwiglu:
      return "swiglu";
    case OpKind::kAdd:
      return "add";
    case OpKind::kMul:
      return "mul";
    case OpKind::kScale:
      return "scale";
    case OpKind::kRopeAdjacent:
      return "rope_adjacent";
    case OpKind::kRopeNeoxYarn:
      return "rope_neox_yarn";
    case OpKind::kReadBytes:
      return "read_bytes";
  }
  return "?";
}

CompareResult compare_op(const KernelTable& kernels, OpKind op, size_t n, uint64_t seed) {
  Random random(seed);
  const KernelTable& ref_table = reference_kernels();
  std::vector<float> a(n), b(n), got(n), want(n);
  // Wide ranges: the activations' exp must cover both tails.
  for (size_t i = 0; i < n; ++i) {
    a[i] = random.bell() * (i % 5 == 0 ? 30.0f : 3.0f);
    b[i] = random.bell();
  }
  std::vector<double> tolerance(n, 0.0);  // 0: must be bit-identical
  switch (op) {
    case OpKind::kRmsNorm:
    case OpKind::kLayerNorm: {
      const bool rms = op == OpKind::kRmsNorm;
      std::vector<float> bias(n);
      for (float& v : bias) v = random.bell();
      if (rms) {
        kernels.rms_norm(a.data(), b.data(), n, 1e-6f, got.data());
        ref_table.rms_norm(a.data(), b.data(), n, 1e-6f, want.data());
      } else {
        kernels.layer_norm(a.data(), b.data(), bias.data(), n, 1e-5f, got.data());
        ref_table.layer_norm(a.data(), b.data(), bias.data(), n, 1e-5f, want.data());
      }
      // The bias can cancel the normalized value: measure relative to both parts.
      for (size_t i = 0; i < n; ++i) {
        const double part = std::fabs(static_cast<double>(want[i])) +
                            (rms ? 0.0 : 2.0 * std::fabs(static_cast<double>(bias[i])));
        tolerance[i] = kRmsNormRelTolerance * part + kTinyAbsTolerance;
      }
      break;
    }
    case OpKind::kSoftmax:
    case OpKind::kSoftmaxMasked:
    case OpKind::kSoftmaxSoftcap: {
      std::vector<float> mask(n);
      for (float& v : mask) v = random.unit() < 0.2 ? -INFINITY : random.bell();
      const SoftmaxParams params{0.7f, op == OpKind::kSoftmaxSoftcap ? 5.0f : 0.0f,
                                 op == OpKind::kSoftmaxMasked ? mask.data() : nullptr};
      got = a;
      want = a;
      kernels.softmax(got.data(), n, params);
      ref_table.softmax(want.data(), n, params);
      for (size_t i = 0; i < n; ++i) {
        tolerance[i] =
            softmax_rel_tolerance(n) * std::fabs(static_cast<double>(want[i])) + kTinyAbsTolerance;
      }
      break;
    }
    case OpKind::kExp:
    case OpKind::kSilu:
    case OpKind::kGeluTanh:
    case OpKind::kGeluErf:
    case OpKind::kSwiglu: {
      if (op == OpKind::kSwiglu) {
        kernels.swiglu(a.data(), b.data(), got.data(), n);
        ref_table.swiglu(a.data(), b.data(), want.data(), n);
      } else {
        const auto fn = op == OpKind::kExp        ? &KernelTable::exp
                        : op == OpKind::kSilu     ? &KernelTable::silu
                        : op == OpKind::kGeluTanh ? &KernelTable::gelu_tanh
                                                  : &KernelTable::gelu_erf;
        (kernels.*fn)(a.data(), got.data(), n);
        (ref_table.*fn)(a.data(), want.data(), n);
      }
      for (size_t i = 0; i < n; ++i) {
        tolerance[i] =
            kActivationRelTolerance * std::fabs(static_cast<double>(want[i])) + kTinyAbsTolerance;
      }
      break;
    }
    case OpKind::kAdd:
      kernels.add(a.data(), b.data(), got.data(), n);
      ref_table.add(a.data(), b.data(), want.data(), n);
      break;
    case OpKind::kMul:
      kernels.mul(a.data(), b.data(), got.data(), n);
      ref_table.mul(a.data(), b.data(), want.data(), n);
      break;
    case OpKind::kScale:
      kernels.scale(a.data(), 0.37f, got.data(), n);
      ref_table.scale(a.data(), 0.37f, want.data(), n);
      break;
    case OpKind::kRopeAdjacent:
    case OpKind::kRopeNeoxYarn: {
      const size_t head_dim = 64;
      const size_t heads = n / head_dim > 0 ? n / head_dim : 1;
      got.assign(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(n, heads * head_dim)));
      got.resize(heads * head_dim, 0.5f);
      want = got;
      RopeParams params{
          RopeMode::kAdjacent, 64, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f, 4096, nullptr};
      if (op == OpKind::kRopeNeoxYarn) {
        params =
            RopeParams{RopeMode::kNeox, 48, 1e6f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, 4096, nullptr};
      }
      kernels.rope(got.data(), heads, head_dim, 12345, params);
      ref_table.rope(want.data(), heads, head_dim, 12345, params);
      tolerance.assign(got.size(), 0.0);
      break;
    }
    case OpKind::kReadBytes: {
      const size_t bytes = (n * 4 + 255) / 256 * 256 + 256;
      Buffer buffer(bytes);
      for (size_t i = 0; i < bytes; ++i) buffer.data()[i] = static_cast<uint8_t>(random.next());
      const size_t skew = (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
      const uint64_t x = kernels.read_bytes(buffer.data() + skew, bytes - 256);
      const uint64_t y = ref_table.read_bytes(buffer.data() + skew, bytes - 256);
      CompareResult result;
      note(result, x == y ? 0.0 : kInfinity, 0.0, "sum");
      return result;
    }
  }
  CompareResult result;
  for (size_t i = 0; i < got.size(); ++i) {
    note(result, float_diff(got[i], want[i]), tolerance[i], "element " + std::to_string(i));
  }
  return result;
}

CompareResult compare_attention(const KernelTable& kernels, const AttentionCase& c, uint64_t seed) {
  Random random(seed);
  const size_t row = c.n_kv_heads * c.head_dim + c.row_padding;  // elements per token
  const size_t n_pages = (c.n_keys + c.page_tokens - 1) / c.page_tokens + 1;
  // A token's slot is one row of the cache type (whole blocks for Q8_0/Q4_0); the reference
  // values are what the slot decodes to.
  const size_t slot_bytes = row_bytes(c.kv_type, row);
  // Pages are separate allocations, so the kernels must follow the page table.
  std::vector<std::vector<uint64_t>> k_store(n_pages), v_store(n_pages);
  std::vector<const uint8_t*> k_pages(n_pages), v_pages(n_pages);
  std::vector<float> k_values(n_pages * c.page_tokens * row), v_values(k_values.size());
  const auto store_slot = [&](float* values, uint8_t* slot) {
    const std::span<float> v(values, row);
    quantize_row(c.kv_type, v, {slot, slot_bytes});
    dequantize_row(c.kv_type, {slot, slot_bytes}, v);
  };
  for (size_t pg = 0; pg < n_pages; ++pg) {
    k_store[pg].assign((c.page_tokens * slot_bytes + 7) / 8, 0);
    v_store[pg].assign((c.page_tokens * slot_bytes + 7) / 8, 0);
    for (size_t i = 0; i < c.page_tokens * row; ++i) {
      const size_t flat = pg * c.page_tokens * row + i;
      k_values[flat] = random.bell();
      v_values[flat] = random.bell() * 2.0f;
    }
    for (size_t t = 0; t < c.page_tokens; ++t) {
      const size_t flat = (pg * c.page_tokens + t) * row;
      store_slot(&k_values[flat], reinterpret_cast<uint8_t*>(k_store[pg].data()) + t * slot_bytes);
      store_slot(&v_values[flat], reinterpret_cast<uint8_t*>(v_store[pg].data()) + t * slot_bytes);
    }
    k_pages[pg] = reinterpret_cast<const uint8_t*>(k_store[pg].data());
    v_pages[pg] = reinterpret_cast<const uint8_t*>(v_store[pg].data());
  }
  const KvPages kv{k_pages.data(), v_pages.data(), c.page_tokens,
                   c.n_keys,       c.kv_type,      c.row_padding != 0 ? row : 0};
  const AttentionParams params{c.n_heads,  c.n_kv_heads,
                               c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim)),
                               c.softcap,  c.window};
  const size_t group = c.n_heads / c.n_kv_heads;
  std::vector<float> q(c.n_heads * c.head_dim);
  for (float& v : q) v = random.bell() * 1.5f;
  std::vector<float> got(q.size()), want(q.size());
  CompareResult result;
  for (size_t h = 0; h < c.n_kv_heads; ++h) {
    const size_t offset = h * group * c.head_dim;
    kernels.attend(q.data() + offset, group, kv, h, c.n_keys, params, got.data() + offset);
    ref::attend(q.data() + offset, group, kv, h, c.n_keys, params, want.data() + offset);
    for (size_t g = 0; g < group; ++g) {
      double max_qk = 0.0, max_v = 0.0;
      for (size_t t = first_visible_key(c.n_keys, c.window); t < c.n_keys; ++t) {
        double qk = 0.0;
        for (size_t d = 0; d < c.head_dim; ++d) {
          const size_t flat = t * row + h * c.head_dim + d;
          qk += std::fabs(static_cast<double>(q[offset + g * c.head_dim + d]) *
                          static_cast<double>(k_values[flat]));
          max_v = std::max(max_v, std::fabs(static_cast<double>(v_values[flat])));
        }
        max_qk = std::max(max_qk, qk);
      }
      const double score_error = 2.0 * rounding_gamma(static_cast<double>(c.head_dim) + 2.0) *
                                 static_cast<double>(params.scale) * max_qk;
      const double tolerance =
          attention_tolerance(c.n_keys, score_error, max_v) + kTinyAbsTolerance;
      for (size_t d = 0; d < c.head_dim; ++d) {
        const size_t i = offset + g * c.head_dim + d;
        note(result, float_diff(got[i], want[i]), tolerance,
             "head " + std::to_string(h * group + g) + " dim " + std::to_string(d));
      }
    }
  }
  return result;
}

}  // namespace synapse
