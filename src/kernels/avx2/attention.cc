// SPDX-License-Identifier: Apache-2.0
// AVX2 attention over a paged KV cache with an online softmax: keys are visited in chunks of
// 32; for every head of the GQA group the chunk's scores are computed (the chunk's key rows stay
// in L1 across the group), the running maximum and sum are rescaled when the maximum grows, and
// the value rows are accumulated into the output row itself. No buffer grows with the context.
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/simd_avx2.h"
#include "kernels/ref/ref_kernels.h"

namespace synapse::avx2 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kChunk = 32;

// kernel_table.h's first_visible_key and kv_row_elements, restated with internal linkage: an
// inline function of a shared header must not be compiled here (kernels/README.md).
size_t first_key(size_t n_keys, size_t window) {
  return window > 0 && n_keys > window ? n_keys - window : 0;
}
size_t row_elements(const KvPages& kv, size_t n_kv_heads, size_t head_dim) {
  return kv.row_elements != 0 ? kv.row_elements : n_kv_heads * head_dim;
}
constexpr size_t kMaxGroup = 64;

template <bool kF16>
inline __m256 load_row8(const uint8_t* row, size_t d) {
  if constexpr (kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
  }
}

template <bool kF16>
void attend_typed(const float* q, size_t n_group, const KvPages& kv, size_t kv_head, size_t n_keys,
                  const AttentionParams& p, float* out) {
  const size_t head_dim = p.head_dim;
  const size_t element = kF16 ? 2 : 4;
  const size_t token_bytes = row_elements(kv, p.n_kv_heads, head_dim) * element;
  const size_t head_offset = kv_head * head_dim * element;
  float running_max[kMaxGroup], running_sum[kMaxGroup];
  for (size_t g = 0; g < n_group; ++g) {
    running_max[g] = -__builtin_inff();
    running_sum[g] = 0.0f;
    for (size_t d = 0; d < head_dim; ++d) out[g * head_dim + d] = 0.0f;
  }
  const uint8_t* k_rows[kChunk];
  const uint8_t* v_rows[kChunk];
  alignas(32) float scores[kChunk];
  for (size_t t0 = first_key(n_keys, p.window); t0 < n_keys; t0 += kChunk) {
    const size_t n = n_keys - t0 < kChunk ? n_keys - t0 : kChunk;
    for (size_t i = 0; i < n; ++i) {
      const size_t t = t0 + i;
      const size_t offset = (t % kv.page_tokens) * token_bytes + head_offset;
      k_rows[i] = kv.k_pages[t / kv.page_tokens] + offset;
      v_rows[i] = kv.v_pages[t / kv.page_tokens] + offset;
    }
    for (size_t g = 0; g < n_group; ++g) {
      const float* qg = q + g * head_dim;
      float* og = out + g * head_dim;
      float chunk_max = -__builtin_inff();
      for (size_t i = 0; i < n; ++i) {
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        size_t d = 0;
        for (; d + 16 <= head_dim; d += 16) {
          acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(qg + d), load_row8<kF16>(k_rows[i], d), acc0);
          acc1 =
              _mm256_fmadd_ps(_mm256_loadu_ps(qg + d + 8), load_row8<kF16>(k_rows[i], d + 8), acc1);
        }
        for (; d < head_dim; d += 8) {
          acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(qg + d), load_row8<kF16>(k_rows[i], d), acc0);
        }
        float s = hsum(_mm256_add_ps(acc0, acc1)) * p.scale;
        if (p.softcap > 0.0f) s = p.softcap * scalar_tanh(s / p.softcap);
        scores[i] = s;
        chunk_max = s > chunk_max ? s : chunk_max;
      }
      if (chunk_max > running_max[g]) {
        const float rescale = scalar_exp(running_max[g] - chunk_max);  // 0 on the first chunk
        running_sum[g] *= rescale;
        const __m256 vr = _mm256_set1_ps(rescale);
        for (size_t d = 0; d < head_dim; d += 8) {
          _mm256_storeu_ps(og + d, _mm256_mul_ps(_mm256_loadu_ps(og + d), vr));
        }
        running_max[g] = chunk_max;
      }
      const __m256 vm = _mm256_set1_ps(running_max[g]);
      size_t i = 0;
      for (; i + 8 <= n; i += 8) {
        _mm256_store_ps(scores + i, exp_ps(_mm256_sub_ps(_mm256_load_ps(scores + i), vm)));
      }
      for (; i < n; ++i) scores[i] = scalar_exp(scores[i] - running_max[g]);
      float sum = 0.0f;
      for (i = 0; i < n; ++i) sum += scores[i];
      running_sum[g] += sum;
      for (size_t d = 0; d < head_dim; d += 8) {
        __m256 acc = _mm256_loadu_ps(og + d);
        for (i = 0; i < n; ++i) {
          acc = _mm256_fmadd_ps(_mm256_set1_ps(scores[i]), load_row8<kF16>(v_rows[i], d), acc);
        }
        _mm256_storeu_ps(og + d, acc);
      }
    }
  }
  for (size_t g = 0; g < n_group; ++g) {
    if (running_sum[g] == 0.0f) continue;  // no keys: zeros, like the reference
    const __m256 inv = _mm256_set1_ps(1.0f / running_sum[g]);
    float* og = out + g * head_dim;
    for (size_t d = 0; d < head_dim; d += 8) {
      _mm256_storeu_ps(og + d, _mm256_mul_ps(_mm256_loadu_ps(og + d), inv));
    }
  }
}

void attend(const float* q, size_t n_group, const KvPages& kv, size_t kv_head, size_t n_keys,
            const AttentionParams& p, float* out) {
  // The driver (kernels/attention.cc) checks n_keys <= kv.n_tokens; no SYN_CHECK here, whose
  // string_view argument would instantiate inline library code with ISA flags.
  if (p.head_dim % 8 != 0 || n_group > kMaxGroup) {
    ref::attend(q, n_group, kv, kv_head, n_keys, p, out);  // shapes no model here uses
    return;
  }
  if (kv.type == TensorType::kF16) {
    attend_typed<true>(q, n_group, kv, kv_head, n_keys, p, out);
  } else {
    attend_typed<false>(q, n_group, kv, kv_head, n_keys, p, out);
  }
}

}  // namespace

void fill_attention(KernelTable& table) { table.attend = attend; }

}  // namespace synapse::avx2
