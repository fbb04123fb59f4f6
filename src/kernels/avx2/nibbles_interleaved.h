// SPDX-License-Identifier: Apache-2.0
// Q4_0, Q4_1, Q5_0 and Q5_1 weights interleaved eight rows to a vector on the AVX2 level: the
// layout's types and the kernels over it, shared by the AVX2 kernels (dot_interleaved_nibbles.cc,
// which also rearranges and restores rows) and their AVX-VNNI variant
// (dot_interleaved_nibbles_vnni.cc). The kernels take a policy P: how a slice's products join a
// lane's sum (P::add), and whether they first gather in sixteen bits (P::kPairs). The
// translation unit that includes this header gives its own ISA flags; internal linkage, like
// simd_avx2.h. dot_interleaved_nibbles.cc says why the layout is what it is.
#pragma once

#include <cstring>

#include "kernels/avx2/interleaved_runs.h"
#include "kernels/avx2/prepared_columns.h"
#include "kernels/avx2/simd_avx2.h"
#include "kernels/kernel_table.h"

namespace synapse::avx2::nibbles {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kQK = 32;
constexpr size_t kGroupRows = 8;
constexpr size_t kMaxColumns = 4;
// Groups a pass of many columns keeps in L2 (three groups of k = 4864 are 66 KiB) while every
// column block runs against them, so the weights come from memory once per call.
constexpr size_t kGroupsPerPass = 3;
// Decode reads this many far-apart groups side by side, each a sequential stream prefetched
// this far ahead.
constexpr size_t kStreams = 2;
constexpr size_t kPrefetchBytes = 2048;

// The types: a stored block's head (F16 d, and m for the types with a min) and bytes, the level
// that represents zero, and how a block's payload (after the head) sits in a group's levels:
// the four vectors of nibble bytes (vector j, lane l: row l's stored bytes 4j..4j+3, nothing
// rewritten), then for the five-bit types one vector of fifth bits, transposed so that byte t of
// lane l holds at bit s the fifth bit of element 4s + t (the byte of slice s's vector that
// element lands in): one shift moves a slice's bits to bit 4 of every byte.
template <TensorType kT, int kOff, bool kWithMin, bool kFive>
struct Blocks {
  static constexpr TensorType kType = kT;
  static constexpr int kOffset = kOff;
  static constexpr bool kMin = kWithMin;
  static constexpr bool kFifthBits = kFive;
  static constexpr size_t kHeadBytes = kMin ? 4 : 2;
  static constexpr size_t kBytes = kHeadBytes + (kFive ? 4 : 0) + 16;
  static constexpr size_t kLevelBytes = kGroupRows * 16 + (kFive ? 32 : 0);
  // Slices whose sixteen-bit product pairs add up exactly: 8 * 2 * 15 * 128 = 30720 for levels
  // below 16, 4 * 2 * 31 * 128 = 31744 for levels below 32 (both < 2^15).
  static constexpr size_t kSlicesPerSum = kFive ? 4 : 8;
  static void put(const uint8_t* payload, size_t lane, uint8_t* levels) {
    const uint8_t* qs = payload + (kFive ? 4 : 0);
    for (size_t j = 0; j < 4; ++j) std::memcpy(levels + 32 * j + 4 * lane, qs + 4 * j, 4);
    if constexpr (kFive) {
      const uint32_t qh = load_u32(payload);
      uint8_t high[4] = {};
      for (uint32_t e = 0; e < kQK; ++e) {
        high[e % 4] = static_cast<uint8_t>(high[e % 4] | (((qh >> e) & 1u) << (e / 4)));
      }
      std::memcpy(levels + 128 + 4 * lane, high, 4);
    }
  }
  static void take(const uint8_t* levels, size_t lane, uint8_t* payload) {
    uint8_t* qs = payload + (kFive ? 4 : 0);
    for (size_t j = 0; j < 4; ++j) std::memcpy(qs + 4 * j, levels + 32 * j + 4 * lane, 4);
    if constexpr (kFive) {
      uint32_t qh = 0;
      for (uint32_t e = 0; e < kQK; ++e) {
        qh |= ((static_cast<uint32_t>(levels[128 + 4 * lane + e % 4]) >> (e / 4)) & 1u) << e;
      }
      std::memcpy(payload, &qh, 4);
    }
  }
};
// NOLINTBEGIN(readability-identifier-naming): named as the GGUF types
using Q4_0 = Blocks<TensorType::kQ4_0, 8, false, false>;
using Q4_1 = Blocks<TensorType::kQ4_1, 0, true, false>;
using Q5_0 = Blocks<TensorType::kQ5_0, 16, false, true>;
using Q5_1 = Blocks<TensorType::kQ5_1, 0, true, true>;
// NOLINTEND(readability-identifier-naming)

// A block's scales in a run: eight F16 d (and eight m).
template <typename W>
constexpr size_t kScaleBytes = kGroupRows * 2 * (W::kMin ? 2 : 1);
template <typename W>
using Run = RunAt<W::kLevelBytes, kScaleBytes<W>>;

// Bit s of every byte of the fifth bits moved to bit 4, the rest cleared: slice s's 16s to OR
// into its levels. (Sixteen-bit shifts: a bit carried into the next byte lands outside bit 4.)
inline __m256i fifth_bit(__m256i fifth, size_t s) {
  const int up = 4 - static_cast<int>(s);
  const __m256i moved = up >= 0 ? _mm256_slli_epi16(fifth, up) : _mm256_srli_epi16(fifth, -up);
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}

// G groups (eight rows each: group i at groups[i], its outputs at y[i][c * y_stride + lane]) x C
// prepared columns over all blocks. Each (row, column)'s arithmetic is the same whatever G and C.
template <typename P, typename W, size_t G, size_t C>
void group_kernel(const uint8_t* const (&groups)[G], size_t n_blocks, const uint8_t* x,
                  size_t x_stride, size_t x_blocks, float* const (&y)[G], size_t y_stride) {
  __m256 acc[G][C];
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
  }
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (size_t b0 = 0; b0 < n_blocks; b0 += kRunBlocks) {
    const Run<W> run(b0, n_blocks);
#pragma GCC unroll 8
    for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 16
      for (size_t line = 0; line < Run<W>::kRunBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(groups[i] + run.run + kPrefetchBytes + line),
                     _MM_HINT_T0);
      }
    }
    for (size_t in_run = 0; in_run < run.run_blocks; ++in_run) {
      const size_t b = b0 + in_run;
      // P::kPairs: sixteen-bit sums of the block's slices per (group, column), exact for
      // kSlicesPerSum slices, gathered into 32-bit sums after every kSlicesPerSum. Otherwise the
      // slices go straight into the 32-bit sums.
      constexpr size_t kVectorsPerSum = W::kSlicesPerSum / 2;
      __m256i pairs[G][C], sums[G][C];
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          if constexpr (P::kPairs) {
            pairs[i][c] = _mm256_setzero_si256();  // sums start at the first gather
          } else {
            sums[i][c] = _mm256_setzero_si256();
          }
        }
      }
#pragma GCC unroll 4
      for (size_t j = 0; j < 4; ++j) {
#pragma GCC unroll 8
        for (size_t i = 0; i < G; ++i) {
          const uint8_t* levels = groups[i] + run.levels_of(in_run);
          const __m256i packed = load_256(levels + 32 * j);
          __m256i low = _mm256_and_si256(packed, low_nibbles);
          __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibbles);
          if constexpr (W::kFifthBits) {
            const __m256i fifth = load_256(levels + 128);
            low = _mm256_or_si256(low, fifth_bit(fifth, j));
            high = _mm256_or_si256(high, fifth_bit(fifth, 4 + j));
          }
#pragma GCC unroll 8
          for (size_t c = 0; c < C; ++c) {
            const uint8_t* xq = x + c * x_stride + b * kQK;
            int32_t slice_low, slice_high;
            std::memcpy(&slice_low, xq + 4 * j, 4);
            std::memcpy(&slice_high, xq + 16 + 4 * j, 4);
            P::add(P::kPairs ? pairs[i][c] : sums[i][c], low, _mm256_set1_epi32(slice_low), high,
                   _mm256_set1_epi32(slice_high));
          }
        }
        if constexpr (P::kPairs) {
          if ((j + 1) % kVectorsPerSum != 0) continue;
#pragma GCC unroll 8
          for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
            for (size_t c = 0; c < C; ++c) {
              const __m256i part = _mm256_madd_epi16(pairs[i][c], ones16);
              sums[i][c] = j + 1 == kVectorsPerSum ? part : _mm256_add_epi32(sums[i][c], part);
              pairs[i][c] = _mm256_setzero_si256();
            }
          }
        }
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < G; ++i) {
        const uint8_t* scales = groups[i] + run.scales_of(in_run);
        const __m256 dw =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
        __m256 mw = _mm256_setzero_ps();
        if constexpr (W::kMin) {
          mw = _mm256_cvtph_ps(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 2 * kGroupRows)));
        }
#pragma GCC unroll 8
        for (size_t c = 0; c < C; ++c) {
          const uint8_t* head = x + c * x_stride + x_blocks + 8 * b;
          float dx;
          std::memcpy(&dx, head + 4, 4);
          __m256i sum = sums[i][c];
          __m256 block;
          if constexpr (W::kMin) {
            float sum_x;
            std::memcpy(&sum_x, head, 4);
            block = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(dx)));
            block = _mm256_add_ps(
                block, _mm256_mul_ps(_mm256_set1_ps(sum_x), _mm256_mul_ps(mw, _mm256_set1_ps(dx))));
          } else {
            int32_t correction;
            std::memcpy(&correction, head, 4);
            sum = _mm256_add_epi32(sum, _mm256_set1_epi32(correction));
            block = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(dx)));
          }
          acc[i][c] = _mm256_add_ps(acc[i][c], block);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) _mm256_storeu_ps(y[i] + c * y_stride, acc[i][c]);
  }
}

// Decode: kStreams far-apart groups side by side (their own sequential streams in the
// out-of-order window), then the groups left over one at a time.
template <typename P, typename W>
void decode(const DotTile& t, size_t n_blocks, size_t x_blocks) {
  const size_t group_bytes = kGroupRows * t.w_stride;
  const size_t n_groups = t.n_rows / kGroupRows;
  const size_t part = n_groups / kStreams;
  for (size_t g = 0; g < part; ++g) {
    const uint8_t* groups[kStreams];
    float* y[kStreams];
    for (size_t p = 0; p < kStreams; ++p) {
      groups[p] = t.w + (p * part + g) * group_bytes;
      y[p] = t.y + (p * part + g) * kGroupRows;
    }
    group_kernel<P, W, kStreams, 1>(groups, n_blocks, t.x, t.x_stride, x_blocks, y, t.y_stride);
  }
  for (size_t g = kStreams * part; g < n_groups; ++g) {
    const uint8_t* groups[1] = {t.w + g * group_bytes};
    float* y[1] = {t.y + g * kGroupRows};
    group_kernel<P, W, 1, 1>(groups, n_blocks, t.x, t.x_stride, x_blocks, y, t.y_stride);
  }
}

template <typename P, typename W>
void dot(const DotTile& t) {
  const size_t n_blocks = t.k / kQK;
  const size_t n_groups = t.n_rows / kGroupRows;
  const size_t group_bytes = kGroupRows * t.w_stride;
  const size_t x_blocks = PreparedColumn(t.k).blocks;
  if (t.n_cols == 1) {
    decode<P, W>(t, n_blocks, x_blocks);
    return;
  }
  for (size_t g0 = 0; g0 < n_groups; g0 += kGroupsPerPass) {
    const size_t pass = n_groups - g0 < kGroupsPerPass ? n_groups - g0 : kGroupsPerPass;
    for_column_blocks<kMaxColumns>(t.n_cols, [&]<size_t C>(size_t c) {
      for (size_t g = g0; g < g0 + pass; ++g) {
        const uint8_t* groups[1] = {t.w + g * group_bytes};
        float* y[1] = {t.y + c * t.y_stride + g * kGroupRows};
        group_kernel<P, W, 1, C>(groups, n_blocks, t.x + c * t.x_stride, t.x_stride, x_blocks, y,
                                 t.y_stride);
      }
    });
  }
}

}  // namespace
}  // namespace synapse::avx2::nibbles
