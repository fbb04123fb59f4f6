// SPDX-License-Identifier: Apache-2.0
// Reference attention over a paged KV cache: two passes over the keys (the maximum score, then
// the exponentials and the weighted sum of values), scores recomputed instead of stored, so no
// buffer grows with the context. Sums accumulate in double.
#include <cmath>

#include "base/check.h"
#include "kernels/ref/ref_kernels.h"
#include "tensor/half.h"
#include "tensor/quant_legacy.h"

namespace synapse::ref {
namespace {

constexpr size_t kMaxHeadDim = 512;

// Element d of head `head` of token t. A quantized cache holds each token's row as 32-element
// blocks (heads are whole blocks: the plan requires head_dim % 32 == 0), so element `index` of
// the page is element index % 32 of block index / 32. The products are exact in float: an F16
// scale times an integer of at most 8 bits.
float kv_element(const KvPages& kv, const uint8_t* const* pages, size_t t, size_t head,
                 size_t head_dim, size_t n_kv_heads, size_t d) {
  const uint8_t* page = pages[t / kv.page_tokens];
  const size_t index =
      (t % kv.page_tokens) * kv_row_elements(kv, n_kv_heads, head_dim) + head * head_dim + d;
  const size_t j = index % kQuantBlockElements;
  switch (kv.type) {
    case TensorType::kF16:
      return f16_to_f32(reinterpret_cast<const uint16_t*>(page)[index]);
    case TensorType::kQ8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(page) + index / kQuantBlockElements;
      return f16_to_f32(b->d) * static_cast<float>(b->qs[j]);
    }
    case TensorType::kQ4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(page) + index / kQuantBlockElements;
      const int nibble = j < 16 ? b->qs[j] & 0x0F : b->qs[j - 16] >> 4;
      return f16_to_f32(b->d) * static_cast<float>(nibble - 8);
    }
    default:
      return reinterpret_cast<const float*>(page)[index];
  }
}

float score(const float* q, const KvPages& kv, size_t t, size_t kv_head, const AttentionParams& p) {
  double dot = 0.0;
  for (size_t d = 0; d < p.head_dim; ++d) {
    dot += static_cast<double>(q[d]) *
           static_cast<double>(kv_element(kv, kv.k_pages, t, kv_head, p.head_dim, p.n_kv_heads, d));
  }
  double s = dot * static_cast<double>(p.scale);
  if (p.softcap > 0.0f) {
    s = static_cast<double>(p.softcap) * std::tanh(s / static_cast<double>(p.softcap));
  }
  return static_cast<float>(s);
}

}  // namespace

void attend(const float* q, size_t n_group, const KvPages& kv, size_t kv_head, size_t n_keys,
            const AttentionParams& p, float* out) {
  SYN_CHECK(p.head_dim <= kMaxHeadDim, "attention: head_dim too large");
  SYN_CHECK(n_keys <= kv.n_tokens, "attention: more keys than tokens in the cache");
  for (size_t g = 0; g < n_group; ++g) {
    const float* qg = q + g * p.head_dim;
    float* og = out + g * p.head_dim;
    const size_t first = first_visible_key(n_keys, p.window);
    if (n_keys == 0) {
      for (size_t d = 0; d < p.head_dim; ++d) og[d] = 0.0f;
      continue;
    }
    float max = -INFINITY;
    for (size_t t = first; t < n_keys; ++t) {
      const float s = score(qg, kv, t, kv_head, p);
      if (s > max) max = s;
    }
    double acc[kMaxHeadDim] = {};
    double sum = 0.0;
    for (size_t t = first; t < n_keys; ++t) {
      const double e = std::exp(static_cast<double>(score(qg, kv, t, kv_head, p) - max));
      sum += e;
      for (size_t d = 0; d < p.head_dim; ++d) {
        acc[d] += e * static_cast<double>(
                          kv_element(kv, kv.v_pages, t, kv_head, p.head_dim, p.n_kv_heads, d));
      }
    }
    for (size_t d = 0; d < p.head_dim; ++d) og[d] = static_cast<float>(acc[d] / sum);
  }
}

}  // namespace synapse::ref
