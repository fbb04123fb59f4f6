// SPDX-License-Identifier: Apache-2.0
// Q4_0, Q4_1, Q5_0 and Q5_1 weights interleaved eight rows to a vector for the AVX2 level
// (InterleavedKernels, kernels/kernel_table.h): one kernel for decode, batched decode and prefill.
//
// Why: over the rows as stored (legacy_blocks.h) each (row, column, block) costs three ops on
// the pipes that multiply -- vpmaddubsw, vpmaddwd and an FMA -- plus the unpacking, an offset
// subtraction, a conversion and a scale broadcast, so the four- and five-bit decode is bound by
// arithmetic, not memory, on AVX2 (issue 23: Q4_0 at 81-83% of the bandwidth on Zen 3). With
// eight rows in the eight 32-bit lanes of a vector, vpmaddubsw multiplies a four-element slice
// of eight rows at once into sixteen-bit pairs, and the pairs of several slices add up exactly in
// sixteen bits (Blocks::kSlicesPerSum), so a (row, block) costs one vpmaddubsw per slice and one
// or two vpmaddwd, a conversion and the scaling per eight rows. Measured against the rows as
// stored (and Q5's former grouped scales) on the SYNAPSE_ISA=avx2 stand-in, kernels_bench,
// in cache: decode ~2x, 8-column batched decode ~2.2-2.7x, prefill ~2-2.4x.
//
// Arithmetic: per (row, column) and block, the exact integer sum of the 32 products -- the
// level sum plus the column's correction -offset * sum(x) for Q4_0 and Q5_0, whose levels are
// their values plus 8 or 16 -- then block = float(sum) * (dw * dx) (Q4_1 and Q5_1 add
// float(sum(x)) * (m * dx)) and acc = acc + block, blocks in order: the reference's dot_legacy
// step for step (no FMA), so every route equals the scalar reference bit for bit, whatever the
// batch, the tiling or the threads.
//
// Layout of a group of eight rows: runs of four blocks (the last run may be shorter), each run
// the levels of its blocks (Blocks: 128 bytes of nibbles a block, 160 with Q5's fifth bits) and
// then their scales (eight F16 d per block; the types with a min: the eight d, then the eight m).
// A run is 576 bytes (Q4_1 640, Q5_0 704, Q5_1 768), a multiple of the cache line, so a group is
// one sequential stream with its scales a few lines behind its levels, and every 32-byte load of
// levels stays inside a line when the group starts on one.
//
// Activations are prepared once per column: the k int8 values, then per block the correction
// -offset * sum(x) (the types with a min: float(sum(x))) and the scale dx as a float.
//
// The layout's types and the kernels are in nibbles_interleaved.h (shared with the AVX-VNNI
// variant, dot_interleaved_nibbles_vnni.cc); this file rearranges rows at load, restores them
// (dequantization, the F32 path) and fills the AVX2 table.
#include <cstring>

#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/nibbles_interleaved.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/thread_scratch.h"

namespace synapse::avx2::nibbles {
namespace {

// AVX2: vpmaddubsw's sixteen-bit product pairs of a slice, added up in sixteen bits (exact for
// W::kSlicesPerSum slices) before one vpmaddwd.
struct SixteenBitPairs {
  static constexpr bool kPairs = true;
  static void add(__m256i& pairs, __m256i low, __m256i x_low, __m256i high, __m256i x_high) {
    pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(low, x_low));
    pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(high, x_high));
    in_order(pairs);
  }
};

template <typename W>
void interleave(const uint8_t* w, size_t row_stride, size_t n_rows, size_t k, uint8_t* out) {
  const size_t n_blocks = k / kQK;
  const size_t group_bytes = kGroupRows * n_blocks * W::kBytes;
  for (size_t g = 0; g < n_rows / kGroupRows; ++g) {
    uint8_t* group = out + g * group_bytes;
    for (size_t lane = 0; lane < kGroupRows; ++lane) {
      const uint8_t* row = w + (g * kGroupRows + lane) * row_stride;
      for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* block = row + b * W::kBytes;
        const Run<W> at(b, n_blocks);
        std::memcpy(group + at.scales + 2 * lane, block, 2);
        if constexpr (W::kMin) {
          std::memcpy(group + at.scales + 2 * kGroupRows + 2 * lane, block + 2, 2);
        }
        W::put(block + W::kHeadBytes, lane, group + at.levels);
      }
    }
  }
}

// Row `lane` of a group, as stored.
template <typename W>
void stored_row(const uint8_t* group, size_t n_blocks, size_t lane, uint8_t* row) {
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t* block = row + b * W::kBytes;
    const Run<W> at(b, n_blocks);
    std::memcpy(block, group + at.scales + 2 * lane, 2);
    if constexpr (W::kMin) {
      std::memcpy(block + 2, group + at.scales + 2 * kGroupRows + 2 * lane, 2);
    }
    W::take(group + at.levels, lane, block + W::kHeadBytes);
  }
}

template <typename W>
void dequantize_row(const uint8_t* group, size_t lane, size_t k, float* y) {
  uint8_t* row = thread_scratch(k / kQK * W::kBytes);
  stored_row<W>(group, k / kQK, lane, row);
  ref::dequantize(W::kType, row, y, k);
}

// The stored rows' F32-activation product of each type, which the interleaved rows' dot_f32
// runs on rows restored to their stored order (so the two are equal by construction). Set by
// fill_interleaved_nibble_dots from the table it fills; indexed by the TensorType id.
DotTileFn g_stored_dot_f32[sizeof(KernelTable::weights) / sizeof(WeightKernels)] = {};

template <typename W>
void dot_f32(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  const size_t row_bytes = n_blocks * W::kBytes;
  uint8_t* rows = thread_scratch(kGroupRows * row_bytes);
  for (size_t g = 0; g < t.n_rows / kGroupRows; ++g) {
    const uint8_t* group = t.w + g * kGroupRows * t.w_stride;
    for (size_t r = 0; r < kGroupRows; ++r) stored_row<W>(group, n_blocks, r, rows + r * row_bytes);
    DotTile stored = t;
    stored.w = rows;
    stored.w_stride = row_bytes;
    stored.n_rows = kGroupRows;
    stored.y = t.y + g * kGroupRows;
    g_stored_dot_f32[static_cast<uint32_t>(W::kType)](stored);
  }
}

template <typename W>
void set(KernelTable& table) {
  WeightKernels& w = table.weights[static_cast<uint32_t>(W::kType)];
  g_stored_dot_f32[static_cast<uint32_t>(W::kType)] = w.dot_f32;
  InterleavedKernels& k = w.interleaved;
  k.rows = kGroupRows;
  k.bits = InterleavedKernels::Bits::kReference;
  k.interleave = interleave<W>;
  k.prepare = prepare_column<W::kOffset, W::kMin>;
  k.prepared_bytes = prepared_column_bytes;
  k.dot = dot<SixteenBitPairs, W>;
  k.dot_f32 = dot_f32<W>;
  k.dequantize_row = dequantize_row<W>;
}

}  // namespace
}  // namespace synapse::avx2::nibbles

namespace synapse::avx2 {

void fill_interleaved_nibble_dots(KernelTable& table) {
  nibbles::set<nibbles::Q4_0>(table);
  nibbles::set<nibbles::Q4_1>(table);
  nibbles::set<nibbles::Q5_0>(table);
  nibbles::set<nibbles::Q5_1>(table);
}

}  // namespace synapse::avx2
