// SPDX-License-Identifier: Apache-2.0
// What the VNNI K-quant layouts (dot_interleaved_q4k_vnni.cc, dot_interleaved_q6k_vnni.cc,
// dot_interleaved_iq4xs_vnni.cc) share: rearranging rows and restoring them, the decode / batched
// / prefill drivers and the F32 path, over a layout L that says where a row's bytes go and
// computes groups of sixteen rows:
//   kType, kBlockBytes (one super-block of one row), kRecordBytes (a prepared column's record per
//   super-block), kRows (rows whose super-blocks sit together in one unit: 16, or 32 when one
//   group's unit would not be a whole number of cache lines), kMaxColumns (the widest register
//   block of columns), kStreams (far-apart units decode reads side by side: measured per layout),
//   for_each_piece(r, piece): piece(unit offset, block offset, bytes) for row r (< kRows),
//   prepare(x, k, out): a column of Q8_K activations as group_kernel reads it,
//   add_super_blocks<G, C>(w, n_sb, groups, x, x_stride, records, acc): G groups of sixteen rows
//   (their indices) x C columns over all super-blocks, added to acc[G][C] (lane = row), each
//   (row, column)'s arithmetic the same whatever G and C.
// Internal linkage, like simd_avx2.h: no copy compiled with ISA flags can be picked by the linker
// for another translation unit.
#pragma once

#include <cstring>

#include "kernels/avx2/simd_avx2.h"
#include "kernels/kernel_table.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/thread_scratch.h"

namespace synapse::avx512::interleaved_k {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

constexpr size_t kQK = 256;
constexpr size_t kQ8KBytes = 292;     // BlockQ8_K: float d, 256 int8, 16 int16 bsums
constexpr size_t kQ8KSums = 4 + kQK;  // where its bsums (sums of 16 elements) start
constexpr size_t kGroupRows = 16;
// Groups a pass of many columns keeps in L2 while every column block runs against them.
constexpr size_t kGroupsPerPass = 2;
// Decode prefetches each group's lines this far ahead.
constexpr size_t kPrefetchBytes = 4096;

template <typename L>
constexpr size_t kUnitBytes = L::kRows* L::kBlockBytes;

inline __m512i broadcast_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// A prepared column: k int8 values, then a record per super-block.
inline size_t records_offset(size_t k) { return (k + 63) / 64 * 64; }
template <typename L>
size_t prepared_bytes(size_t k) {
  return records_offset(k) + k / kQK * L::kRecordBytes;
}

template <typename L>
void interleave(const uint8_t* w, size_t row_stride, size_t n_rows, size_t k, uint8_t* out) {
  const size_t n_sb = k / kQK;
  for (size_t p = 0; p < n_rows / L::kRows; ++p) {
    for (size_t r = 0; r < L::kRows; ++r) {
      const uint8_t* row = w + (p * L::kRows + r) * row_stride;
      for (size_t sb = 0; sb < n_sb; ++sb) {
        uint8_t* unit = out + (p * n_sb + sb) * kUnitBytes<L>;
        L::for_each_piece(r, [&](size_t at, size_t from, size_t bytes) {
          std::memcpy(unit + at, row + sb * L::kBlockBytes + from, bytes);
        });
      }
    }
  }
}

// Row r (< L::kRows) of the rows whose units start at `units`, as stored.
template <typename L>
void stored_row(const uint8_t* units, size_t n_sb, size_t r, uint8_t* row) {
  for (size_t sb = 0; sb < n_sb; ++sb) {
    const uint8_t* unit = units + sb * kUnitBytes<L>;
    L::for_each_piece(r, [&](size_t at, size_t from, size_t bytes) {
      std::memcpy(row + sb * L::kBlockBytes + from, unit + at, bytes);
    });
  }
}

template <typename L>
void dequantize_row(const uint8_t* units, size_t r, size_t k, float* y) {
  uint8_t* row = thread_scratch(k / kQK * L::kBlockBytes);
  stored_row<L>(units, k / kQK, r, row);
  ref::dequantize(L::kType, row, y, k);
}

// G groups x C columns: the layout's sums from zero, stored at y[i] + c * y_stride.
template <typename L, size_t G, size_t C>
void group_kernel(const uint8_t* w, size_t n_sb, const size_t (&groups)[G], const uint8_t* x,
                  size_t x_stride, size_t records, float* const (&y)[G], size_t y_stride) {
  __m512 acc[G][C];
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  L::template add_super_blocks<G, C>(w, n_sb, groups, x, x_stride, records, acc);
#pragma GCC unroll 8
  for (size_t i = 0; i < G; ++i) {
#pragma GCC unroll 8
    for (size_t c = 0; c < C; ++c) _mm512_storeu_ps(y[i] + c * y_stride, acc[i][c]);
  }
}

// The groups of kUnits units of L::kRows rows (their indices), one column.
template <typename L, size_t kUnits>
void decode_units(const DotTile& t, size_t n_sb, size_t records, const size_t (&units)[kUnits]) {
  constexpr size_t kUnitGroups = L::kRows / kGroupRows;
  constexpr size_t kG = kUnits * kUnitGroups;
  size_t groups[kG];
  float* y[kG];
  for (size_t i = 0; i < kG; ++i) {
    groups[i] = units[i / kUnitGroups] * kUnitGroups + i % kUnitGroups;
    y[i] = t.y + groups[i] * kGroupRows;
  }
  group_kernel<L, kG, 1>(t.w, n_sb, groups, t.x, t.x_stride, records, y, t.y_stride);
}

// Decode: L::kStreams far-apart units of L::kRows rows side by side (their own sequential streams
// in the out-of-order window), then the units left over one at a time. A unit's groups (two where
// a unit pairs them) run together, so each stream reads its bytes in order (one group at a time
// read every other half of Q6_K's pair units). Not inlined into dot: GCC allocated the two
// drivers' kernels together and spilled (1157 stack operands in dot<Q6K>).
template <typename L>
[[gnu::noinline]] void decode(const DotTile& t, size_t n_sb, size_t records) {
  constexpr size_t kStreams = L::kStreams;
  const size_t n_units = t.n_rows / L::kRows;
  const size_t part = n_units / kStreams;
  for (size_t u = 0; u < part; ++u) {
    size_t units[kStreams];
    for (size_t p = 0; p < kStreams; ++p) units[p] = p * part + u;
    decode_units<L>(t, n_sb, records, units);
  }
  for (size_t u = kStreams * part; u < n_units; ++u) {
    const size_t units[1] = {u};
    decode_units<L>(t, n_sb, records, units);
  }
}

template <typename L>
void dot(const DotTile& t) {
  const size_t n_sb = t.k / kQK;
  const size_t n_groups = t.n_rows / kGroupRows;
  const size_t records = records_offset(t.k);
  if (t.n_cols == 1) {
    decode<L>(t, n_sb, records);
    return;
  }
  for (size_t g0 = 0; g0 < n_groups; g0 += kGroupsPerPass) {
    const size_t groups = n_groups - g0 < kGroupsPerPass ? n_groups - g0 : kGroupsPerPass;
    simd::for_column_blocks<L::kMaxColumns>(t.n_cols, [&]<size_t C>(size_t c) {
      for (size_t g = g0; g < g0 + groups; ++g) {
        const size_t group[1] = {g};
        float* y[1] = {t.y + c * t.y_stride + g * kGroupRows};
        group_kernel<L, 1, C>(t.w, n_sb, group, t.x + c * t.x_stride, t.x_stride, records, y,
                              t.y_stride);
      }
    });
  }
}

// The stored rows' F32-activation product, which dot_f32 runs on the rows restored to their
// stored order (so the F32 path gives the same bits interleaved or not). Set by fill.
template <typename L>
DotTileFn& stored_dot_f32() {
  static DotTileFn fn = nullptr;
  return fn;
}

template <typename L>
void dot_f32(const DotTile& t) {
  const size_t n_sb = t.k / kQK;
  const size_t row_bytes = n_sb * L::kBlockBytes;
  uint8_t* rows = thread_scratch(L::kRows * row_bytes);
  for (size_t p = 0; p < t.n_rows / L::kRows; ++p) {
    const uint8_t* units = t.w + p * n_sb * kUnitBytes<L>;
    for (size_t r = 0; r < L::kRows; ++r) stored_row<L>(units, n_sb, r, rows + r * row_bytes);
    DotTile stored = t;
    stored.w = rows;
    stored.w_stride = row_bytes;
    stored.n_rows = L::kRows;
    stored.y = t.y + p * L::kRows;
    stored_dot_f32<L>()(stored);
  }
}

template <typename L>
void fill(KernelTable& table) {
  WeightKernels& w = table.weights[static_cast<uint32_t>(L::kType)];
  stored_dot_f32<L>() = w.dot_f32;
  InterleavedKernels& k = w.interleaved;
  k.rows = L::kRows;
  k.bits = InterleavedKernels::Bits::kReference;
  k.interleave = interleave<L>;
  k.prepare = L::prepare;
  k.prepared_bytes = prepared_bytes<L>;
  k.dot = dot<L>;
  k.dot_f32 = dot_f32<L>;
  k.dequantize_row = dequantize_row<L>;
}

}  // namespace
}  // namespace synapse::avx512::interleaved_k
