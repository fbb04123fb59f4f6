// SPDX-License-Identifier: Apache-2.0
// AVX-512 VNNI dot products of the 32-element block types with Q8_0 activations, for decode.
//
// Each row is one sequential stream (what the hardware prefetcher follows best), read in
// "steps" of two Q8_0 blocks or four Q4/Q5 blocks: two 64-byte loads, from which vpermt2w
// collects the quants (64 bytes) and the block scales (one F16 per int32 lane) without any
// gather. One vpdpbusd multiplies 64 unsigned weight levels by 64 signed activations into
// exact int32 lanes: the two Q8_0 blocks biased by 128, or the low and then the high nibbles of
// the four Q4/Q5 blocks. The activations are prepared once per column (dot_prepare): their int8
// values without the interleaved scales, in the lane order the weights unpack to, with per-lane
// corrections -offset * sum(x) that make the unsigned levels signed again (Q8_0: 128, Q4_0: 8,
// Q5_0: 16, IQ4_NL: 128 after its table lookup), each lane's block scale as a float, and for the
// types with a min (Q4_1, Q5_1) a quarter of dx * sum(x) of the lane's block (four lanes per block
// add up to it).
#include <cstring>

#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 32;
constexpr size_t kQ8Bytes = 34;
constexpr size_t kMaxColumns = 4;
// Decode reads two far-apart rows side by side (two sequential streams in the out-of-order
// window: +10-25% of the bandwidth measured out of cache; four helped one thread and hurt two)
// and prefetches each stream this far ahead (+5-10%; 1-4 KiB measured alike).
constexpr size_t kStreams = 2;
constexpr size_t kPrefetchBytes = 2048;

template <size_t kBlockBytes, size_t kQsOffset, int kOff, bool kMin, int kQhOffset,
          size_t kBlocksPerStep, bool kTable = false>
struct Format {
  // IQ4_NL: each nibble indexes kIq4Values; the level is that value + 128 (kOffset 128).
  static constexpr bool kLookup = kTable;
  static constexpr size_t kBytes = kBlockBytes;
  static constexpr int kOffset = kOff;  // level of the value 0
  static constexpr bool kHasMin = kMin;
  static constexpr size_t kStepBlocks = kBlocksPerStep;
  static constexpr bool kNibbles = kBlocksPerStep == 4;
  static constexpr size_t kStepXBytes = kNibbles ? 128 : 64;
  static constexpr size_t kLanesPerBlock = 16 / kBlocksPerStep;
  static constexpr int kQh = kQhOffset;  // Q5: byte offset of the fifth bits, else -1

  // Where element e of block i of a step sits in the step's prepared activations: natural order
  // for Q8_0; for the nibble types the low 64 bytes hold elements 0-15 of each block (block i at
  // 16i), the high 64 bytes elements 16-31.
  static size_t position(size_t i, size_t e) {
    if (!kNibbles) return 32 * i + e;
    return e < 16 ? 16 * i + e : 64 + 16 * i + e - 16;
  }

  // vpermt2w indices over the 128-byte window of a step: the quants, and the F16 `field` (scale
  // at byte 0, min at byte 2) of each int32 lane's block in the low 16 words.
  static __m512i quant_index() {
    alignas(64) int16_t index[32];
    const size_t words = kNibbles ? 8 : 16;  // quant words per block
    for (size_t j = 0; j < 32; ++j) {
      index[j] = static_cast<int16_t>((j / words) * (kBytes / 2) + kQsOffset / 2 + j % words);
    }
    return _mm512_load_si512(index);
  }
  // Q5: the low words of the four blocks' fifth bits, then their high words (words 0-7).
  static __m512i high_bits_index() {
    alignas(64) int16_t index[32] = {};
    for (size_t j = 0; j < 8; ++j) {
      index[j] = static_cast<int16_t>(
          ((j % 4) * kBytes + static_cast<size_t>(kQh < 0 ? 0 : kQh)) / 2 + j / 4);
    }
    return _mm512_load_si512(index);
  }
  static __m512i field_index(size_t field_bytes) {
    alignas(64) int16_t index[32] = {};
    for (size_t j = 0; j < 16; ++j) {
      index[j] = static_cast<int16_t>((j / kLanesPerBlock) * (kBytes / 2) + field_bytes / 2);
    }
    return _mm512_load_si512(index);
  }
};

using Q8_0 = Format<34, 2, 128, false, -1, 2>;
using Q4_0 = Format<18, 2, 8, false, -1, 4>;
using Q4_1 = Format<20, 4, 0, true, -1, 4>;
using Q5_0 = Format<22, 6, 16, false, 2, 4>;
using Q5_1 = Format<24, 8, 0, true, 4, 4>;
using IQ4_NL = Format<18, 2, 128, false, -1, 4, true>;

// Where each part of a prepared column lives: per step, the activations (kStepXBytes), the
// int32 corrections, the per-lane scales and (with a min) the per-lane dx * sum(x) / 4.
template <typename W>
struct PreparedLayout {
  size_t n_blocks;
  size_t n_steps;
  size_t step_bytes;
  size_t bytes;
  explicit PreparedLayout(size_t k)
      : n_blocks(k / kQK),
        n_steps((n_blocks + W::kStepBlocks - 1) / W::kStepBlocks),
        step_bytes(W::kStepXBytes + 64 + 64 + (W::kHasMin ? 64 : 0)),
        bytes(n_steps * step_bytes) {}
  static constexpr size_t kCorr = W::kStepXBytes;
  static constexpr size_t kScale = W::kStepXBytes + 64;
  static constexpr size_t kMin = W::kStepXBytes + 128;
};

template <typename W>
size_t prepared_bytes(size_t k) {
  return PreparedLayout<W>(k).bytes;
}

template <typename W>
void prepare(const uint8_t* x, size_t k, uint8_t* out) {
  using L = PreparedLayout<W>;
  const L l(k);
  std::memset(out, 0, l.bytes);
  for (size_t b = 0; b < l.n_blocks; ++b) {
    const uint8_t* block = x + b * kQ8Bytes;
    uint8_t* step = out + (b / W::kStepBlocks) * l.step_bytes;
    const size_t i = b % W::kStepBlocks;
    if constexpr (W::kNibbles) {  // elements 0-15 at 16i, 16-31 at 64 + 16i
      std::memcpy(step + 16 * i, block + 2, 16);
      std::memcpy(step + 64 + 16 * i, block + 18, 16);
    } else {
      std::memcpy(step + 32 * i, block + 2, 32);
    }
    const float dx = f16_to_f32(load_u16(block));
    const __mmask16 lanes =
        static_cast<__mmask16>(((1u << W::kLanesPerBlock) - 1) << (i * W::kLanesPerBlock));
    auto* scale = reinterpret_cast<float*>(step + L::kScale);
    _mm512_store_ps(scale, _mm512_mask_mov_ps(_mm512_load_ps(scale), lanes, _mm512_set1_ps(dx)));
    if constexpr (W::kHasMin) {
      int32_t sum = 0;
      for (size_t e = 0; e < kQK; ++e) sum += static_cast<int8_t>(block[2 + e]);
      const float xs = static_cast<float>(sum) * dx / static_cast<float>(W::kLanesPerBlock);
      auto* min = reinterpret_cast<float*>(step + L::kMin);
      _mm512_store_ps(min, _mm512_mask_mov_ps(_mm512_load_ps(min), lanes, _mm512_set1_ps(xs)));
    }
  }
  // Lane l of a step covers bytes 4l..4l+3 of each 64-byte half: sums by vpdpbusd with ones.
  const __m512i ones = _mm512_set1_epi8(1);
  for (size_t s = 0; s < l.n_steps; ++s) {
    uint8_t* step = out + s * l.step_bytes;
    __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_load_si512(step));
    if constexpr (W::kNibbles) sums = _mm512_dpbusd_epi32(sums, ones, _mm512_load_si512(step + 64));
    _mm512_store_si512(step + L::kCorr, _mm512_mullo_epi32(sums, _mm512_set1_epi32(-W::kOffset)));
  }
}

template <typename W>
struct Indices {
  __m512i quants = W::quant_index();
  __m512i scale = W::field_index(0);
  __m512i min = W::field_index(2);
  __m512i high_bits = W::high_bits_index();
};

// The weights of one step: unsigned levels (lo: 64 lanes; hi: the nibble types' second 64),
// the scale of each int32 lane's block and (with a min) its min, as floats.
template <typename W>
inline void load_step(const uint8_t* b, size_t n_valid, const uint8_t* row_end,
                      const Indices<W>& ix, __m512i& lo, __m512i& hi, __m512& scale, __m512& min) {
  __m512i first, second;
  // A step is longer than a cache line: two prefetches so that no line is skipped.
  _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchBytes), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchBytes + 64), _MM_HINT_T0);
  // Exactly the step's bytes: a full first load and a masked second one (which also never
  // touches memory past the end of the row). Loading a whole second line-sized vector instead
  // measured 20-30% slower out of cache.
  const size_t valid = n_valid * W::kBytes;
  (void)row_end;
  if (valid >= 64) {
    first = _mm512_loadu_si512(b);
    second = _mm512_maskz_loadu_epi8(valid > 64 ? (1ULL << (valid - 64)) - 1 : 0, b + 64);
  } else {
    first = _mm512_maskz_loadu_epi8((1ULL << valid) - 1, b);
    second = _mm512_setzero_si512();
  }
  // Lanes of blocks past the row end read zeros or neighbouring bytes; their activations and
  // per-lane scales are zero, so they contribute nothing (and are not NaN: scales are masked).
  const __mmask16 valid_lanes = static_cast<__mmask16>((1u << (n_valid * W::kLanesPerBlock)) - 1);
  scale = _mm512_maskz_cvtph_ps(
      valid_lanes, _mm512_castsi512_si256(_mm512_permutex2var_epi16(first, ix.scale, second)));
  if constexpr (W::kHasMin) {
    min = _mm512_maskz_cvtph_ps(
        valid_lanes, _mm512_castsi512_si256(_mm512_permutex2var_epi16(first, ix.min, second)));
  }
  const __m512i packed = _mm512_permutex2var_epi16(first, ix.quants, second);
  if constexpr (!W::kNibbles) {
    lo = _mm512_xor_si512(packed, _mm512_set1_epi8(static_cast<char>(0x80)));
  } else {
    const __m512i mask = _mm512_set1_epi8(0x0F);
    lo = _mm512_and_si512(packed, mask);
    hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), mask);
    if constexpr (W::kLookup) {  // kIq4Values + 128, looked up in every 128-bit lane
      const __m512i table = _mm512_broadcast_i32x4(iq4_levels_table());
      lo = _mm512_shuffle_epi8(table, lo);
      hi = _mm512_shuffle_epi8(table, hi);
    }
    if constexpr (W::kQh >= 0) {  // Q5: add 16 where the fifth bit is set
      const __m128i bits =
          _mm512_castsi512_si128(_mm512_permutex2var_epi16(first, ix.high_bits, second));
      const __m512i sixteen = _mm512_set1_epi8(16);
      lo = _mm512_mask_add_epi8(lo, static_cast<__mmask64>(_mm_cvtsi128_si64(bits)), lo, sixteen);
      hi =
          _mm512_mask_add_epi8(hi, static_cast<__mmask64>(_mm_extract_epi64(bits, 1)), hi, sixteen);
    }
  }
}

template <typename W, size_t C>
void row_kernel(const uint8_t* w, const uint8_t* x, size_t x_stride, const PreparedLayout<W>& l,
                const Indices<W>& ix, float* y, size_t y_stride) {
  using L = PreparedLayout<W>;
  // One accumulator per column, in step order: the same arithmetic as rows_kernel, so a
  // column's result does not depend on how many columns share the tile (batched decode gives
  // the bits of single-sequence decode).
  __m512 acc[C], acc_min[C];
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c) acc[c] = acc_min[c] = _mm512_setzero_ps();
  const uint8_t* row_end = w + l.n_blocks * W::kBytes;
  for (size_t s = 0; s < l.n_steps; ++s) {
    const size_t first_block = s * W::kStepBlocks;
    const size_t remaining = l.n_blocks - first_block;
    const size_t valid = remaining < W::kStepBlocks ? remaining : W::kStepBlocks;
    __m512i lo, hi;
    __m512 scale, min;
    load_step<W>(w + first_block * W::kBytes, valid, row_end, ix, lo, hi, scale, min);
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      const uint8_t* step = x + c * x_stride + s * l.step_bytes;
      __m512i sums =
          _mm512_dpbusd_epi32(_mm512_load_si512(step + L::kCorr), lo, _mm512_load_si512(step));
      if constexpr (W::kNibbles) sums = _mm512_dpbusd_epi32(sums, hi, _mm512_load_si512(step + 64));
      const __m512 dx = _mm512_load_ps(reinterpret_cast<const float*>(step + L::kScale));
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(scale, dx), acc[c]);
      if constexpr (W::kHasMin) {
        acc_min[c] = _mm512_fmadd_ps(
            min, _mm512_load_ps(reinterpret_cast<const float*>(step + L::kMin)), acc_min[c]);
      }
    }
  }
#pragma GCC unroll 4
  for (size_t c = 0; c < C; ++c)
    y[c * y_stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[c], acc_min[c]));
}

// R rows from far apart in one pass, one column: R independent sequential streams in the
// out-of-order window multiply the memory-level parallelism of decode.
template <typename W, size_t R>
void rows_kernel(const uint8_t* const* w, const uint8_t* x, const PreparedLayout<W>& l,
                 const Indices<W>& ix, float* const* y) {
  using L = PreparedLayout<W>;
  __m512 acc[R], acc_min[R];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) acc[r] = acc_min[r] = _mm512_setzero_ps();
  for (size_t s = 0; s < l.n_steps; ++s) {
    const size_t first_block = s * W::kStepBlocks;
    const size_t remaining = l.n_blocks - first_block;
    const size_t valid = remaining < W::kStepBlocks ? remaining : W::kStepBlocks;
    const uint8_t* step = x + s * l.step_bytes;
    const __m512i corr = _mm512_load_si512(step + L::kCorr);
    const __m512i xq = _mm512_load_si512(step);
    const __m512 dx = _mm512_load_ps(reinterpret_cast<const float*>(step + L::kScale));
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      __m512i lo, hi;
      __m512 scale, min;
      load_step<W>(w[r] + first_block * W::kBytes, valid, w[r] + l.n_blocks * W::kBytes, ix, lo, hi,
                   scale, min);
      __m512i sums = _mm512_dpbusd_epi32(corr, lo, xq);
      if constexpr (W::kNibbles) sums = _mm512_dpbusd_epi32(sums, hi, _mm512_load_si512(step + 64));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(scale, dx), acc[r]);
      if constexpr (W::kHasMin) {
        acc_min[r] = _mm512_fmadd_ps(
            min, _mm512_load_ps(reinterpret_cast<const float*>(step + L::kMin)), acc_min[r]);
      }
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) *y[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r], acc_min[r]));
}

template <typename W>
void dot(const DotTile& t) {
  const PreparedLayout<W> l(t.k);
  const Indices<W> ix;
  if (t.n_cols == 1) {  // decode: kStreams far-apart rows side by side
    for_row_streams<kStreams>(
        t,
        [&](const uint8_t* const(&w)[kStreams], float* const(&y)[kStreams]) {
          rows_kernel<W, kStreams>(w, t.x, l, ix, y);
        },
        [&](const uint8_t* w, float* y) {
          row_kernel<W, 1>(w, t.x, t.x_stride, l, ix, y, t.y_stride);
        });
    return;
  }
  for_column_blocks<kMaxColumns>(t.n_cols, [&]<size_t C>(size_t c) {
    for (size_t r = 0; r < t.n_rows; ++r) {
      row_kernel<W, C>(t.w + r * t.w_stride, t.x + c * t.x_stride, t.x_stride, l, ix,
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

void fill_legacy_dots_vnni(KernelTable& table) {
  set<Q8_0>(table, TensorType::kQ8_0);
  set<Q4_0>(table, TensorType::kQ4_0);
  set<Q4_1>(table, TensorType::kQ4_1);
  set<Q5_0>(table, TensorType::kQ5_0);
  set<Q5_1>(table, TensorType::kQ5_1);
  set<IQ4_NL>(table, TensorType::kIQ4_NL);
}

}  // namespace synapse::avx512
