// SPDX-License-Identifier: Apache-2.0
// AVX-512 VNNI dot products of the K-quants with Q8_K activations, for decode.
//
// A 256-element super-block is four "chunks" of 64 unsigned weight levels, each multiplied
// into exact int32 lanes by one vpdpbusd; every int32 lane then belongs to one sub-block, so the
// sub-block scales apply as one vpmulld per chunk (integers stay exact: at most
// 128 * 16002 * 4 < 2^23 per lane), and the super-block scale in float. The activations are
// prepared once per column (dot_prepare): their int8 values in the order the weight unpacking
// produces (natural for Q2_K/Q3_K/Q6_K; for Q4_K/Q5_K each chunk pairs the two sub-blocks that
// share a byte of quants), per-lane corrections -offset * sum(x) for the types whose levels are
// offset (Q3_K: 4, Q6_K: 32), per-sub-block sums for the mins, and the scale as a float.
#include <cstring>

#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 256;
constexpr size_t kQ8KBytes = 292;  // float d, 256 int8, 16 int16 bsums
constexpr size_t kMaxColumns = 4;

// Prepared super-block: x (256), then corrections (4 x 64, offset types only), then the
// sub-block sums for the mins (64), then d (64 with padding).
template <typename W>
struct Layout {
  static constexpr size_t kCorr = 256;
  static constexpr size_t kSums = kCorr + (W::kOffset != 0 ? 256 : 0);
  static constexpr size_t kScale = kSums + 64;
  static constexpr size_t kBytes = kScale + 64;
};

// Chunk j, lane l (4 bytes): the sub-block of 16 its elements belong to, for the natural order.
inline __m512i natural_lane_subblock(size_t j) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm512_add_epi32(_mm512_srli_epi32(lane, 2), _mm512_set1_epi32(static_cast<int>(4 * j)));
}

// Q4_K/Q5_K chunk j holds sub-blocks (of 32) a and b = a + 2 in lanes 0-7 and 8-15.
inline __m512i k4_lane_subblock(size_t j) {
  static constexpr int kFirst[4] = {0, 1, 4, 5};
  const __m512i half = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
  return _mm512_add_epi32(half, _mm512_set1_epi32(kFirst[j]));
}

// Q4_K/Q5_K: where element e goes, and the 6-bit scales and mins as 16 int32 lanes
// [scale 0..7, min 0..7].
inline size_t k4_position(size_t e) {
  const size_t group = e / 64, upper = (e % 64) / 32, l = e % 32;  // qs[32 group + l] nibble upper
  const size_t chunk = 2 * (group / 2) + upper;
  return 64 * chunk + 32 * (group % 2) + l;
}
inline __m512i k4_scales_mins(const uint8_t* s) {
  const uint32_t u0 = load_u32(s), u1 = load_u32(s + 4), u2 = load_u32(s + 8);
  const uint32_t scale_lo = u0 & 0x3F3F3F3Fu;
  const uint32_t min_lo = u1 & 0x3F3F3F3Fu;
  const uint32_t scale_hi = (u2 & 0x0F0F0F0Fu) | ((u0 >> 2) & 0x30303030u);
  const uint32_t min_hi = ((u2 >> 4) & 0x0F0F0F0Fu) | ((u1 >> 2) & 0x30303030u);
  const __m128i bytes = _mm_setr_epi32(static_cast<int>(scale_lo), static_cast<int>(scale_hi),
                                       static_cast<int>(min_lo), static_cast<int>(min_hi));
  return _mm512_cvtepu8_epi32(bytes);
}

// The low and high nibbles of 128 bytes of Q4_K/Q5_K quants as the four chunks.
inline void k4_nibble_chunks(const uint8_t* qs, __m512i (&levels)[4]) {
  const __m512i mask = _mm512_set1_epi8(0x0F);
  const __m512i a = _mm512_loadu_si512(qs), c = _mm512_loadu_si512(qs + 64);
  levels[0] = _mm512_and_si512(a, mask);
  levels[1] = _mm512_and_si512(_mm512_srli_epi16(a, 4), mask);
  levels[2] = _mm512_and_si512(c, mask);
  levels[3] = _mm512_and_si512(_mm512_srli_epi16(c, 4), mask);
}

struct Q4K {
  static constexpr size_t kBytes = 144;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kMinPer32 = true;
  static size_t position(size_t e) { return k4_position(e); }
  static __m512i lane_subblock(size_t j) { return k4_lane_subblock(j); }
  static void unpack(const uint8_t* b, __m512i (&levels)[4], __m512i& scales, float& d,
                     float& dmin) {
    k4_nibble_chunks(b + 16, levels);
    scales = k4_scales_mins(b + 4);
    d = f16_to_f32(load_u16(b));
    dmin = f16_to_f32(load_u16(b + 2));
  }
};

struct Q5K {
  static constexpr size_t kBytes = 176;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kMinPer32 = true;
  static size_t position(size_t e) { return k4_position(e); }
  static __m512i lane_subblock(size_t j) { return k4_lane_subblock(j); }
  static void unpack(const uint8_t* b, __m512i (&levels)[4], __m512i& scales, float& d,
                     float& dmin) {
    k4_nibble_chunks(b + 48, levels);
    scales = k4_scales_mins(b + 4);
    d = f16_to_f32(load_u16(b));
    dmin = f16_to_f32(load_u16(b + 2));
    // Fifth bit of element 32 s + l is bit s of qh[l]; chunk j holds sub-blocks a, a + 2.
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(qh), qh, 1);
    static constexpr int kFirst[4] = {0, 1, 4, 5};
    const __m512i sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) {
      const __m512i bits =
          _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << kFirst[j])),
                             _mm256_set1_epi8(static_cast<char>(1 << (kFirst[j] + 2))), 1);
      levels[j] =
          _mm512_mask_add_epi8(levels[j], _mm512_test_epi8_mask(both, bits), levels[j], sixteen);
    }
  }
};

// The two-bit planes of Q2_K/Q3_K: chunk j = 2 h + odd holds bit pairs 2 odd and 2 odd + 1
// of qs[32 h .. 32 h + 31] (natural element order).
inline void two_bit_chunks(const uint8_t* qs, __m512i (&levels)[4]) {
  const __m512i three = _mm512_set1_epi8(3);
#pragma GCC unroll 2
  for (size_t h = 0; h < 2; ++h) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
    const __m512i pairs01 =
        _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 2), 1);
    levels[2 * h] = _mm512_and_si512(pairs01, three);
    levels[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(pairs01, 4), three);
  }
}

struct Q2K {
  static constexpr size_t kBytes = 84;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kMinPer32 = false;
  static size_t position(size_t e) { return e; }
  static __m512i lane_subblock(size_t j) { return natural_lane_subblock(j); }
  static void unpack(const uint8_t* b, __m512i (&levels)[4], __m512i& scales, __m512i& mins,
                     float& d, float& dmin) {
    two_bit_chunks(b + 16, levels);
    const __m512i packed =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    scales = _mm512_and_si512(packed, _mm512_set1_epi32(0x0F));
    mins = _mm512_srli_epi32(packed, 4);
    d = f16_to_f32(load_u16(b + 80));
    dmin = f16_to_f32(load_u16(b + 82));
  }
};

struct Q3K {
  static constexpr size_t kBytes = 110;
  static constexpr int kOffset = 4;
  static constexpr bool kHasMin = false;
  static constexpr bool kMinPer32 = false;
  static size_t position(size_t e) { return e; }
  static __m512i lane_subblock(size_t j) { return natural_lane_subblock(j); }
  static void unpack(const uint8_t* b, __m512i (&levels)[4], __m512i& scales, __m512i& /*mins*/,
                     float& d, float& /*dmin*/) {
    two_bit_chunks(b + 32, levels);
    // Third bit of element e = 128 h + 32 p + l is bit 4 h + p of hmask[l].
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(hm), hm, 1);
    const __m512i four = _mm512_set1_epi8(4);
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) {
      const int bit = 2 * static_cast<int>(j);  // chunk j: p = 2 (j % 2), 2 (j % 2) + 1; h = j / 2
      const __m512i bits =
          _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << bit)),
                             _mm256_set1_epi8(static_cast<char>(1 << (bit + 1))), 1);
      levels[j] =
          _mm512_mask_add_epi8(levels[j], _mm512_test_epi8_mask(both, bits), levels[j], four);
    }
    // Sixteen 6-bit scales: low nibbles in bytes 0-7 (two per byte), high bit pairs in 8-11.
    const uint8_t* s = b + 96;
    const uint32_t a0 = load_u32(s), a1 = load_u32(s + 4), tmp = load_u32(s + 8);
    const uint32_t s0 = (a0 & 0x0F0F0F0Fu) | ((tmp & 0x03030303u) << 4);
    const uint32_t s1 = (a1 & 0x0F0F0F0Fu) | (((tmp >> 2) & 0x03030303u) << 4);
    const uint32_t s2 = ((a0 >> 4) & 0x0F0F0F0Fu) | (((tmp >> 4) & 0x03030303u) << 4);
    const uint32_t s3 = ((a1 >> 4) & 0x0F0F0F0Fu) | (((tmp >> 6) & 0x03030303u) << 4);
    const __m128i bytes = _mm_setr_epi32(static_cast<int>(s0), static_cast<int>(s1),
                                         static_cast<int>(s2), static_cast<int>(s3));
    scales = _mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), _mm512_set1_epi32(32));
    d = f16_to_f32(load_u16(b + 108));
  }
};

struct Q6K {
  static constexpr size_t kBytes = 210;
  static constexpr int kOffset = 32;
  static constexpr bool kHasMin = false;
  static constexpr bool kMinPer32 = false;
  static size_t position(size_t e) { return e; }
  static __m512i lane_subblock(size_t j) { return natural_lane_subblock(j); }
  static void unpack(const uint8_t* b, __m512i (&levels)[4], __m512i& scales, __m512i& /*mins*/,
                     float& d, float& /*dmin*/) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3);
#pragma GCC unroll 2
    for (size_t h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(b + 64 * h);
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
      const __m512i qh01 =
          _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
      const __m512i high0 = _mm512_slli_epi16(_mm512_and_si512(qh01, two), 4);
      const __m512i high1 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh01, 4), two), 4);
      levels[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, low4), high0);
      levels[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), high1);
    }
    scales = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));
    d = f16_to_f32(load_u16(b + 208));
  }
};

// Q4_K/Q5_K adapters to the common unpack signature (mins ride in the upper scale lanes).
template <typename K4>
struct K4Adapter : K4 {
  static void unpack(const uint8_t* b, __m512i (&levels)[4], __m512i& scales, __m512i& mins,
                     float& d, float& dmin) {
    K4::unpack(b, levels, scales, d, dmin);
    mins = scales;  // lanes 8-15: mins of the eight 32-element sub-blocks
  }
};

template <typename W>
size_t prepared_bytes(size_t k) {
  return k / kQK * Layout<W>::kBytes;
}

template <typename W>
void prepare(const uint8_t* x, size_t k, uint8_t* out) {
  using L = Layout<W>;
  std::memset(out, 0, prepared_bytes<W>(k));
  for (size_t b = 0; b < k / kQK; ++b) {
    const uint8_t* block = x + b * kQ8KBytes;
    const auto* q = reinterpret_cast<const int8_t*>(block + 4);
    uint8_t* dst = out + b * L::kBytes;
    auto* xq = reinterpret_cast<int8_t*>(dst);
    for (size_t e = 0; e < kQK; ++e) xq[W::position(e)] = q[e];
    if constexpr (W::kOffset != 0) {
      auto* corr = reinterpret_cast<int32_t*>(dst + L::kCorr);
      for (size_t lane = 0; lane < 64; ++lane) {
        int32_t sum = 0;
        for (size_t i = 0; i < 4; ++i) sum += xq[4 * lane + i];
        corr[lane] = -W::kOffset * sum;
      }
    }
    auto* sums = reinterpret_cast<int32_t*>(dst + L::kSums);
    for (size_t e = 0; e < kQK; ++e) {
      if (W::kMinPer32) {
        sums[8 + e / 32] += q[e];  // lanes 8-15 meet the mins in the upper scale lanes
      } else {
        sums[e / 16] += q[e];
      }
    }
    std::memcpy(dst + L::kScale, block, sizeof(float));
  }
}

template <typename W, size_t C>
void row_kernel(const uint8_t* w, size_t n_blocks, const uint8_t* x, size_t x_stride, float* y,
                size_t y_stride) {
  using L = Layout<W>;
  __m512 acc[C], acc_min[C];
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c) acc[c] = acc_min[c] = _mm512_setzero_ps();
  const __m512i sub[4] = {W::lane_subblock(0), W::lane_subblock(1), W::lane_subblock(2),
                          W::lane_subblock(3)};
  for (size_t b = 0; b < n_blocks; ++b) {
    __m512i levels[4], scales, mins = _mm512_setzero_si512();
    float d = 0.0f, dmin = 0.0f;
    W::unpack(w + b * W::kBytes, levels, scales, mins, d, dmin);
    __m512i lane_scale[4];
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) lane_scale[j] = _mm512_permutexvar_epi32(sub[j], scales);
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      const uint8_t* xb = x + c * x_stride + b * L::kBytes;
      __m512i total = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (size_t j = 0; j < 4; ++j) {
        const __m512i start =
            W::kOffset != 0 ? _mm512_load_si512(xb + L::kCorr + 64 * j) : _mm512_setzero_si512();
        const __m512i dot = _mm512_dpbusd_epi32(start, levels[j], _mm512_load_si512(xb + 64 * j));
        total = _mm512_add_epi32(total, _mm512_mullo_epi32(dot, lane_scale[j]));
      }
      float dx;
      std::memcpy(&dx, xb + L::kScale, sizeof(dx));
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_set1_ps(d * dx), acc[c]);
      if constexpr (W::kHasMin) {
        const __m512i sums = _mm512_load_si512(xb + L::kSums);
        const __m512i lanes = W::kMinPer32 ? _mm512_maskz_mullo_epi32(0xFF00, mins, sums)
                                           : _mm512_mullo_epi32(mins, sums);
        acc_min[c] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(lanes), _mm512_set1_ps(dmin * dx), acc_min[c]);
      }
    }
  }
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c) {
    y[c * y_stride] = _mm512_reduce_add_ps(_mm512_sub_ps(acc[c], acc_min[c]));
  }
}

template <typename W>
void dot(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  for_column_blocks<kMaxColumns>(t.n_cols, [&]<size_t C>(size_t c) {
    for (size_t r = 0; r < t.n_rows; ++r) {
      row_kernel<W, C>(t.w + r * t.w_stride, n_blocks, t.x + c * t.x_stride, t.x_stride,
                       t.y + c * t.y_stride + r, t.y_stride);
    }
  });
}

template <typename W>
void set(KernelTable& table, TensorType type) {
  WeightKernels& k = table.weights[static_cast<uint32_t>(type)];
  k.dot = dot<W>;
  k.dot_prepare = prepare<W>;
  k.dot_prepared_bytes = prepared_bytes<W>;
}

}  // namespace

void fill_k_dots_vnni(KernelTable& table) {
  set<Q2K>(table, TensorType::kQ2_K);
  set<Q3K>(table, TensorType::kQ3_K);
  set<K4Adapter<Q4K>>(table, TensorType::kQ4_K);
  set<K4Adapter<Q5K>>(table, TensorType::kQ5_K);
  set<Q6K>(table, TensorType::kQ6_K);
}

}  // namespace synapse::avx512
