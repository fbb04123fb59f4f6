// SPDX-License-Identifier: Apache-2.0
// AVX-512 VNNI matrix-matrix products of quantized weights with many activation columns
// (prefill), one generic kernel for every quantized type.
//
// A task takes 64 weight rows and repacks them, 16 rows at a time, into the layout of a
// register-blocked outer product: for each sub-block of 16 or 32 elements, groups of 4 elements
// of all 16 rows side by side (one zmm per group: 16 rows x 4 unsigned levels), followed by the
// 16 rows' effective sub-block scales (d, or d * scale for the K-quants) and mins. The kernel
// then computes 16 rows x 8 columns at once: each vpdpbusd multiplies one group of the 16 rows
// by 4 activations of one column broadcast from memory, so a packed group is loaded once per 8
// columns and an activation word once per 16 rows. Sub-block sums are exact int32; they are
// scaled in float per sub-block, and by the activation scale per activation block.
// The activations are prepared once per column: int8 values in natural order, per sub-block
// corrections -offset * sum(x) (the integer start of each vpdpbusd chain), sums of x for the
// mins, and the activation block scales as floats.
#include <cstring>

#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kRows = 16;       // rows per packed sub-tile (zmm lanes)
constexpr size_t kSubTiles = 4;    // sub-tiles per task
constexpr size_t kColumns = 8;     // columns per register block
constexpr size_t kQ8Bytes = 34;    // BlockQ8_0
constexpr size_t kQ8KBytes = 292;  // BlockQ8_K

// Unpacking one activation-block-sized unit of one weight row into unsigned levels (natural
// element order), per-sub-block scales and (for kHasMin) mins such that
//   w = scale * (level - kOffset) + min.
struct Q8_0 {
  static constexpr size_t kUnit = 32, kSub = 32, kBytes = 34;
  static constexpr int kOffset = 128;
  static constexpr bool kHasMin = false;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* /*min*/) {
    for (size_t i = 0; i < 32; i += 4) {
      const uint32_t w = load_u32(b + 2 + i) ^ 0x80808080u;
      std::memcpy(levels + i, &w, 4);
    }
    scale[0] = f16_to_f32(load_u16(b));
  }
};

inline void nibbles_32(const uint8_t* qs, uint8_t* levels) {
  for (size_t i = 0; i < 16; i += 4) {
    const uint32_t w = load_u32(qs + i);
    const uint32_t lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
    std::memcpy(levels + i, &lo, 4);
    std::memcpy(levels + 16 + i, &hi, 4);
  }
}

// Four bits to four bytes holding 0x10 where the bit is set.
inline uint32_t fifth_bit_bytes(uint32_t nibble) {
  return ((nibble & 1u) << 4) | ((nibble & 2u) << 11) | ((nibble & 4u) << 18) |
         ((nibble & 8u) << 25);
}

inline void add_fifth_bits(uint32_t qh, uint8_t* levels) {
  for (size_t i = 0; i < 32; i += 4) {
    uint32_t w = load_u32(levels + i) | fifth_bit_bytes((qh >> i) & 0xFu);
    std::memcpy(levels + i, &w, 4);
  }
}

struct Q4_0 {
  static constexpr size_t kUnit = 32, kSub = 32, kBytes = 18;
  static constexpr int kOffset = 8;
  static constexpr bool kHasMin = false;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* /*min*/) {
    nibbles_32(b + 2, levels);
    scale[0] = f16_to_f32(load_u16(b));
  }
};
struct Q4_1 {
  static constexpr size_t kUnit = 32, kSub = 32, kBytes = 20;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* min) {
    nibbles_32(b + 4, levels);
    scale[0] = f16_to_f32(load_u16(b));
    min[0] = f16_to_f32(load_u16(b + 2));
  }
};
struct Q5_0 {
  static constexpr size_t kUnit = 32, kSub = 32, kBytes = 22;
  static constexpr int kOffset = 16;
  static constexpr bool kHasMin = false;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* /*min*/) {
    nibbles_32(b + 6, levels);
    add_fifth_bits(load_u32(b + 2), levels);
    scale[0] = f16_to_f32(load_u16(b));
  }
};
struct Q5_1 {
  static constexpr size_t kUnit = 32, kSub = 32, kBytes = 24;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* min) {
    nibbles_32(b + 8, levels);
    add_fifth_bits(load_u32(b + 4), levels);
    scale[0] = f16_to_f32(load_u16(b));
    min[0] = f16_to_f32(load_u16(b + 2));
  }
};

// Bit pair p of qs[32 h + l] is element 128 h + 32 p + l (Q2_K, Q3_K).
inline void two_bit_levels(const uint8_t* qs, uint8_t* levels) {
  for (size_t h = 0; h < 2; ++h) {
    for (size_t l = 0; l < 32; l += 4) {
      const uint32_t w = load_u32(qs + 32 * h + l);
      for (uint32_t p = 0; p < 4; ++p) {
        const uint32_t v = (w >> (2 * p)) & 0x03030303u;
        std::memcpy(levels + 128 * h + 32 * p + l, &v, 4);
      }
    }
  }
}

struct Q2K {
  static constexpr size_t kUnit = 256, kSub = 16, kBytes = 84;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* min) {
    two_bit_levels(b + 16, levels);
    const float d = f16_to_f32(load_u16(b + 80)), dmin = f16_to_f32(load_u16(b + 82));
    for (size_t s = 0; s < 16; ++s) {
      scale[s] = d * static_cast<float>(b[s] & 0x0F);
      min[s] = -(dmin * static_cast<float>(b[s] >> 4));
    }
  }
};

struct Q3K {
  static constexpr size_t kUnit = 256, kSub = 16, kBytes = 110;
  static constexpr int kOffset = 4;
  static constexpr bool kHasMin = false;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* /*min*/) {
    two_bit_levels(b + 32, levels);
    for (size_t l = 0; l < 32; l += 4) {  // third bit of element e: bit e / 32 of hmask[e % 32]
      const uint32_t hm = load_u32(b + l);
      for (uint32_t bit = 0; bit < 8; ++bit) {
        uint32_t v = load_u32(levels + 32 * bit + l) | (((hm >> bit) & 0x01010101u) << 2);
        std::memcpy(levels + 32 * bit + l, &v, 4);
      }
    }
    const uint8_t* s = b + 96;
    const float d = f16_to_f32(load_u16(b + 108));
    for (size_t j = 0; j < 16; ++j) {
      const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
      const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
      scale[j] = d * static_cast<float>((low | (high << 4)) - 32);
    }
  }
};

inline void k4_scales(const uint8_t* b, float* scale, float* min) {
  const float d = f16_to_f32(load_u16(b)), dmin = f16_to_f32(load_u16(b + 2));
  const uint8_t* s = b + 4;
  for (size_t j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    if (j < 4) {
      sc = s[j] & 63;
      m = s[j + 4] & 63;
    } else {
      sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
      m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    scale[j] = d * static_cast<float>(sc);
    min[j] = -(dmin * static_cast<float>(m));
  }
}

struct Q4K {
  static constexpr size_t kUnit = 256, kSub = 32, kBytes = 144;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* min) {
    for (size_t g = 0; g < 4; ++g) {
      for (size_t l = 0; l < 32; l += 4) {
        const uint32_t w = load_u32(b + 16 + 32 * g + l);
        const uint32_t lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
        std::memcpy(levels + 64 * g + l, &lo, 4);
        std::memcpy(levels + 64 * g + 32 + l, &hi, 4);
      }
    }
    k4_scales(b, scale, min);
  }
};

struct Q5K {
  static constexpr size_t kUnit = 256, kSub = 32, kBytes = 176;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* min) {
    for (size_t g = 0; g < 4; ++g) {
      for (size_t l = 0; l < 32; l += 4) {
        const uint32_t w = load_u32(b + 48 + 32 * g + l), qh = load_u32(b + 16 + l);
        const uint32_t lo = (w & 0x0F0F0F0Fu) | (((qh >> (2 * g)) & 0x01010101u) << 4);
        const uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | (((qh >> (2 * g + 1)) & 0x01010101u) << 4);
        std::memcpy(levels + 64 * g + l, &lo, 4);
        std::memcpy(levels + 64 * g + 32 + l, &hi, 4);
      }
    }
    k4_scales(b, scale, min);
  }
};

struct Q6K {
  static constexpr size_t kUnit = 256, kSub = 16, kBytes = 210;
  static constexpr int kOffset = 32;
  static constexpr bool kHasMin = false;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* /*min*/) {
    for (size_t h = 0; h < 2; ++h) {
      for (size_t l = 0; l < 32; l += 4) {
        const uint32_t qh = load_u32(b + 128 + 32 * h + l);
        for (uint32_t p = 0; p < 4; ++p) {
          const uint32_t ql = load_u32(b + 64 * h + 32 * (p & 1) + l);
          const uint32_t v =
              ((ql >> (4 * (p >> 1))) & 0x0F0F0F0Fu) | (((qh >> (2 * p)) & 0x03030303u) << 4);
          std::memcpy(levels + 128 * h + 32 * p + l, &v, 4);
        }
      }
    }
    const float d = f16_to_f32(load_u16(b + 208));
    for (size_t s = 0; s < 16; ++s)
      scale[s] = d * static_cast<float>(static_cast<int8_t>(b[192 + s]));
  }
};

// IQ4_NL/IQ4_XS: each nibble indexes the IQ4 values; the level is that value + 128.
inline void iq4_levels_32(const uint8_t* qs, uint8_t* levels) {
  const __m128i table = iq4_levels_table();
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(0x0F);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(levels),
                   _mm_shuffle_epi8(table, _mm_and_si128(q, mask)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(levels + 16),
                   _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), mask)));
}

struct IQ4NL {
  static constexpr size_t kUnit = 32, kSub = 32, kBytes = 18;
  static constexpr int kOffset = 128;
  static constexpr bool kHasMin = false;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* /*min*/) {
    iq4_levels_32(b + 2, levels);
    scale[0] = f16_to_f32(load_u16(b));
  }
};

struct IQ4XS {
  static constexpr size_t kUnit = 256, kSub = 32, kBytes = 136;
  static constexpr int kOffset = 128;
  static constexpr bool kHasMin = false;
  static void unpack(const uint8_t* b, uint8_t* levels, float* scale, float* /*min*/) {
    const float d = f16_to_f32(load_u16(b));
    const uint32_t high = load_u16(b + 2);
    for (uint32_t s = 0; s < 8; ++s) {
      iq4_levels_32(b + 8 + 16 * s, levels + 32 * s);
      const uint32_t low = static_cast<uint32_t>(b[4 + s / 2]) >> (4 * (s % 2));
      const uint32_t ls = (low & 0x0Fu) | (((high >> (2 * s)) & 3u) << 4);
      scale[s] = d * static_cast<float>(static_cast<int>(ls) - 32);
    }
  }
};

// --- Packed weights -------------------------------------------------------------------------

template <typename W>
struct Packed {
  static constexpr size_t kSubs = W::kUnit / W::kSub;  // sub-blocks per unit
  static constexpr size_t kGroups = W::kSub / 4;       // zmm groups per sub-block
  static constexpr size_t kSubBytes = kGroups * 64 + 64 + (W::kHasMin ? 64 : 0);
  static size_t bytes(size_t k) { return k / W::kSub * kSubBytes; }
};

template <typename W>
void pack_rows(const uint8_t* w, size_t w_stride, size_t n_rows, size_t k, uint8_t* dst) {
  using P = Packed<W>;
  std::memset(dst, 0, P::bytes(k));
  uint8_t levels[W::kUnit];
  float scale[P::kSubs], min[P::kSubs];
  for (size_t r = 0; r < n_rows; ++r) {
    for (size_t u = 0; u < k / W::kUnit; ++u) {
      W::unpack(w + r * w_stride + u * W::kBytes, levels, scale, min);
      for (size_t s = 0; s < P::kSubs; ++s) {
        uint8_t* sub = dst + (u * P::kSubs + s) * P::kSubBytes;
        for (size_t g = 0; g < P::kGroups; ++g) {
          std::memcpy(sub + 64 * g + 4 * r, levels + s * W::kSub + 4 * g, 4);
        }
        std::memcpy(sub + P::kGroups * 64 + 4 * r, &scale[s], 4);
        if (W::kHasMin) std::memcpy(sub + P::kGroups * 64 + 64 + 4 * r, &min[s], 4);
      }
    }
  }
}

// --- Prepared activations -------------------------------------------------------------------

template <typename W>
struct Prepared {
  size_t x, corr, sums, dx, bytes;
  explicit Prepared(size_t k) {
    const auto pad = [](size_t n) { return (n + 63) / 64 * 64; };
    const size_t n_sub = k / W::kSub, n_unit = k / W::kUnit;
    x = 0;
    corr = pad(k);
    sums = corr + pad(4 * n_sub);
    dx = sums + (W::kHasMin ? pad(4 * n_sub) : 0);
    bytes = dx + pad(4 * n_unit);
  }
};

template <typename W>
size_t prepared_bytes(size_t k) {
  return Prepared<W>(k).bytes;
}

template <typename W>
void prepare(const uint8_t* act, size_t k, uint8_t* out) {
  const Prepared<W> p(k);
  std::memset(out, 0, p.bytes);
  auto* x = reinterpret_cast<int8_t*>(out + p.x);
  auto* dx = reinterpret_cast<float*>(out + p.dx);
  for (size_t u = 0; u < k / W::kUnit; ++u) {
    if constexpr (W::kUnit == 32) {
      const uint8_t* block = act + u * kQ8Bytes;
      std::memcpy(x + 32 * u, block + 2, 32);
      dx[u] = f16_to_f32(load_u16(block));
    } else {
      const uint8_t* block = act + u * kQ8KBytes;
      std::memcpy(x + 256 * u, block + 4, 256);
      std::memcpy(&dx[u], block, 4);
    }
  }
  auto* corr = reinterpret_cast<int32_t*>(out + p.corr);
  auto* sums = reinterpret_cast<float*>(out + p.sums);
  for (size_t s = 0; s < k / W::kSub; ++s) {
    int32_t sum = 0;
    for (size_t i = 0; i < W::kSub; ++i) sum += x[s * W::kSub + i];
    corr[s] = -W::kOffset * sum;
    if (W::kHasMin) sums[s] = static_cast<float>(sum);
  }
}

// --- The kernel -----------------------------------------------------------------------------

inline __m512i broadcast_word(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// 16 packed rows x C columns over all of k; writes y[c * y_stride + r] for r < n_rows.
template <typename W, size_t C>
void micro_kernel(const uint8_t* packed, size_t n_rows, const uint8_t* x, size_t x_stride,
                  const Prepared<W>& p, size_t k, float* y, size_t y_stride) {
  using P = Packed<W>;
  __m512 acc[C];
#pragma GCC unroll 8
  for (size_t c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
  for (size_t u = 0; u < k / W::kUnit; ++u) {
    __m512 unit[C];
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) unit[c] = _mm512_setzero_ps();
    for (size_t s = 0; s < P::kSubs; ++s) {
      const size_t sub_index = u * P::kSubs + s;
      const uint8_t* sub = packed + sub_index * P::kSubBytes;
      __m512i groups[P::kGroups];
#pragma GCC unroll 8
      for (size_t g = 0; g < P::kGroups; ++g) groups[g] = _mm512_load_si512(sub + 64 * g);
      const __m512 scale = _mm512_load_ps(reinterpret_cast<const float*>(sub + P::kGroups * 64));
#pragma GCC unroll 8
      for (size_t c = 0; c < C; ++c) {
        const uint8_t* xc = x + c * x_stride;
        const auto* xq = reinterpret_cast<const int8_t*>(xc + p.x) + sub_index * W::kSub;
        __m512i sum = _mm512_set1_epi32(reinterpret_cast<const int32_t*>(xc + p.corr)[sub_index]);
#pragma GCC unroll 8
        for (size_t g = 0; g < P::kGroups; ++g) {
          sum = _mm512_dpbusd_epi32(sum, groups[g], broadcast_word(xq + 4 * g));
        }
        unit[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, unit[c]);
        if constexpr (W::kHasMin) {
          const __m512 min =
              _mm512_load_ps(reinterpret_cast<const float*>(sub + P::kGroups * 64 + 64));
          unit[c] = _mm512_fmadd_ps(
              min, _mm512_set1_ps(reinterpret_cast<const float*>(xc + p.sums)[sub_index]), unit[c]);
        }
      }
    }
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) {
      const float dx = reinterpret_cast<const float*>(x + c * x_stride + p.dx)[u];
      acc[c] = _mm512_fmadd_ps(unit[c], _mm512_set1_ps(dx), acc[c]);
    }
  }
  const auto rows = static_cast<__mmask16>((1u << n_rows) - 1);
#pragma GCC unroll 8
  for (size_t c = 0; c < C; ++c) _mm512_mask_storeu_ps(y + c * y_stride, rows, acc[c]);
}

template <typename W>
size_t tile_scratch_bytes(size_t k) {
  return kSubTiles * Packed<W>::bytes(k);
}

template <typename W>
void tile(const DotTile& t, uint8_t* scratch) {
  const Prepared<W> p(t.k);
  const size_t packed_bytes = Packed<W>::bytes(t.k);
  const size_t n_sub_tiles = (t.n_rows + kRows - 1) / kRows;
  for (size_t i = 0; i < n_sub_tiles; ++i) {
    const size_t rows = t.n_rows - i * kRows < kRows ? t.n_rows - i * kRows : kRows;
    pack_rows<W>(t.w + i * kRows * t.w_stride, t.w_stride, rows, t.k, scratch + i * packed_bytes);
  }
  for_column_blocks<kColumns>(t.n_cols, [&]<size_t C>(size_t c) {
    for (size_t i = 0; i < n_sub_tiles; ++i) {
      const size_t rows = t.n_rows - i * kRows < kRows ? t.n_rows - i * kRows : kRows;
      micro_kernel<W, C>(scratch + i * packed_bytes, rows, t.x + c * t.x_stride, t.x_stride, p, t.k,
                         t.y + c * t.y_stride + i * kRows, t.y_stride);
    }
  });
}

template <typename W>
void set(KernelTable& table, TensorType type) {
  MatmulKernel& m = table.weights[static_cast<uint32_t>(type)].matmul;
  m.tile = tile<W>;
  m.rows_per_tile = kRows * kSubTiles;
  m.tile_scratch_bytes = tile_scratch_bytes<W>;
  m.prepare = prepare<W>;
  m.prepared_bytes = prepared_bytes<W>;
  // Whole sub-block sums scaled per row, where the decode dots scale four-element lanes: the
  // routes round differently (Q8_0 matrices are interleaved instead: dot_interleaved_vnni.cc).
  m.equals_dot = false;
}

}  // namespace

void fill_quant_matmul_vnni(KernelTable& table) {
  set<Q8_0>(table, TensorType::kQ8_0);
  set<Q4_0>(table, TensorType::kQ4_0);
  set<Q4_1>(table, TensorType::kQ4_1);
  set<Q5_0>(table, TensorType::kQ5_0);
  set<Q5_1>(table, TensorType::kQ5_1);
  set<Q2K>(table, TensorType::kQ2_K);
  set<Q3K>(table, TensorType::kQ3_K);
  set<Q4K>(table, TensorType::kQ4_K);
  set<Q5K>(table, TensorType::kQ5_K);
  set<Q6K>(table, TensorType::kQ6_K);
  set<IQ4NL>(table, TensorType::kIQ4_NL);
  set<IQ4XS>(table, TensorType::kIQ4_XS);
}

}  // namespace synapse::avx512
