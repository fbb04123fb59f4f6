// SPDX-License-Identifier: Apache-2.0
// AVX2 element-wise and row operations: exp-based activations through simd::exp_ps, softmax,
// RMSNorm (squares accumulated in double like the reference), the exact add/mul/scale, and the
// memory-read probe. Soft-capping uses libm's tanh per element: rare, and exact that way.
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/simd_avx2.h"

namespace synapse::avx2 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

inline __m256 sigmoid_times(__m256 x, __m256 v) {  // v / (1 + exp(-x))
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

float sigmoid_times_1(float x, float v) { return v / (1.0f + scalar_exp(-x)); }

void exp(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_ps(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = scalar_exp(x[i]);
}

void silu(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, sigmoid_times(v, v));
  }
  for (; i < n; ++i) y[i] = sigmoid_times_1(x[i], x[i]);
}

void swiglu(const float* gate, const float* up, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(sigmoid_times(g, g), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) y[i] = sigmoid_times_1(gate[i], gate[i]) * up[i];
}

// x * sigmoid(2z), z = sqrt(2/pi) (x + 0.044715 x^3), with 2z computed by the reference's
// operations in the reference's order (no FMA), so only the exp differs.
void gelu_tanh(const float* x, float* y, size_t n) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057307f;
  constexpr float kCoefficient = 0.044715f;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 cube_part = _mm256_add_ps(
        _mm256_set1_ps(1.0f), _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(kCoefficient), v), v));
    const __m256 two_z =
        _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(kTwoSqrt2OverPi), v), cube_part);
    _mm256_storeu_ps(y + i, sigmoid_times(two_z, v));
  }
  for (; i < n; ++i) {
    const float v = x[i];
    y[i] = sigmoid_times_1(kTwoSqrt2OverPi * v * (1.0f + kCoefficient * v * v), v);
  }
}

void softmax(float* x, size_t n, const SoftmaxParams& p) {
  __m256 vmax = _mm256_set1_ps(-__builtin_inff());
  float max = -__builtin_inff();
  size_t i = 0;
  if (p.softcap > 0.0f) {
    for (; i < n; ++i) {
      float s = p.softcap * scalar_tanh(x[i] * p.scale / p.softcap);
      if (p.mask != nullptr) s += p.mask[i];
      x[i] = s;
      max = s > max ? s : max;
    }
  } else {
    const __m256 scale = _mm256_set1_ps(p.scale);
    for (; i + 8 <= n; i += 8) {
      __m256 s = _mm256_mul_ps(_mm256_loadu_ps(x + i), scale);
      if (p.mask != nullptr) s = _mm256_add_ps(s, _mm256_loadu_ps(p.mask + i));
      _mm256_storeu_ps(x + i, s);
      vmax = _mm256_max_ps(vmax, s);
    }
    for (; i < n; ++i) {
      float s = x[i] * p.scale;
      if (p.mask != nullptr) s += p.mask[i];
      x[i] = s;
      max = s > max ? s : max;
    }
    const float m = hmax(vmax);
    max = m > max ? m : max;
  }
  if (max == -__builtin_inff()) {
    for (i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  const __m256 vm = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  float sum = 0.0f;
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  for (; i < n; ++i) {
    x[i] = scalar_exp(x[i] - max);
    sum += x[i];
  }
  sum += hsum(vsum);
  const float inv = 1.0f / sum;
  const __m256 vinv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void rms_norm(const float* x, const float* weight, size_t n, float eps, float* y) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    acc0 = _mm256_fmadd_pd(lo, lo, acc0);
    acc1 = _mm256_fmadd_pd(hi, hi, acc1);
  }
  alignas(32) double parts[4];
  _mm256_store_pd(parts, _mm256_add_pd(acc0, acc1));
  double sum = (parts[0] + parts[1]) + (parts[2] + parts[3]);
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  const auto scale = static_cast<float>(
      1.0 / scalar_sqrt(sum / static_cast<double>(n) + static_cast<double>(eps)));
  const __m256 vs = _mm256_set1_ps(scale);
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
    if (weight != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(weight + i));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; ++i) y[i] = weight != nullptr ? x[i] * scale * weight[i] : x[i] * scale;
}

void add(const float* a, const float* b, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; ++i) y[i] = a[i] * b[i];
}

void scale(const float* x, float s, float* y, size_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
  for (; i < n; ++i) y[i] = x[i] * s;
}

// 64-bit lane sums of 256-byte steps, the two halves of the buffer read side by side and each
// prefetched 2 KiB ahead: the access pattern the decode kernels use, so the yardstick they are
// measured against is the best this core reaches, not a single stream's lower figure.
uint64_t read_bytes(const uint8_t* p, size_t n) {
  constexpr size_t kStep = 256, kPrefetch = 2048;
  const size_t half = n / 2 / kStep * kStep;
  const uint8_t* streams[2] = {p, p + half};
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  for (size_t i = 0; i < half; i += kStep) {
    for (int s = 0; s < 2; ++s) {
      const uint8_t* q = streams[s] + i;
      for (size_t line = 0; line < kStep; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetch + line), _MM_HINT_T0);
      }
      for (int j = 0; j < 8; ++j) {
        acc[j % 4] = _mm256_add_epi64(
            acc[j % 4], _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * j)));
      }
    }
  }
  const __m256i total =
      _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), total);
  uint64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  // What the two streams left (less than two steps), word by word.
  size_t i = 2 * half;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, sizeof(word));
    sum += word;
  }
  return sum;
}

}  // namespace

void fill_ops(KernelTable& table) {
  table.exp = exp;
  table.silu = silu;
  table.swiglu = swiglu;
  table.gelu_tanh = gelu_tanh;
  table.softmax = softmax;
  table.rms_norm = rms_norm;
  table.add = add;
  table.mul = mul;
  table.scale = scale;
  table.read_bytes = read_bytes;
}

}  // namespace synapse::avx2
