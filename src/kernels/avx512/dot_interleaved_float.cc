// SPDX-License-Identifier: Apache-2.0
// F32, F16 and BF16 weights interleaved sixteen rows to a vector for the AVX-512 level
// (InterleavedKernels, kernels/kernel_table.h): one kernel for decode, batched decode and
// prefill, whose every (row, column) is one FMA chain in element order.
//
// Why: over the rows as stored, this level's decode (float_kernels.cc) sums each row in two
// 16-lane chains and a horizontal sum, while its packed prefill tile sums each row in one chain
// per lane: the routes round differently, so the service (one route for every step, so that a
// sequence's output never depends on its batch) ran prefill on the decode kernel, at ~0.7x the
// tile's speed (issue 17, item 1). Here a group of sixteen rows is stored k-major -- element i of
// the group's row l at (16 i + l) -- so lane l of a vector is row l, and each lane computes
// acc = fma(w[i], x[i], acc) for i in order from zero (InterleavedKernels::Bits::kFmaChain,
// which the tests write out with std::fma). Every route, batch, column tiling and thread count
// gives those bits. A register block is G groups x C columns: per element one weight vector per
// group (converted from F16/BF16 once) and one broadcast activation per column feed G x C FMAs --
// the packed tile's arithmetic, without the packing.
//
// Why FMA and not the reference's multiply then add (which would make the bits the
// reference's): on this machine (AMD Zen 5) the multiply-add pair held F16 prefill at ~0.8x the
// FMA kernel's speed (`kernels_bench --benchmark_filter=Matmul512/F16`, 11.8-12.9 ms against
// 15.2-16.6 ms at 512 columns); with FMA it runs level with the packed tile.
#include <cstring>

#include "kernels/avx2/simd_avx2.h"
#include "kernels/avx512/avx512_internal.h"
#include "kernels/avx512/float_elements.h"

namespace synapse::avx512 {
namespace {

using namespace simd;  // NOLINT(google-build-using-namespace): the helpers of this ISA

constexpr size_t kGroupRows = 16;  // InterleavedKernels::rows
// Decode reads this many far-apart groups side by side: each group's chain waits on an FMA
// (4 cycles) per element, so one group alone would hold decode under the memory bandwidth.
constexpr size_t kStreams = 4;
// Many columns: this many groups per register block of kMaxColumns columns (G x C = 24
// accumulators), groups taken kGroupsPerPass at a time.
constexpr size_t kBlockGroups = 2;
constexpr size_t kMaxColumns = 12;
constexpr size_t kGroupsPerPass = 4;

size_t group_bytes(size_t k, size_t element_bytes) { return kGroupRows * k * element_bytes; }

// Sixteen elements of the sixteen rows at a time through a small square (rows in, k-major out),
// so that both the rows and the group are read and written in runs: element by element straight
// into the group measured ~4 s for a 1 GB F16 model.
template <typename W>
void interleave(const uint8_t* w, size_t row_stride, size_t n_rows, size_t k, uint8_t* out) {
  constexpr size_t kSquare = kGroupRows * kGroupRows * W::kBytes;
  for (size_t g = 0; g < n_rows / kGroupRows; ++g) {
    uint8_t* group = out + g * group_bytes(k, W::kBytes);
    const uint8_t* rows = w + g * kGroupRows * row_stride;
    for (size_t i0 = 0; i0 < k; i0 += kGroupRows) {
      const size_t n = k - i0 < kGroupRows ? k - i0 : kGroupRows;
      uint8_t square[kSquare];  // [l][i]: row l's elements i0 .. i0 + n
      for (size_t l = 0; l < kGroupRows; ++l) {
        std::memcpy(square + l * kGroupRows * W::kBytes, rows + l * row_stride + i0 * W::kBytes,
                    n * W::kBytes);
      }
      uint8_t* to = group + i0 * kGroupRows * W::kBytes;
      for (size_t i = 0; i < n; ++i) {
        for (size_t l = 0; l < kGroupRows; ++l) {
          std::memcpy(to + (i * kGroupRows + l) * W::kBytes,
                      square + (l * kGroupRows + i) * W::kBytes, W::kBytes);
        }
      }
    }
  }
}

template <typename W>
void dequantize_row(const uint8_t* group, size_t lane, size_t k, float* y) {
  for (size_t i = 0; i < k; ++i) y[i] = W::load1(group + (i * kGroupRows + lane) * W::kBytes);
}

// G groups (group j at groups[j], its outputs at y[j][c * y_stride + lane]) x C columns over the
// whole row length. Each (row, column)'s arithmetic is the same whatever G and C.
template <typename W, size_t G, size_t C>
void group_kernel(const uint8_t* const (&groups)[G], size_t k, const uint8_t* x, size_t x_stride,
                  float* const (&y)[G], size_t y_stride) {
  __m512 acc[G][C];
#pragma GCC unroll 4
  for (size_t j = 0; j < G; ++j) {
#pragma GCC unroll 12
    for (size_t c = 0; c < C; ++c) acc[j][c] = _mm512_setzero_ps();
  }
  const float* xc[C];
#pragma GCC unroll 12
  for (size_t c = 0; c < C; ++c) xc[c] = reinterpret_cast<const float*>(x + c * x_stride);
  for (size_t i = 0; i < k; ++i) {
    __m512 wv[G];
#pragma GCC unroll 4
    for (size_t j = 0; j < G; ++j) wv[j] = W::load16(groups[j] + i * kGroupRows * W::kBytes);
#pragma GCC unroll 12
    for (size_t c = 0; c < C; ++c) {
      const __m512 xv = _mm512_set1_ps(xc[c][i]);
#pragma GCC unroll 4
      for (size_t j = 0; j < G; ++j) acc[j][c] = _mm512_fmadd_ps(wv[j], xv, acc[j][c]);
    }
  }
#pragma GCC unroll 4
  for (size_t j = 0; j < G; ++j) {
#pragma GCC unroll 12
    for (size_t c = 0; c < C; ++c) _mm512_storeu_ps(y[j] + c * y_stride, acc[j][c]);
  }
}

// Decode: kStreams far-apart groups side by side (each its own sequential stream), then the
// groups left over one at a time.
template <typename W>
void decode(const DotTile& t) {
  const size_t n_groups = t.n_rows / kGroupRows;
  const size_t bytes = group_bytes(t.k, W::kBytes);
  const size_t part = n_groups / kStreams;
  for (size_t g = 0; g < part; ++g) {
    const uint8_t* groups[kStreams];
    float* y[kStreams];
    for (size_t p = 0; p < kStreams; ++p) {
      groups[p] = t.w + (p * part + g) * bytes;
      y[p] = t.y + (p * part + g) * kGroupRows;
    }
    group_kernel<W, kStreams, 1>(groups, t.k, t.x, t.x_stride, y, t.y_stride);
  }
  for (size_t g = kStreams * part; g < n_groups; ++g) {
    const uint8_t* groups[1] = {t.w + g * bytes};
    float* y[1] = {t.y + g * kGroupRows};
    group_kernel<W, 1, 1>(groups, t.k, t.x, t.x_stride, y, t.y_stride);
  }
}

// G consecutive groups from g (G divides kGroupsPerPass) x C columns from c.
template <typename W, size_t G, size_t C>
void block(const DotTile& t, size_t g, size_t c) {
  const size_t bytes = group_bytes(t.k, W::kBytes);
  const uint8_t* groups[G];
  float* y[G];
  for (size_t j = 0; j < G; ++j) {
    groups[j] = t.w + (g + j) * bytes;
    y[j] = t.y + c * t.y_stride + (g + j) * kGroupRows;
  }
  group_kernel<W, G, C>(groups, t.k, t.x + c * t.x_stride, t.x_stride, y, t.y_stride);
}

// Columns C at a time over groups [g0, g1): G groups per register block while whole blocks of
// G fit, single groups for the rest.
template <typename W, size_t G, size_t C>
void cover_groups(const DotTile& t, size_t g0, size_t g1, size_t c) {
  size_t g = g0;
  for (; g + G <= g1; g += G) block<W, G, C>(t, g, c);
  for (; g < g1; ++g) block<W, 1, C>(t, g, c);
}

// Many columns: groups kGroupsPerPass at a time (they stay in L2 while every column block runs
// against them); columns twelve at a time against two groups, the rest four, two or one at a
// time against four groups (so that even two columns keep eight chains in flight: an FMA waits
// four cycles).
template <typename W>
void dot(const DotTile& t) {
  if (t.n_cols == 1) {
    decode<W>(t);
    return;
  }
  const size_t n_groups = t.n_rows / kGroupRows;
  for (size_t g0 = 0; g0 < n_groups; g0 += kGroupsPerPass) {
    const size_t g1 = n_groups - g0 < kGroupsPerPass ? n_groups : g0 + kGroupsPerPass;
    size_t c = 0;
    for (; c + kMaxColumns <= t.n_cols; c += kMaxColumns) {
      cover_groups<W, kBlockGroups, kMaxColumns>(t, g0, g1, c);
    }
    for (; c + 4 <= t.n_cols; c += 4) cover_groups<W, kGroupsPerPass, 4>(t, g0, g1, c);
    for (; c + 2 <= t.n_cols; c += 2) cover_groups<W, kGroupsPerPass, 2>(t, g0, g1, c);
    if (c < t.n_cols) cover_groups<W, kGroupsPerPass, 1>(t, g0, g1, c);
  }
}

template <typename W>
void set(KernelTable& table) {
  InterleavedKernels& k = table.weights[static_cast<uint32_t>(W::kType)].interleaved;
  k.rows = kGroupRows;
  k.bits = InterleavedKernels::Bits::kFmaChain;
  k.interleave = interleave<W>;
  k.prepare = nullptr;
  k.prepared_bytes = nullptr;
  k.dot = dot<W>;
  k.dot_f32 = dot<W>;  // the activations are F32 on both paths
  k.dequantize_row = dequantize_row<W>;
}

}  // namespace

void fill_interleaved_float_dots(KernelTable& table) {
  set<F32>(table);
  set<F16>(table);
  set<BF16>(table);
}

}  // namespace synapse::avx512
