// SPDX-License-Identifier: Apache-2.0
// Q8_0 weights interleaved eight rows to a vector (InterleavedKernels, kernels/kernel_table.h):
// the layout and the kernels, shared by the AVX2 level (dot_interleaved.cc: vpsignb, vpmaddubsw,
// vpmaddwd, vpaddd per slice) and its AVX-VNNI variant (dot_interleaved_vnni.cc: one vpdpbusd).
// The two differ only in the policy `M` of how a slice's products join a lane's sum; the
// translation unit that includes this header gives its own ISA flags. Internal linkage, like
// simd_avx2.h: each includer keeps its copy.
//
// Why interleave: with rows as stored, each (row, column, block) costs five vector ops --
// vpsignb, vpmaddubsw, vpmaddwd, vcvtdq2ps and an FMA -- and on Zen 3 the first three share the
// two integer-multiply pipes, so the tiles ran at ~2.3 cycles per (row, column, block) in L1.
// With eight rows in the eight 32-bit lanes of a vector, each lane adds up its row's whole block
// in integers and the conversion and scaling run once per eight rows: ~1.7 cycles (the three
// multiply-pipe ops are the bound). Measured in a micro-benchmark before this file was written:
// 0.71 -> 0.53 ns per (row, column, block) at 3.2 GHz.
//
// Layout of a group of eight rows (the bytes of the eight rows, 272 per block), in runs of four
// blocks (interleaved_runs.h): the run's levels, 256 bytes per block -- for each four-element
// slice s = 0..7 of the block the eight rows' four levels of that slice (value + M::kOffset: 0
// for AVX2's signed bytes, 128 for the unsigned bytes vpdpbusd multiplies; 32 bytes, lane l =
// row l) -- then its scales, eight F16 per block. A column's four activation bytes of slice s
// are broadcast to all lanes, so lane l multiplies row l's slice. A run is 1088 bytes, seventeen
// cache lines, so no 32-byte load of levels splits a line (272-byte blocks with their scales in
// front split a quarter of them), and in cache the runs measured level with the group's scales
// kept apart after all its levels (kernels_bench, SYNAPSE_BENCH_IN_CACHE=1, 4864 x 896: 65.6
// against 67.0 us one thread, prefill 13.9 against 14.1 ms).
//
// Activations are prepared once per column (prepared_columns.h, offset M::kOffset): the int8
// values, 64-byte aligned, then per block the correction -offset * sum(x) (where a lane's sum
// starts: it makes a sum over levels a sum over values, exactly) and dx as a float. Read from
// the Q8_0 blocks themselves, each (group, block, column) converted dx from F16 again (vpinsrw +
// vcvtph2ps per column): AVX2's batched decode measured 4-6% faster prepared (kernels_bench
// BatchedDecode 896 x 4864 cols:4 / cols:8, SYNAPSE_BENCH_IN_CACHE=1, medians of 3: 105.7 ->
// 102.0 / 211.4 -> 198.9 us); decode level.
//
// Arithmetic: per (row, column) and block, the exact integer sum of the 32 products, then
// block = float(sum) * (dw * dx) and acc = acc + block, blocks in order -- the reference's
// dot_q8_0 step for step (no FMA), so every route of either policy equals the scalar reference
// bit for bit, whatever the batch, the tiling or the threads.
#pragma once

#include <cstring>

#include "kernels/avx2/interleaved_runs.h"
#include "kernels/avx2/prepared_columns.h"
#include "kernels/avx2/simd_avx2.h"

namespace synapse::avx2::q8 {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 32;
constexpr size_t kQ8Bytes = 34;  // BlockQ8_0: F16 d, 32 int8
constexpr size_t kGroupRows = 8;
constexpr size_t kSlices = kQK / 4;               // four-element slices per block
constexpr size_t kScaleBytes = kGroupRows * 2;    // eight F16 scales per block
constexpr size_t kLevelBytes = kGroupRows * kQK;  // 256 per block
// Rows a pass of many columns keeps in L2 (24 rows of k = 4864 are 124 KiB) while every column
// group runs against them, so the weights come from memory once per call.
constexpr size_t kGroupsPerPass = 3;
// Every row length. Zen 3 (stop 38) measured the 896-element rows' decode out of cache 16-29%
// slower interleaved than as stored, with the layout then (all of a group's scales after all its
// levels: a second stream per group), so only rows of 2048+ elements were interleaved. In runs
// (interleaved_runs.h), on the SYNAPSE_ISA=avx2 stand-in (Zen 5), kernels_bench's Matvec of the
// 896 x 4864 and 896 x 151936 matrices reads level with the stored rows (medians of 5 rounds,
// 2 threads: 97.6 against 131 us, 3541 against 3421 us; 1 thread 148 / 136 us, 4417 / 4226 us),
// while batched decode is 1.5-2.2x faster and the 0.5B shape's pp512 +30-40%.
// Decode streams and the prefetch distance of each (a group's block is 272 bytes, ~4.25 cache
// lines); without the prefetch the decode of the 896 x 151936 head measured ~40% slower on Zen 3
// (the layout then). On the stand-in two streams read faster than four (three alternating
// rounds, 2 threads: 896 x 4864 108-121 against 145-164 us).
constexpr size_t kStreams = 2;
constexpr size_t kPrefetchBytes = 2048;

using Run = RunAt<kLevelBytes, kScaleBytes>;

template <typename M>
void interleave(const uint8_t* w, size_t row_stride, size_t n_rows, size_t k, uint8_t* out) {
  const size_t n_blocks = k / kQK;
  for (size_t g = 0; g < n_rows / kGroupRows; ++g) {
    uint8_t* group = out + g * n_blocks * (kLevelBytes + kScaleBytes);
    for (size_t b = 0; b < n_blocks; ++b) {
      const Run at(b, n_blocks);
      for (size_t lane = 0; lane < kGroupRows; ++lane) {
        const uint8_t* block = w + (g * kGroupRows + lane) * row_stride + b * kQ8Bytes;
        std::memcpy(group + at.scales + 2 * lane, block, 2);
        for (size_t s = 0; s < kSlices; ++s) {
          for (size_t j = 0; j < 4; ++j) {
            group[at.levels + s * 32 + 4 * lane + j] =
                static_cast<uint8_t>(block[2 + 4 * s + j] + M::kOffset);
          }
        }
      }
    }
  }
}

// Blocks [b0, b0 + n_blocks) of row `lane` of a group of `group_blocks` blocks.
template <typename M>
void dequantize_blocks(const uint8_t* group, size_t group_blocks, size_t lane, size_t b0,
                       size_t n_blocks, float* y) {
  for (size_t b = b0; b < b0 + n_blocks; ++b, y += kQK) {
    const Run at(b, group_blocks);
    const float d = f16_to_f32(load_u16(group + at.scales + 2 * lane));
    for (size_t s = 0; s < kSlices; ++s) {
      for (size_t j = 0; j < 4; ++j) {
        const auto q = static_cast<int8_t>(group[at.levels + s * 32 + 4 * lane + j] - M::kOffset);
        y[4 * s + j] = static_cast<float>(q) * d;
      }
    }
  }
}

template <typename M>
void dequantize_row(const uint8_t* group, size_t lane, size_t k, float* y) {
  dequantize_blocks<M>(group, k / kQK, lane, 0, k / kQK, y);
}

// The four activation bytes of slice s of a prepared column's block, in every lane.
inline __m256i broadcast_slice(const uint8_t* x_values, size_t s) {
  int32_t slice;
  std::memcpy(&slice, x_values + 4 * s, sizeof(slice));
  return _mm256_set1_epi32(slice);
}

// G groups (8G rows; group i at w + i * group_stride, its outputs at y + i * y_group_stride)
// x C prepared columns (their per-block pairs at x_blocks).
template <typename M, size_t G, size_t C>
void group_kernel(const uint8_t* w, size_t group_stride, const uint8_t* x, size_t x_stride,
                  size_t x_blocks, size_t n_blocks, float* y, size_t y_stride,
                  size_t y_group_stride, Ahead ahead = {}) {
  const size_t ahead_per_run = ahead.per_run((n_blocks + kRunBlocks - 1) / kRunBlocks);
  __m256 acc[G][C];
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
  }
  for (size_t b0 = 0; b0 < n_blocks; b0 += kRunBlocks) {
    const Run run(b0, n_blocks);
#pragma GCC unroll 8
    for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 32
      for (size_t line = 0; line < Run::kRunBytes; line += 64) {
        _mm_prefetch(
            reinterpret_cast<const char*>(w + i * group_stride + run.run + kPrefetchBytes + line),
            _MM_HINT_T0);
      }
    }
    ahead.prefetch_run(b0 / kRunBlocks, ahead_per_run);
    for (size_t b = b0; b < b0 + run.run_blocks; ++b) {
      const size_t levels = run.levels_of(b - b0);
      const size_t scales = run.scales_of(b - b0);
      __m256i sums[G][C];
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) sums[i][c] = M::start(x + c * x_stride + x_blocks + 8 * b);
      }
#pragma GCC unroll 8
      for (size_t s = 0; s < kSlices; ++s) {
#pragma GCC unroll 8
        for (size_t i = 0; i < G; ++i) {
          const typename M::Levels q(load_256(w + i * group_stride + levels + 32 * s));
#pragma GCC unroll 8
          for (size_t c = 0; c < C; ++c) {
            M::add(sums[i][c], q, broadcast_slice(x + c * x_stride + b * kQK, s));
            in_order(sums[i][c]);
          }
        }
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        const __m256 dw = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i * group_stride + scales)));
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          float dx_value;
          std::memcpy(&dx_value, x + c * x_stride + x_blocks + 8 * b + 4, sizeof(dx_value));
          const __m256 dx = _mm256_set1_ps(dx_value);
          const __m256 block = _mm256_mul_ps(_mm256_cvtepi32_ps(sums[i][c]), _mm256_mul_ps(dw, dx));
          acc[i][c] = _mm256_add_ps(acc[i][c], block);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c)
      _mm256_storeu_ps(y + c * y_stride + i * y_group_stride, acc[i][c]);
  }
}

// Groups [g0, g0 + n_groups) against columns [c0, c0 + C).
template <typename M, size_t C>
void cover_groups(const DotTile& t, size_t g0, size_t n_groups, size_t c0, size_t n_blocks,
                  Ahead ahead = {}) {
  const size_t x_blocks = PreparedColumn(t.k).blocks;
  const size_t group_stride = kGroupRows * t.w_stride;
  const uint8_t* x = t.x + c0 * t.x_stride;
  float* y = t.y + c0 * t.y_stride;
  // One column: far-apart groups side by side, kStreams sequential weight streams in flight
  // (adjacent groups measured ~35% slower out of cache on the 896 x 151936 head).
  const size_t part = C == 1 ? n_groups / kStreams : 0;
  const size_t calls = part + (n_groups - kStreams * part);  // each takes a share of `ahead`
  size_t call = 0;
  for (; call < part; ++call) {
    const size_t g = g0 + call;
    group_kernel<M, kStreams, 1>(t.w + g * group_stride, part * group_stride, x, t.x_stride,
                                 x_blocks, n_blocks, y + g * kGroupRows, t.y_stride,
                                 part * kGroupRows, ahead.part(call, calls));
  }
  for (size_t g = g0 + kStreams * part; g < g0 + n_groups; ++g, ++call) {
    group_kernel<M, 1, C>(t.w + g * group_stride, group_stride, x, t.x_stride, x_blocks, n_blocks,
                          y + g * kGroupRows, t.y_stride, kGroupRows, ahead.part(call, calls));
  }
}

template <typename M>
void dot(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  const size_t n_groups = t.n_rows / kGroupRows;
  if (t.n_cols == 1) {
    cover_groups<M, 1>(t, 0, n_groups, 0, n_blocks);
    return;
  }
  const size_t group_bytes = kGroupRows * t.w_stride;
  const size_t column_blocks = (t.n_cols + 3) / 4;
  for (size_t g0 = 0; g0 < n_groups; g0 += kGroupsPerPass) {
    const size_t groups = n_groups - g0 < kGroupsPerPass ? n_groups - g0 : kGroupsPerPass;
    const Ahead next = next_pass<kGroupsPerPass>(t.w, g0 + groups, n_groups, group_bytes);
    auto ahead = [&](size_t c) { return next.part(c / 4, column_blocks); };
    size_t c = 0;
    for (; c + 4 <= t.n_cols; c += 4) cover_groups<M, 4>(t, g0, groups, c, n_blocks, ahead(c));
    switch (t.n_cols - c) {
      case 3:
        cover_groups<M, 3>(t, g0, groups, c, n_blocks, ahead(c));
        break;
      case 2:
        cover_groups<M, 2>(t, g0, groups, c, n_blocks, ahead(c));
        break;
      case 1:
        cover_groups<M, 1>(t, g0, groups, c, n_blocks, ahead(c));
        break;
      default:
        break;
    }
  }
}

// F32 activations: each row's blocks dequantized (the values dequantize() gives) and multiplied
// into eight float lanes per column, 32 elements after 32 -- the order of the stored rows'
// dot_f32 (dot_dequantized in dot_float.cc), so the result is the same.
template <typename M>
void dot_f32(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  const size_t group_stride = kGroupRows * t.w_stride;
  alignas(32) float values[kQK];
  for (size_t r = 0; r < t.n_rows; ++r) {
    const uint8_t* group = t.w + r / kGroupRows * group_stride;
    const size_t lane = r % kGroupRows;
    for (size_t c = 0; c < t.n_cols; ++c) {
      const auto* x = reinterpret_cast<const float*>(t.x + c * t.x_stride);
      __m256 acc = _mm256_setzero_ps();
      for (size_t b = 0; b < n_blocks; ++b) {
        dequantize_blocks<M>(group, n_blocks, lane, b, 1, values);
        for (size_t j = 0; j < kQK; j += 8) {
          acc = _mm256_fmadd_ps(_mm256_load_ps(values + j), _mm256_loadu_ps(x + b * kQK + j), acc);
        }
      }
      t.y[c * t.y_stride + r] = hsum(acc);
    }
  }
}

// The layout's table entries for policy M.
template <typename M>
void set_kernels(InterleavedKernels& k) {
  k.rows = kGroupRows;
  k.bits = InterleavedKernels::Bits::kReference;
  k.interleave = interleave<M>;
  k.prepare = prepare_column<M::kOffset, false>;
  k.prepared_bytes = prepared_column_bytes;
  k.dot = dot<M>;
  k.dot_f32 = dot_f32<M>;
  k.dequantize_row = dequantize_row<M>;
}

}  // namespace
}  // namespace synapse::avx2::q8
