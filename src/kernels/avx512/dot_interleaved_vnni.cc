// SPDX-License-Identifier: Apache-2.0
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL weights interleaved sixteen rows to a vector for the
// AVX-512 VNNI level (InterleavedKernels, kernels/kernel_table.h): one kernel for decode, batched
// decode and prefill.
//
// Why: over the rows as stored, this level's decode (dot_legacy_vnni.cc) sums four-element
// slices per lane and scales each lane, while its prefill tile (matmul_vnni.cc) sums whole
// blocks per row and scales twice: the two routes round differently, so a service that wants a
// sequence's output independent of its batch had to run every step, prefill included, on the
// decode kernel (issue 17, item 1). Here each lane adds up its row's whole block in int32 and
// blocks are combined as the scalar reference does -- block = float(sum) * (dw * dx), acc += block,
// blocks in order, no FMA (the types with a min add float(sum(x)) * (m * dx) to the block before
// it joins the row's sum, as the reference does) -- so every route equals the reference bit for
// bit, whatever the batch,
// the column tiling or the threads. A register block is one group (16 rows) x up to 8 columns:
// each 64-byte slice of levels, loaded once, feeds one vpdpbusd per column.
//
// Layout, by pairs of sixteen-row groups (the bytes of the 32 rows: 1088 per Q8_0 block, 576 per
// Q4_0 one, 640 per Q4_1 one, 704 per Q5_0 one, 768 per Q5_1 one): the levels of the first group,
// of the second, then the scales of the first and of the second. A Q8_0 group's levels are 512
// bytes per block -- for each four-element slice s = 0..7 of a block, the sixteen rows' four values
// of that slice plus 128 (unsigned, as vpdpbusd multiplies them; lane l = row l); a Q4_0 / IQ4_NL
// group's 256, the rows' nibble bytes four at a time (see Nibbles); a Q5_0 group's 320, those and
// the fifth bits (see Q5_0) -- and its scales are sixteen F16 per block (thirty-two for the types
// with a min: the sixteen d, then the sixteen m). Levels apart from the scales, and groups paired
// (a pair is a multiple of 64 bytes long, a lone group of odd length is not), keep every 64-byte
// load of levels inside one cache line.
//
// Activations are prepared once per column: the int8 values, then per block the correction
// -offset * sum(x) (the start of each vpdpbusd chain: it makes the unsigned levels signed again,
// exactly; offset 128 for Q8_0 and IQ4_NL, 8 for Q4_0, 16 for Q5_0) -- or, for Q4_1 and Q5_1,
// whose levels are their values, float(sum(x)) for the min's term -- and the scale dx as a float.
#include <cstring>

#include "kernels/avx2/prepared_columns.h"
#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/thread_scratch.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 32;
constexpr size_t kGroupRows = 16;
constexpr size_t kPairRows = 2 * kGroupRows;  // the layout's unit: InterleavedKernels::rows
constexpr size_t kSlices = kQK / 4;           // four-element slices per block
constexpr size_t kMaxColumns = 8;
// Groups a pass of many columns keeps in L2 (two Q8_0 groups of k = 4864 are 170 KiB) while
// every column block runs against them.
constexpr size_t kGroupsPerPass = 2;
// Decode reads this many far-apart groups side by side, each prefetched this far ahead.
constexpr size_t kStreams = 2;
constexpr size_t kPrefetchBytes = 4096;

// The types: how a block's payload (after its F16 scale, or scale and min) is laid out in a
// group's levels, and how one block of a group's levels becomes kSlices vectors of unsigned
// levels, slice s holding the sixteen rows' elements 4s..4s+3 (level = value + kOffset). kMin:
// the block's head is d then m (x = d * q + m), and a group's scales per block are 2 x 16 F16.
// NOLINTNEXTLINE(readability-identifier-naming): named as the GGUF type
struct Q8_0 {  // 8 slices of 64 bytes: the values plus 128
  static constexpr TensorType kType = TensorType::kQ8_0;
  static constexpr size_t kBytes = 34;
  static constexpr size_t kLevelBytes = kGroupRows * 32;
  static constexpr int kOffset = 128;
  static constexpr bool kMin = false;
  static void put(const uint8_t* payload, size_t lane, uint8_t* levels) {
    for (size_t s = 0; s < kSlices; ++s) {
      const uint32_t level = load_u32(payload + 4 * s) ^ 0x80808080u;
      std::memcpy(levels + s * 64 + 4 * lane, &level, 4);
    }
  }
  static void take(const uint8_t* levels, size_t lane, uint8_t* payload) {
    for (size_t s = 0; s < kSlices; ++s) {
      const uint32_t value = load_u32(levels + s * 64 + 4 * lane) ^ 0x80808080u;
      std::memcpy(payload + 4 * s, &value, 4);
    }
  }
  static void load(const uint8_t* levels, __m512i (&q)[kSlices]) {
#pragma GCC unroll 8
    for (size_t s = 0; s < kSlices; ++s) q[s] = _mm512_loadu_si512(levels + 64 * s);
  }
};

// Q4_0, Q4_1 and IQ4_NL: byte j of a block's 16 holds element j (low nibble) and j + 16 (high),
// so the stored bytes 4j..4j+3 in lane l of vector j give slices j and 4 + j; nothing is
// rewritten.
template <TensorType kT, int kOff, bool kLookup, bool kWithMin = false>
struct Nibbles {
  static constexpr TensorType kType = kT;
  static constexpr bool kMin = kWithMin;
  static constexpr size_t kBytes = (kMin ? 4 : 2) + 16;
  static constexpr size_t kLevelBytes = kGroupRows * 16;
  static constexpr int kOffset = kOff;
  static void put(const uint8_t* payload, size_t lane, uint8_t* levels) {
    for (size_t j = 0; j < 4; ++j) std::memcpy(levels + j * 64 + 4 * lane, payload + 4 * j, 4);
  }
  static void take(const uint8_t* levels, size_t lane, uint8_t* payload) {
    for (size_t j = 0; j < 4; ++j) std::memcpy(payload + 4 * j, levels + j * 64 + 4 * lane, 4);
  }
  static void load(const uint8_t* levels, __m512i (&q)[kSlices]) {
    const __m512i mask = _mm512_set1_epi8(0x0F);
    const __m512i table = _mm512_broadcast_i32x4(iq4_levels_table());  // IQ4_NL only
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) {
      const __m512i packed = _mm512_loadu_si512(levels + 64 * j);
      q[j] = _mm512_and_si512(packed, mask);
      q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), mask);
      if constexpr (kLookup) {  // IQ4_NL: the nibble indexes kIq4Values; level = value + 128
        q[j] = _mm512_shuffle_epi8(table, q[j]);
        q[4 + j] = _mm512_shuffle_epi8(table, q[4 + j]);
      }
    }
  }
};
using Q4_0 = Nibbles<TensorType::kQ4_0, 8, false>;
using Q4_1 = Nibbles<TensorType::kQ4_1, 0, false, true>;
using IQ4_NL = Nibbles<TensorType::kIQ4_NL, 128, true>;

// Q5_0 and Q5_1: the sixteen nibble bytes as Q4_0's four vectors, then one vector of fifth bits
// (Q5_0's level = value + 16; Q5_1's is its value). A block's qh holds element e's fifth bit at
// bit e; here it is transposed so that byte t of a lane holds at bit s the fifth bit of element
// 4s + t -- the byte of slice s's vector that element lands in -- and one shift moves slice s's
// bits to bit 4 of every byte.
template <TensorType kT, int kOff, bool kWithMin>
struct FiveBits {
  static constexpr TensorType kType = kT;
  static constexpr bool kMin = kWithMin;
  static constexpr size_t kBytes = (kMin ? 4 : 2) + 4 + 16;  // F16 d (and m), 4 bytes qh, 16 qs
  static constexpr size_t kLevelBytes = kGroupRows * 16 + 64;
  static constexpr int kOffset = kOff;
  static constexpr size_t kHigh = kGroupRows * 16;  // where the fifth bits start
  static void put(const uint8_t* payload, size_t lane, uint8_t* levels) {
    Q4_0::put(payload + 4, lane, levels);
    const uint32_t qh = load_u32(payload);
    uint8_t high[4] = {};
    for (uint32_t e = 0; e < kQK; ++e) {
      high[e % 4] = static_cast<uint8_t>(high[e % 4] | (((qh >> e) & 1u) << (e / 4)));
    }
    std::memcpy(levels + kHigh + 4 * lane, high, 4);
  }
  static void take(const uint8_t* levels, size_t lane, uint8_t* payload) {
    Q4_0::take(levels, lane, payload + 4);
    uint32_t qh = 0;
    for (uint32_t e = 0; e < kQK; ++e) {
      qh |= ((static_cast<uint32_t>(levels[kHigh + 4 * lane + e % 4]) >> (e / 4)) & 1u) << e;
    }
    std::memcpy(payload, &qh, 4);
  }
  static void load(const uint8_t* levels, __m512i (&q)[kSlices]) {
    Q4_0::load(levels, q);
    const __m512i high = _mm512_loadu_si512(levels + kHigh);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    // Slice s's bits moved from bit s to bit 4. Sixteen-bit shifts: the bits they carry across a
    // byte land outside bit 4 and are masked.
    const __m512i moved[kSlices] = {_mm512_slli_epi16(high, 4),
                                    _mm512_slli_epi16(high, 3),
                                    _mm512_slli_epi16(high, 2),
                                    _mm512_slli_epi16(high, 1),
                                    high,
                                    _mm512_srli_epi16(high, 1),
                                    _mm512_srli_epi16(high, 2),
                                    _mm512_srli_epi16(high, 3)};
#pragma GCC unroll 8
    for (size_t s = 0; s < kSlices; ++s) {
      q[s] = _mm512_ternarylogic_epi32(q[s], moved[s], bit4, 0xF8);  // q | (moved & 0x10)
    }
  }
};
using Q5_0 = FiveBits<TensorType::kQ5_0, 16, false>;
using Q5_1 = FiveBits<TensorType::kQ5_1, 0, true>;

// A group's scales per block: sixteen F16 d, then (types with a min) sixteen F16 m.
template <typename W>
constexpr size_t kScaleBytes = kGroupRows * 2 * (W::kMin ? 2 : 1);
template <typename W>
constexpr size_t kHeadBytes = W::kMin ? 4 : 2;  // a stored block's d (and m)

// The stored rows' F32-activation product of each type, which the interleaved rows' dot_f32
// runs on rows restored to their stored order (so the two are equal by construction). Set by
// fill_interleaved_dots_vnni from the table it fills.
// Indexed by the TensorType id, as KernelTable::weights.
DotTileFn g_stored_dot_f32[sizeof(KernelTable::weights) / sizeof(WeightKernels)] = {};
template <typename W>
DotTileFn& stored_dot_f32() {
  return g_stored_dot_f32[static_cast<uint32_t>(W::kType)];
}

// Where group g's levels and scales start in a matrix or tile whose first row starts a pair.
template <typename W>
struct Group {
  size_t levels;
  size_t scales;
  Group(size_t g, size_t n_blocks) {
    const size_t pair = g / 2 * 2 * n_blocks * (W::kLevelBytes + kScaleBytes<W>);
    levels = pair + g % 2 * n_blocks * W::kLevelBytes;
    scales = pair + 2 * n_blocks * W::kLevelBytes + g % 2 * n_blocks * kScaleBytes<W>;
  }
};

template <typename W>
void interleave(const uint8_t* w, size_t row_stride, size_t n_rows, size_t k, uint8_t* out) {
  const size_t n_blocks = k / kQK;
  for (size_t g = 0; g < n_rows / kGroupRows; ++g) {
    const Group<W> at(g, n_blocks);
    for (size_t lane = 0; lane < kGroupRows; ++lane) {
      const uint8_t* row = w + (g * kGroupRows + lane) * row_stride;
      for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* block = row + b * W::kBytes;
        uint8_t* scales = out + at.scales + b * kScaleBytes<W>;
        std::memcpy(scales + 2 * lane, block, 2);
        if constexpr (W::kMin) std::memcpy(scales + kGroupRows * 2 + 2 * lane, block + 2, 2);
        W::put(block + kHeadBytes<W>, lane, out + at.levels + b * W::kLevelBytes);
      }
    }
  }
}

// Row r (< 32) of the pair at `pair`, as stored.
template <typename W>
void stored_row(const uint8_t* pair, size_t n_blocks, size_t r, uint8_t* row) {
  const Group<W> at(r / kGroupRows, n_blocks);
  const size_t lane = r % kGroupRows;
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t* block = row + b * W::kBytes;
    const uint8_t* scales = pair + at.scales + b * kScaleBytes<W>;
    std::memcpy(block, scales + 2 * lane, 2);
    if constexpr (W::kMin) std::memcpy(block + 2, scales + kGroupRows * 2 + 2 * lane, 2);
    W::take(pair + at.levels + b * W::kLevelBytes, lane, block + kHeadBytes<W>);
  }
}

template <typename W>
void dequantize_row(const uint8_t* pair, size_t r, size_t k, float* y) {
  uint8_t* row = thread_scratch(k / kQK * W::kBytes);
  stored_row<W>(pair, k / kQK, r, row);
  ref::dequantize(W::kType, row, y, k);
}

// G groups (16 rows each: group i's levels and scales at levels[i] and scales[i], its outputs at
// y[i][c * y_stride + lane]) x C columns over all blocks. Each (row, column)'s arithmetic is the
// same whatever G and C.
template <typename W, size_t G, size_t C>
void group_kernel(const uint8_t* const (&levels)[G], const uint8_t* const (&scales)[G],
                  size_t n_blocks, const uint8_t* x, size_t x_stride, size_t x_blocks,
                  float* const (&y)[G], size_t y_stride) {
  __m512 acc[G][C];
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < n_blocks; ++b) {
    __m512i q[G][kSlices];
    __m512 dw[G];
    __m512 mw[G];  // the types with a min
#pragma GCC unroll 8
    for (size_t i = 0; i < G; ++i) {
      const uint8_t* block = levels[i] + b * W::kLevelBytes;
#pragma GCC unroll 8
      for (size_t line = 0; line < W::kLevelBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchBytes + line), _MM_HINT_T0);
      }
      const uint8_t* block_scales = scales[i] + b * kScaleBytes<W>;
      if (W::kMin || b % 2 == 0) {  // a line holds two blocks' scales, one block's with mins
        _mm_prefetch(reinterpret_cast<const char*>(block_scales +
                                                   kPrefetchBytes / 16 * (kScaleBytes<W> / 32)),
                     _MM_HINT_T0);
      }
      W::load(block, q[i]);
      dw[i] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block_scales)));
      if constexpr (W::kMin) {
        mw[i] = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block_scales + kGroupRows * 2)));
      }
    }
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) {
      const uint8_t* xc = x + c * x_stride;
      const auto* xq = reinterpret_cast<const int32_t*>(xc + b * kQK);
      const uint8_t* pair = xc + x_blocks + 8 * b;
      int32_t correction = 0;
      float sum_x = 0.0f;
      float dx;
      if constexpr (W::kMin) {
        std::memcpy(&sum_x, pair, 4);
      } else {
        std::memcpy(&correction, pair, 4);
      }
      std::memcpy(&dx, pair + 4, 4);
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        // Two chains (exact integers: their order does not matter) halve the dependency latency.
        __m512i even = _mm512_set1_epi32(correction), odd = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (size_t s = 0; s < kSlices; s += 2) {
          even = _mm512_dpbusd_epi32(even, q[i][s], _mm512_set1_epi32(xq[s]));
          odd = _mm512_dpbusd_epi32(odd, q[i][s + 1], _mm512_set1_epi32(xq[s + 1]));
        }
        const __m512 sum = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
        __m512 block = _mm512_mul_ps(sum, _mm512_mul_ps(dw[i], _mm512_set1_ps(dx)));
        if constexpr (W::kMin) {
          block = _mm512_add_ps(block, _mm512_mul_ps(_mm512_set1_ps(sum_x),
                                                     _mm512_mul_ps(mw[i], _mm512_set1_ps(dx))));
        }
        acc[i][c] = _mm512_add_ps(acc[i][c], block);
      }
    }
  }
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) _mm512_storeu_ps(y[i] + c * y_stride, acc[i][c]);
  }
}

// Decode: kStreams far-apart groups side by side (their own sequential streams in the
// out-of-order window), then the groups left over one at a time.
template <typename W>
void decode(const DotTile& t, size_t n_blocks, size_t x_blocks) {
  const size_t n_groups = t.n_rows / kGroupRows;
  const size_t part = n_groups / kStreams;
  for (size_t g = 0; g < part; ++g) {
    const uint8_t* levels[kStreams];
    const uint8_t* scales[kStreams];
    float* y[kStreams];
    for (size_t p = 0; p < kStreams; ++p) {
      const Group<W> at(p * part + g, n_blocks);
      levels[p] = t.w + at.levels;
      scales[p] = t.w + at.scales;
      y[p] = t.y + (p * part + g) * kGroupRows;
    }
    group_kernel<W, kStreams, 1>(levels, scales, n_blocks, t.x, t.x_stride, x_blocks, y,
                                 t.y_stride);
  }
  for (size_t g = kStreams * part; g < n_groups; ++g) {
    const Group<W> at(g, n_blocks);
    const uint8_t* levels[1] = {t.w + at.levels};
    const uint8_t* scales[1] = {t.w + at.scales};
    float* y[1] = {t.y + g * kGroupRows};
    group_kernel<W, 1, 1>(levels, scales, n_blocks, t.x, t.x_stride, x_blocks, y, t.y_stride);
  }
}

template <typename W>
void dot(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  const size_t n_groups = t.n_rows / kGroupRows;
  const size_t x_blocks = PreparedColumn(t.k).blocks;
  if (t.n_cols == 1) {
    decode<W>(t, n_blocks, x_blocks);
    return;
  }
  for (size_t g0 = 0; g0 < n_groups; g0 += kGroupsPerPass) {
    const size_t groups = n_groups - g0 < kGroupsPerPass ? n_groups - g0 : kGroupsPerPass;
    for_column_blocks<kMaxColumns>(t.n_cols, [&]<size_t C>(size_t c) {
      for (size_t g = g0; g < g0 + groups; ++g) {
        const Group<W> at(g, n_blocks);
        const uint8_t* levels[1] = {t.w + at.levels};
        const uint8_t* scales[1] = {t.w + at.scales};
        float* y[1] = {t.y + c * t.y_stride + g * kGroupRows};
        group_kernel<W, 1, C>(levels, scales, n_blocks, t.x + c * t.x_stride, t.x_stride, x_blocks,
                              y, t.y_stride);
      }
    });
  }
}

// F32 activations: the stored rows' own product over each group's rows restored to their stored
// order, so the F32 path gives the same bits interleaved or not.
template <typename W>
void dot_f32(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  const size_t row_bytes = n_blocks * W::kBytes;
  uint8_t* rows = thread_scratch(kPairRows * row_bytes);
  for (size_t p = 0; p < t.n_rows / kPairRows; ++p) {
    const uint8_t* pair = t.w + p * kPairRows * t.w_stride;
    for (size_t r = 0; r < kPairRows; ++r) stored_row<W>(pair, n_blocks, r, rows + r * row_bytes);
    DotTile stored = t;
    stored.w = rows;
    stored.w_stride = row_bytes;
    stored.n_rows = kPairRows;
    stored.y = t.y + p * kPairRows;
    stored_dot_f32<W>()(stored);
  }
}

template <typename W>
void set(KernelTable& table) {
  WeightKernels& w = table.weights[static_cast<uint32_t>(W::kType)];
  stored_dot_f32<W>() = w.dot_f32;
  InterleavedKernels& k = w.interleaved;
  k.rows = kPairRows;
  // Every row length: for Q4_0 on the 0.5B-shaped file (896-element rows but for ffn_down) the
  // decode of the whole model measured as fast or faster with its short rows interleaved too
  // (`synapse bench -p 0 -n 128`, 2 threads, three alternating rounds: 139-157 against 131-148
  // tokens/s) and the service's 8 streams 1.6x faster, though kernels_bench's Matvec of the
  // 896x151936 head alone read 5-25% slower interleaved (1.71-1.73 ms against 1.33-1.64 ms).
  k.bits = InterleavedKernels::Bits::kReference;
  k.interleave = interleave<W>;
  k.prepare = prepare_column<W::kOffset, W::kMin>;
  k.prepared_bytes = prepared_column_bytes;
  k.dot = dot<W>;
  k.dot_f32 = dot_f32<W>;
  k.dequantize_row = dequantize_row<W>;
}

}  // namespace

void fill_interleaved_dots_vnni(KernelTable& table) {
  set<Q8_0>(table);
  set<Q4_0>(table);
  set<Q4_1>(table);
  set<Q5_0>(table);
  set<Q5_1>(table);
  set<IQ4_NL>(table);
}

}  // namespace synapse::avx512
