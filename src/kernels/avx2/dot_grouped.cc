// SPDX-License-Identifier: Apache-2.0
// Q5_0 and Q5_1 weights with each row's scales grouped (InterleavedKernels with rows = 1,
// kernels/kernel_table.h): a row's blocks in groups of eight, a group being its blocks' F16
// scales, then their F16 mins (Q5_1), then their level bytes -- the row's own bytes in
// another order (GroupedRows in legacy_blocks.h). Q5's fifth bits are stored so that one shift
// and one AND find each element's (q5_grouped_high_bits).
//
// Why: decode of these types is compute-bound on AVX2. As stored, each (row, block) pays a
// scale conversion, a multiply and a broadcast, and Q5_0 a byte shuffle, a compare and a mask
// for its fifth bits, beside the five ops of the dot product itself; grouped, the scales of
// eight blocks convert and multiply in one op each, and the fifth bits cost two ops fewer.
//
// Arithmetic: the stored rows' (legacy_blocks.h) step for step, so every route over grouped rows
// equals the product over the rows as stored bit for bit -- decode, batched decode, prefill
// (unpacked from the grouped rows into the same scratch format), whatever the threads.
#include <type_traits>

#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/legacy_blocks.h"
#include "kernels/matmul.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/thread_scratch.h"

namespace synapse::avx2 {
namespace {

using namespace legacy;  // NOLINT(google-build-using-namespace): this file's kernels

// Copies a Q5 block's payload (after its header), its fifth bits moved from the stored order to
// the grouped one (kToGrouped) or back.
template <typename W, bool kToGrouped>
void copy_payload(const uint8_t* from, uint8_t* to) {
  static_assert(std::is_same_v<W, Q5_0> || std::is_same_v<W, Q5_1>, "the Q5 types are grouped");
  std::memcpy(to, from, W::kBytes - W::kHeader);
  const uint32_t in = load_u32(from);
  uint32_t out = 0;
  for (uint32_t e = 0; e < 32; ++e) {
    out |=
        kToGrouped ? ((in >> e) & 1u) << q5_grouped_bit(e) : ((in >> q5_grouped_bit(e)) & 1u) << e;
  }
  std::memcpy(to, &out, 4);
}

template <typename W>
void group_row(const uint8_t* row, size_t n_blocks, uint8_t* out) {
  using G = GroupedRows<W>;
  for (size_t b0 = 0; b0 < n_blocks; b0 += kGroup) {
    const size_t m = n_blocks - b0 < kGroup ? n_blocks - b0 : kGroup;
    uint8_t* group = out + b0 * W::kBytes;
    for (size_t j = 0; j < m; ++j) {
      const uint8_t* block = row + (b0 + j) * W::kBytes;
      std::memcpy(group + 2 * j, block, 2);                                        // the scale
      if constexpr (W::kHasMin) std::memcpy(group + 2 * m + 2 * j, block + 2, 2);  // the min
      copy_payload<W, true>(block + W::kHeader, group + m * W::kHeader + j * G::kPayload);
    }
  }
}

// Block b of a grouped row, as stored.
template <typename W>
void stored_block(const uint8_t* row, size_t n_blocks, size_t b, uint8_t* block) {
  using G = GroupedRows<W>;
  const size_t b0 = b / kGroup * kGroup, j = b - b0;
  const size_t m = n_blocks - b0 < kGroup ? n_blocks - b0 : kGroup;
  const uint8_t* group = row + b0 * W::kBytes;
  std::memcpy(block, group + 2 * j, 2);
  if constexpr (W::kHasMin) std::memcpy(block + 2, group + 2 * m + 2 * j, 2);
  copy_payload<W, false>(G::payload(group, 0, m, j), block + W::kHeader);
}

template <typename W>
void interleave(const uint8_t* w, size_t row_stride, size_t n_rows, size_t k, uint8_t* out) {
  const size_t n_blocks = k / kQK;
  for (size_t r = 0; r < n_rows; ++r) {
    group_row<W>(w + r * row_stride, n_blocks, out + r * n_blocks * W::kBytes);
  }
}

template <TensorType kType, typename W>
void dequantize_row(const uint8_t* row, size_t /*lane*/, size_t k, float* y) {
  uint8_t block[W::kBytes];
  for (size_t b = 0; b < k / kQK; ++b) {
    stored_block<W>(row, k / kQK, b, block);
    ref::dequantize(kType, block, y + b * kQK, kQK);
  }
}

// Prefill: kRowsPerTile rows at a time unpacked into this thread's scratch (grown once), as the
// stored rows' tile does into the matmul's.
template <typename W>
void unpacked_tiles(const DotTile& t) {
  using L = GroupedRows<W>;
  uint8_t* const scratch = thread_scratch(tile_scratch_bytes<L>(t.k));
  for (size_t r0 = 0; r0 < t.n_rows; r0 += kRowsPerTile) {
    DotTile rows = t;
    rows.w = t.w + r0 * t.w_stride;
    rows.n_rows = t.n_rows - r0 < kRowsPerTile ? t.n_rows - r0 : kRowsPerTile;
    rows.y = t.y + r0;
    tile<L>(rows, scratch);
  }
}

template <typename W>
void grouped_dot(const DotTile& t) {
  if (t.n_cols >= kMatmulMinColumns) {
    unpacked_tiles<W>(t);
    return;
  }
  dot<GroupedRows<W>>(t);
}

// F32 activations: each block dequantized (the values dequantize() gives) and multiplied into
// eight float lanes per column, 32 elements after 32 -- the order of the stored rows' dot_f32
// (dot_dequantized in dot_float.cc), so the result is the same.
template <TensorType kType, typename W>
void grouped_dot_f32(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  uint8_t block[W::kBytes];
  alignas(32) float values[kQK];
  for (size_t r = 0; r < t.n_rows; ++r) {
    const uint8_t* row = t.w + r * t.w_stride;
    for (size_t c = 0; c < t.n_cols; ++c) {
      const auto* x = reinterpret_cast<const float*>(t.x + c * t.x_stride);
      __m256 acc = _mm256_setzero_ps();
      for (size_t b = 0; b < n_blocks; ++b) {
        stored_block<W>(row, n_blocks, b, block);
        ref::dequantize(kType, block, values, kQK);
        for (size_t j = 0; j < kQK; j += 8) {
          acc = _mm256_fmadd_ps(_mm256_load_ps(values + j), _mm256_loadu_ps(x + b * kQK + j), acc);
        }
      }
      t.y[c * t.y_stride + r] = hsum(acc);
    }
  }
}

template <TensorType kType, typename W>
void set(KernelTable& table) {
  InterleavedKernels& k = table.weights[static_cast<uint32_t>(kType)].interleaved;
  k.rows = 1;
  k.min_k = 0;
  k.bits = InterleavedKernels::Bits::kStoredRows;
  k.interleave = interleave<W>;
  k.dot = grouped_dot<W>;
  k.dot_f32 = grouped_dot_f32<kType, W>;
  k.dequantize_row = dequantize_row<kType, W>;
}

}  // namespace

// Q5 only: the four-bit types measured slower grouped end to end (0.5B-shaped Q4_0 file, pp512
// / tg128 tokens/s grouped against as stored, alternating: 150 / 56 against 168 / 65), their
// levels costing no shuffle to begin with.
void fill_grouped_dots(KernelTable& table) {
  set<TensorType::kQ5_0, Q5_0>(table);
  set<TensorType::kQ5_1, Q5_1>(table);
}

}  // namespace synapse::avx2
