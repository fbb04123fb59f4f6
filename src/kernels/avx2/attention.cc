// SPDX-License-Identifier: Apache-2.0
// AVX2 attention over a paged KV cache (F32, F16, Q8_0 or Q4_0) with an online softmax: keys
// are visited in chunks of 32; for every head of the GQA group the chunk's scores are computed (the
// chunk's key rows stay in L1 across the group), the running maximum and sum are rescaled when the
// maximum grows, and the value rows are accumulated into the output row itself. No buffer grows
// with the context.
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
constexpr size_t kMaxDecodedDim = 512;  // the reference's limit too

// How a cache type's head rows are read. F32 and F16 rows are read in place (F16 converted as it
// is loaded, which costs nothing beside the FMA). The block types are decoded once per chunk into
// F32 scratch rows that every head of the GQA group then reads from L1 (decoding per head would
// repeat the unpacking n_group times); the decoding is exact (an F16 scale times an integer of
// at most 8 bits fits a float's mantissa), so they run the F32 arithmetic on the values the cache
// holds.
template <bool kF16>
struct FloatRows {
  static constexpr bool kInPlace = true;
  static constexpr bool kF16Loads = kF16;
  static size_t bytes(size_t elements) { return elements * (kF16 ? 2 : 4); }
  static void decode(const uint8_t*, float*, size_t) {}
};
template <class Block>
struct BlockRows {
  static constexpr bool kInPlace = false;
  static constexpr bool kF16Loads = false;
  static size_t bytes(size_t elements) { return elements / 32 * Block::kBytes; }
  static void decode(const uint8_t* row, float* out, size_t head_dim) {
    for (size_t b = 0; b < head_dim / 32; ++b) {
      const uint8_t* block = row + b * Block::kBytes;
      const __m256 d = _mm256_set1_ps(f16_to_f32(*reinterpret_cast<const uint16_t*>(block)));
      __m256 v[4];
      Block::load(block, v);
      for (int j = 0; j < 4; ++j) _mm256_storeu_ps(out + 32 * b + 8 * j, _mm256_mul_ps(v[j], d));
    }
  }
};
// A block's integers as four vectors of floats. Q8_0: 32 int8. Q4_0: 16 bytes of nibbles,
// element j low and j + 16 high, stored as q + 8.
struct Q8Block {
  static constexpr size_t kBytes = 34;
  static void load(const uint8_t* block, __m256 v[4]) {
    for (int j = 0; j < 4; ++j) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * j));
      v[j] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
    }
  }
};
struct Q4Block {
  static constexpr size_t kBytes = 18;
  static void load(const uint8_t* block, __m256 v[4]) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, mask), eight);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), eight);
    v[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    v[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    v[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    v[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
  }
};

template <bool kF16>
inline __m256 load_row8(const uint8_t* row, size_t d) {
  if constexpr (kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
  }
}

// The dot products of q with eight key rows, as one vector: a chain of FMAs per key, then the
// eight accumulators reduced by horizontal adds (pairs of keys, then pairs of pairs, then the two
// 128-bit halves). Named accumulators: as arrays they were spilled (705 µs per 4096-key query
// against 407 µs, kernels_bench Attend/F32).
template <bool kF16>
__m256 dot8(const float* q, const uint8_t* const* rows, size_t head_dim) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  const uint8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
  const uint8_t *r4 = rows[4], *r5 = rows[5], *r6 = rows[6], *r7 = rows[7];
  for (size_t d = 0; d < head_dim; d += 8) {
    const __m256 qd = _mm256_loadu_ps(q + d);
    a0 = _mm256_fmadd_ps(qd, load_row8<kF16>(r0, d), a0);
    a1 = _mm256_fmadd_ps(qd, load_row8<kF16>(r1, d), a1);
    a2 = _mm256_fmadd_ps(qd, load_row8<kF16>(r2, d), a2);
    a3 = _mm256_fmadd_ps(qd, load_row8<kF16>(r3, d), a3);
    a4 = _mm256_fmadd_ps(qd, load_row8<kF16>(r4, d), a4);
    a5 = _mm256_fmadd_ps(qd, load_row8<kF16>(r5, d), a5);
    a6 = _mm256_fmadd_ps(qd, load_row8<kF16>(r6, d), a6);
    a7 = _mm256_fmadd_ps(qd, load_row8<kF16>(r7, d), a7);
  }
  const __m256 t0 = _mm256_hadd_ps(a0, a1), t1 = _mm256_hadd_ps(a2, a3);
  const __m256 t2 = _mm256_hadd_ps(a4, a5), t3 = _mm256_hadd_ps(a6, a7);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  // u0 = [k0 k1 k2 k3 | k0 k1 k2 k3] (low and high halves' partial sums), u1 likewise for k4-k7.
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

template <class Rows>
void attend_typed(const float* q, size_t n_group, const KvPages& kv, size_t kv_head, size_t n_keys,
                  const AttentionParams& p, float* out) {
  const size_t head_dim = p.head_dim;
  const size_t token_bytes = Rows::bytes(row_elements(kv, p.n_kv_heads, head_dim));
  const size_t head_offset = Rows::bytes(kv_head * head_dim);
  float running_max[kMaxGroup], running_sum[kMaxGroup];
  for (size_t g = 0; g < n_group; ++g) {
    running_max[g] = -__builtin_inff();
    running_sum[g] = 0.0f;
    for (size_t d = 0; d < head_dim; ++d) out[g * head_dim + d] = 0.0f;
  }
  const uint8_t* k_rows[kChunk];
  const uint8_t* v_rows[kChunk];
  // The chunk's decoded K and V rows (block types only): kChunk rows of head_dim floats each.
  alignas(32) float decoded[Rows::kInPlace ? 1 : 2 * kChunk * kMaxDecodedDim];
  alignas(32) float scores[kChunk];
  constexpr bool kF16 = Rows::kF16Loads;
  for (size_t t0 = first_key(n_keys, p.window); t0 < n_keys; t0 += kChunk) {
    const size_t n = n_keys - t0 < kChunk ? n_keys - t0 : kChunk;
    for (size_t i = 0; i < n; ++i) {
      const size_t t = t0 + i;
      const size_t offset = (t % kv.page_tokens) * token_bytes + head_offset;
      k_rows[i] = kv.k_pages[t / kv.page_tokens] + offset;
      v_rows[i] = kv.v_pages[t / kv.page_tokens] + offset;
      if constexpr (!Rows::kInPlace) {
        float* k_out = decoded + i * head_dim;
        float* v_out = decoded + (kChunk + i) * head_dim;
        Rows::decode(k_rows[i], k_out, head_dim);
        Rows::decode(v_rows[i], v_out, head_dim);
        k_rows[i] = reinterpret_cast<const uint8_t*>(k_out);
        v_rows[i] = reinterpret_cast<const uint8_t*>(v_out);
      }
    }
    for (size_t g = 0; g < n_group; ++g) {
      const float* qg = q + g * head_dim;
      float* og = out + g * head_dim;
      float chunk_max = -__builtin_inff();
      size_t first_single = 0;
      if (p.softcap == 0.0f) {
        // Eight keys at a time: one FMA chain per key, the eight sums reduced together (an
        // horizontal sum per key cost a third of the kernel). The leftover keys go one by one.
        __m256 vmax = _mm256_set1_ps(-__builtin_inff());
        const __m256 vscale = _mm256_set1_ps(p.scale);
        for (; first_single + 8 <= n; first_single += 8) {
          _mm256_store_ps(scores + first_single,
                          _mm256_mul_ps(dot8<kF16>(qg, k_rows + first_single, head_dim), vscale));
          vmax = _mm256_max_ps(vmax, _mm256_load_ps(scores + first_single));
        }
        chunk_max = hmax(vmax);
      }
      for (size_t i = first_single; i < n; ++i) {
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
      // Four (then two, then one) 8-wide output slices at a time: independent FMA chains over
      // the chunk's keys (one chain per slice left the FMA latency exposed: 35% of the kernel's
      // samples). Named accumulators: an array of four was spilled and ran slower than one.
      // Each element still sums the keys in order, so the results do not change.
      size_t d = 0;
      for (; d + 32 <= head_dim; d += 32) {
        __m256 acc0 = _mm256_loadu_ps(og + d), acc1 = _mm256_loadu_ps(og + d + 8);
        __m256 acc2 = _mm256_loadu_ps(og + d + 16), acc3 = _mm256_loadu_ps(og + d + 24);
        for (i = 0; i < n; ++i) {
          const __m256 w = _mm256_set1_ps(scores[i]);
          const uint8_t* row = v_rows[i];
          acc0 = _mm256_fmadd_ps(w, load_row8<kF16>(row, d), acc0);
          acc1 = _mm256_fmadd_ps(w, load_row8<kF16>(row, d + 8), acc1);
          acc2 = _mm256_fmadd_ps(w, load_row8<kF16>(row, d + 16), acc2);
          acc3 = _mm256_fmadd_ps(w, load_row8<kF16>(row, d + 24), acc3);
        }
        _mm256_storeu_ps(og + d, acc0);
        _mm256_storeu_ps(og + d + 8, acc1);
        _mm256_storeu_ps(og + d + 16, acc2);
        _mm256_storeu_ps(og + d + 24, acc3);
      }
      for (; d + 16 <= head_dim; d += 16) {
        __m256 acc0 = _mm256_loadu_ps(og + d), acc1 = _mm256_loadu_ps(og + d + 8);
        for (i = 0; i < n; ++i) {
          const __m256 w = _mm256_set1_ps(scores[i]);
          acc0 = _mm256_fmadd_ps(w, load_row8<kF16>(v_rows[i], d), acc0);
          acc1 = _mm256_fmadd_ps(w, load_row8<kF16>(v_rows[i], d + 8), acc1);
        }
        _mm256_storeu_ps(og + d, acc0);
        _mm256_storeu_ps(og + d + 8, acc1);
      }
      for (; d < head_dim; d += 8) {
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
  const bool blocks = kv.type == TensorType::kQ8_0 || kv.type == TensorType::kQ4_0;
  if (p.head_dim % (blocks ? 32 : 8) != 0 || n_group > kMaxGroup ||
      (blocks && p.head_dim > kMaxDecodedDim)) {
    ref::attend(q, n_group, kv, kv_head, n_keys, p, out);  // shapes no model here uses
    return;
  }
  switch (kv.type) {
    case TensorType::kF16:
      return attend_typed<FloatRows<true>>(q, n_group, kv, kv_head, n_keys, p, out);
    case TensorType::kQ8_0:
      return attend_typed<BlockRows<Q8Block>>(q, n_group, kv, kv_head, n_keys, p, out);
    case TensorType::kQ4_0:
      return attend_typed<BlockRows<Q4Block>>(q, n_group, kv, kv_head, n_keys, p, out);
    default:
      return attend_typed<FloatRows<false>>(q, n_group, kv, kv_head, n_keys, p, out);
  }
}

}  // namespace

void fill_attention(KernelTable& table) { table.attend = attend; }

}  // namespace synapse::avx2
